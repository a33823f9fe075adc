#!/usr/bin/env bash
# The permits stress test, against the cluster run-suites.sh started: 16
# pgbench clients share a concurrency limit of 4 permits.  Each takes a
# permit (waiting if need be), records the interval it holds it in a
# table, sleeps 5 ms and commits.  At no instant may more than 4 recorded
# intervals overlap; the share of the run during which all 4 permits were
# in use is printed (0.55 to 0.61 on an idle 2-core machine; the recorded
# intervals leave out the round trips around each holding) and must be
# over a quarter, which a loaded machine still reaches.  A second, shorter
# run redefines the limit meanwhile, again and again: undefined and defined
# again with 2 permits (in one transaction), then raised back to 4; at no
# instant may more intervals overlap than the limit then in force.
source "$(dirname "$0")/../lib.sh"
rl_choose_tmp
here=$RL_REPO/test/stress
db=ratelimit_permits
psql=("$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db")

"$RL_BIN/dropdb" --if-exists "$db"
"$RL_BIN/createdb" "$db"
"${psql[@]}" >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
SELECT rl_define_concurrency('pool', 4);
CREATE TABLE held (run int, lo timestamptz, hi timestamptz);
CREATE TABLE refused (n int);
-- the limit in force from at on
CREATE TABLE limits (at timestamptz, permits int);
INSERT INTO limits VALUES ('-infinity', 4);
SQL

"$RL_BIN/pgbench" -n -c 16 -j 2 -t 60 -D run=1 -f "$here/permits.sql" "$db" >/dev/null || exit 1

# The second run.  A lowering is recorded after it commits, a raise before
# it starts, so the limit of 2 is checked over less than the time it was
# in force.
"$RL_BIN/pgbench" -n -c 16 -j 2 -t 30 -D run=2 -f "$here/permits.sql" "$db" >/dev/null &
bench=$!
redefinitions=0
while kill -0 "$bench" 2>/dev/null; do
	"${psql[@]}" >/dev/null \
		-c "BEGIN; SELECT rl_undefine('pool'); SELECT rl_define_concurrency('pool', 2); COMMIT;" \
		-c "INSERT INTO limits VALUES (clock_timestamp(), 2)"
	sleep 0.05
	"${psql[@]}" >/dev/null \
		-c "INSERT INTO limits VALUES (clock_timestamp(), 4)" \
		-c "SELECT rl_define_concurrency('pool', 4)"
	redefinitions=$((redefinitions + 1))
	sleep 0.05
done
wait "$bench" || exit 1

out=$("${psql[@]}" -f "$here/permits_check.sql" | sed '/^$/d')
"$RL_BIN/dropdb" "$db"
echo "$out" | sed 's/^/   /' >&2
echo "   permits: redefinitions during the second run|$redefinitions" >&2
holders=$(echo "$out" | sed -n 's/^permits: holders recorded|//p')
most=$(echo "$out" | sed -n 's/^permits: most overlapping|//p')
over=$(echo "$out" | sed -n 's/^permits: most over the limit in force|//p')
share=$(echo "$out" | sed -n 's/^permits: share of the first run with all 4 in use|//p')
if [ "$holders" != 1440 ] || [ "$most" != 4 ] || [ "$over" -gt 0 ] ||
	[ "$redefinitions" -lt 1 ] ||
	! awk -v s="$share" 'BEGIN { exit !(s > 0.25) }'; then
	rl_log "permits stress: FAILED (holders $holders of 1440, at most $most overlapping, $over over the limit in force, $redefinitions redefinitions, all 4 in use $share of the time)"
	exit 1
fi
rl_log "permits stress: 1440 holders, never more than 4 at once, all 4 in use $share of the time; never over the limit in force through $redefinitions redefinitions"
