#!/usr/bin/env bash
# The permits stress test, against the cluster run-suites.sh started: 16
# pgbench clients share a concurrency limit of 4 permits.  Each takes a
# permit (waiting if need be), records the interval it holds it in a
# table, sleeps 5 ms and commits.  At no instant may more than 4 recorded
# intervals overlap; the share of the run during which all 4 permits were
# in use is printed (0.55 to 0.61 on an idle 2-core machine; the recorded
# intervals leave out the round trips around each holding) and must be
# over a quarter, which a loaded machine still reaches.
source "$(dirname "$0")/../lib.sh"
rl_choose_tmp
here=$RL_REPO/test/stress
db=ratelimit_permits

"$RL_BIN/dropdb" --if-exists "$db"
"$RL_BIN/createdb" "$db"
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
SELECT rl_define_concurrency('pool', 4);
CREATE TABLE held (lo timestamptz, hi timestamptz);
CREATE TABLE refused (n int);
SQL

"$RL_BIN/pgbench" -n -c 16 -j 2 -t 60 -f "$here/permits.sql" "$db" >/dev/null || exit 1
out=$("$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$here/permits_check.sql" | sed '/^$/d')
"$RL_BIN/dropdb" "$db"
echo "$out" | sed 's/^/   /' >&2
holders=$(echo "$out" | sed -n 's/^permits: holders recorded|//p')
most=$(echo "$out" | sed -n 's/^permits: most overlapping|//p')
share=$(echo "$out" | sed -n 's/^permits: share of the run with all 4 in use|//p')
if [ "$holders" != 960 ] || [ "$most" != 4 ] ||
	! awk -v s="$share" 'BEGIN { exit !(s > 0.25) }'; then
	rl_log "permits stress: FAILED (holders $holders of 960, at most $most overlapping, all 4 in use $share of the time)"
	exit 1
fi
rl_log "permits stress: 960 holders, never more than 4 at once, all 4 in use $share of the time"
