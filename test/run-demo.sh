#!/usr/bin/env bash
# make run: build, install into ./tmp, start a throwaway cluster, create the
# extension and play examples/demo.sql.  The cluster is stopped afterwards
# unless KEEP=1, which leaves it running and prints how to connect.
source "$(dirname "$0")/lib.sh"

rl_ensure_packages
rl_choose_tmp
rl_install
rl_start
[ "${KEEP:-0}" = 1 ] || trap rl_stop_quietly EXIT

"$RL_BIN/psql" -X -q -c 'CREATE EXTENSION IF NOT EXISTS ratelimit'
"$RL_BIN/psql" -X -q -e -f "$RL_REPO/examples/demo.sql" 2>&1 || true

if [ "${KEEP:-0}" = 1 ]; then
	rl_log "cluster left running; connect with: $RL_BIN/psql -h $RL_SOCK -p $RL_PORT -U postgres"
	rl_log "stop it with: make stop"
fi
