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

rl_log "packaging (META.json, changelog, scripts)"
"$RL_REPO/test/packaging/check.sh" || failed+=(packaging)

rl_log "unit tests of the algebra"
make -C "$RL_REPO" -s unit || failed+=(unit)

rl_start
CONNECT="--host=$RL_SOCK --port=$RL_PORT --user=postgres"

rl_log "regression suites (pg_regress)"
rm -f "$RL_REPO/regression.diffs"
if ! make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" installcheck ISOLATION= \
	EXTRA_REGRESS_OPTS="$CONNECT"; then
	failed+=(regress)
	[ -f "$RL_REPO/regression.diffs" ] && cat "$RL_REPO/regression.diffs"
fi

rl_log "isolation specs (pg_isolation_regress)"
rm -f "$RL_REPO/output_iso/regression.diffs"
if ! PGISOLATIONTIMEOUT=60 make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" installcheck REGRESS= \
	EXTRA_REGRESS_OPTS="$CONNECT"; then
	failed+=(isolation)
	[ -f "$RL_REPO/output_iso/regression.diffs" ] && cat "$RL_REPO/output_iso/regression.diffs"
fi

# The SQL path (storage.c through SPI) must stay correct for engines the
# direct path does not serve: the same suites again with it forced.
rl_log "regression suites and isolation specs again on the SQL path (ratelimit.direct_access = off)"
rm -f "$RL_REPO/regression.diffs" "$RL_REPO/output_iso/regression.diffs"
if ! PGOPTIONS="-c ratelimit.direct_access=off" PGISOLATIONTIMEOUT=60 \
	make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" installcheck \
	EXTRA_REGRESS_OPTS="$CONNECT"; then
	failed+=(sql-path)
	cat "$RL_REPO/regression.diffs" "$RL_REPO/output_iso/regression.diffs" 2>/dev/null || true
fi

rl_log "examples"
"$RL_REPO/test/run-examples.sh" || failed+=(examples)

rl_log "stress test (pgbench, 16 clients)"
"$RL_REPO/test/stress/stress.sh" || failed+=(stress)

rl_log "hostile input at random (targeted calls, sqlsmith)"
"$RL_REPO/test/fuzz/run.sh" || failed+=(fuzz)

rl_stop_quietly

rl_log "TAP tests (crash recovery, dump and restore, the pg_cron recipe, the PL/Proxy router)"
tap=$RL_TMP/tap
rm -rf "$tap"
mkdir -p "$tap"
if rl_is_root; then chown postgres: "$tap"; fi
pgxs=$(dirname "$RL_BIN")/lib/pgxs
if ! (cd "$RL_REPO" && rl_as_server env PATH="$RL_BIN:$PATH" TESTDIR="$tap" \
	PG_REGRESS="$pgxs/src/test/regress/pg_regress" \
	prove -I "$pgxs/src/test/perl" test/t/*.pl); then
	failed+=(tap)
	cat "$tap"/tmp_check/log/regress_log_* 2>/dev/null | tail -50
fi

if [ ${#failed[@]} -gt 0 ]; then
	rl_log "FAILED: ${failed[*]}"
	exit 1
fi
rl_log "all suites passed"
