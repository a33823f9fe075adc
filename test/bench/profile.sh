#!/usr/bin/env bash
# make profile: where a call's time goes, from perf.  A throwaway cluster
# (the one make bench uses), then one backend at a time recorded with
# `perf record -g` while it runs one of make bench's statements, each
# printed as the functions that take the most time in that backend:
#
#   existing keys  100,000 calls on existing keys in one statement, the
#                  per-call row of make bench (rl_limit('keys', k))
#   new keys       100,000 first calls for keys of a fresh name
#   refused        300,000 calls on a key that refuses every call
#   bare UPDATE    make bench's baseline, bench_bare_update(100000)
#
# For each: the share of the backend's samples of each function and what
# it calls (inclusive, "children"; the frames every statement has above it
# left out), then the functions that spend the most samples themselves
# ("self").  Needs perf (Debian's
# linux-perf, installed when missing) and the right to record the server's
# processes: root, or kernel.perf_event_paranoid <= 1 for the server's own
# user.  make test does not use it.
#
# Knobs: RL_PROFILE_TOP (rows per table, default 25).
source "$(dirname "$0")/../lib.sh"
here=$RL_REPO/test/bench
top=${RL_PROFILE_TOP:-25}

rl_ensure_packages
rl_ensure_packages linux-perf
rl_choose_tmp
trap rl_stop_quietly EXIT
rl_install >/dev/null
rl_start
out=$RL_TMP/profile
rm -rf "$out"
mkdir -p "$out"

"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
SELECT rl_define('keys', 'token bucket', 1e9, '1 second');
SELECT rl_define('refused', 'token bucket', 1, '100 years');
SELECT rl_limit('refused');
SELECT rl_limit('keys', k) FROM generate_series(1, 100000) AS k;
VACUUM ANALYZE;
SQL
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$here/reference.sql" >/dev/null

# frames every backend's stack has above the statement, and the addresses
# perf cannot name: left out of the inclusive tables
generic='0x[0-9a-f]+|main|__libc_start_call_main|__libc_start_main.*|_start|PostmasterMain|ServerLoop|BackendStartup|BackendRun|PostgresMain|exec_simple_query|PortalRun.*|standard_ExecutorRun|ExecutorRun|ExecScan|ExecAgg|ExecProcNode.*|fetch_input_tuple'

# profile NAME STATEMENT: record the backend that runs STATEMENT, then
# print its tables
profile() {
	local name=$1 stmt=$2 pid
	local data=$out/$name.data
	rm -f "$out/pid"
	# the session prints its pid, waits for perf to attach, then runs
	# the statement; psql flushes each result as it comes
	{
		printf 'SELECT pg_backend_pid();\n'
		printf 'SELECT pg_sleep(1.5);\n'
		printf '%s;\n' "$stmt"
	} | "$RL_BIN/psql" -X -At -v ON_ERROR_STOP=1 -o "$out/pid" >/dev/null &
	local psql_pid=$!
	for _ in $(seq 100); do
		pid=$(head -n 1 "$out/pid" 2>/dev/null || true)
		[ -n "$pid" ] && break
		sleep 0.05
	done
	[ -n "$pid" ] || rl_die "no backend pid for $name"
	perf record -q -g -p "$pid" -o "$data" >/dev/null 2>&1 &
	local perf_pid=$!
	wait "$psql_pid"
	# the backend exits with its session, and perf with it
	wait "$perf_pid" || true
	printf '\n== %s: %s\n' "$name" "$stmt"
	printf -- '-- inclusive (children), functions at or above 2%%\n'
	perf report -i "$data" --children --stdio -g none --sort symbol \
		--percent-limit 2 2>/dev/null |
		grep -v '^#' | grep -v '^$' | grep -v -E "\] ($generic)\b" |
		sed -E 's/[[:space:]]+-[[:space:]]+-[[:space:]]*$//' | head -n "$top"
	printf -- '-- self\n'
	perf report -i "$data" --no-children --stdio -g none --sort symbol \
		--percent-limit 1 2>/dev/null |
		grep -v '^#' | grep -v '^$' |
		sed -E 's/[[:space:]]+-[[:space:]]+-[[:space:]]*$//' | head -n "$top"
}

"$RL_BIN/psql" -X -q -c "SELECT rl_define('fresh', 'token bucket', 1e9, '1 second')" >/dev/null
profile "existing keys" "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('keys', k)).ok"
profile "new keys" "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('fresh', k)).ok"
profile "refused" "SELECT count(*) FROM generate_series(1, 300000) AS k WHERE (rl_limit('refused')).ok"
profile "bare UPDATE" "SELECT bench_bare_update(100000)"
