#!/usr/bin/env bash
# make test: build, install into ./tmp, start a throwaway cluster, run every
# suite, stop the cluster.  Exits non-zero when any suite fails.
source "$(dirname "$0")/lib.sh"

rl_ensure_packages
rl_choose_tmp
trap rl_stop_quietly EXIT

STRICT="-Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare"
RL_CFLAGS=$STRICT rl_install

failed=()

rl_log "unit tests of the algebra"
make -C "$RL_REPO" -s unit || failed+=(unit)

rl_start
rl_log "regression suites (pg_regress)"
if ! make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" installcheck \
	EXTRA_REGRESS_OPTS="--host=$RL_SOCK --port=$RL_PORT --user=postgres"; then
	failed+=(regress)
	[ -f "$RL_REPO/regression.diffs" ] && cat "$RL_REPO/regression.diffs"
fi

rl_stop_quietly
if [ ${#failed[@]} -gt 0 ]; then
	rl_log "FAILED: ${failed[*]}"
	exit 1
fi
rl_log "all suites passed"
