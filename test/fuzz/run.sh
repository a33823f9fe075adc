#!/usr/bin/env bash
# Hostile input at random, against a database where the extension lives in
# its own schema:
#  1. calls.sql: 4,000 calls of every rl_ function with arguments drawn from
#     hostile pools, as the superuser; no internal error (XX000) and no
#     non-finite state may come out of it;
#  2. sqlsmith, as an unprivileged role, for a bounded number of random
#     queries (it rarely reaches the rl_ functions; the count is printed).
# A server process dying in either fails the test.
source "$(dirname "$0")/../lib.sh"
rl_choose_tmp
here=$RL_REPO/test/fuzz
db=ratelimit_fuzz
role=ratelimit_fuzzer
queries=${RL_FUZZ_QUERIES:-2000}
log=$RL_LOGDIR/postgresql.log
psql=("$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1)

"$RL_BIN/dropdb" --if-exists "$db" 2>/dev/null
"${psql[@]}" -c "DROP ROLE IF EXISTS $role" -c "CREATE ROLE $role LOGIN" 2>/dev/null
"$RL_BIN/createdb" "$db"
"${psql[@]}" -d "$db" >/dev/null <<SQL
CREATE SCHEMA ratelimit;
CREATE EXTENSION ratelimit SCHEMA ratelimit;
SET search_path = public, ratelimit;
SELECT rl_define('tb', 'token bucket', 10, '1 minute', max_reserved => 5);
SELECT rl_define('fw', 'fixed window', 5, '1 hour');
SELECT rl_define('mem', 'token bucket', 10, '1 minute', max_reserved => 5, storage => 'memory');
SELECT rl_define('esc', 'token bucket', 2, '1 minute', block_for => '1 second',
	block_factor => 3, block_max => '1 hour', block_horizon => '1 minute');
SELECT rl_define('escm', 'fixed window', 2, '1 minute', block_for => '1 second',
	block_factor => 3, storage => 'memory');
SELECT rl_define('debt', 'token bucket', 10, '1 minute', max_debt => 5);
SELECT rl_define('debtm', 'fixed window', 10, '1 minute', max_debt => 5, storage => 'memory');
SELECT rl_limit('tb', k) FROM generate_series(1, 50) AS k;
SELECT rl_limit('fw', k::text) FROM generate_series(1, 50) AS k;
GRANT USAGE ON SCHEMA ratelimit TO $role;
ALTER ROLE $role SET statement_timeout = '2s';
ALTER DATABASE $db SET search_path = public, ratelimit;
ALTER DATABASE $db SET track_functions = 'all';
SQL

before=$(wc -l <"$log")
status=0

"${psql[@]}" -d "$db" -f "$here/calls.sql" >"$RL_TMP/fuzz-calls.out" 2>&1 || status=1
if ! grep -A2 'internal_errors' "$RL_TMP/fuzz-calls.out" | grep -qx ' *0' ||
	! grep -A2 'non_finite_state' "$RL_TMP/fuzz-calls.out" | grep -qx ' *0'; then
	cat "$RL_TMP/fuzz-calls.out"
	rl_log "fuzz: random calls produced an internal error or non-finite state"
	status=1
fi

# sqlsmith's own exit status says nothing about the server; the log does.
timeout 120 sqlsmith --target="host=$RL_SOCK port=$RL_PORT dbname=$db user=$role" \
	--seed=42 --max-queries="$queries" >"$RL_TMP/sqlsmith.out" 2>&1 || true
sleep 1	# let the statistics catch up
calls=$("$RL_BIN/psql" -X -At -d "$db" -c \
	"SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname LIKE 'rl\_%'")

crashes=$(tail -n +"$((before + 1))" "$log" | grep -c "terminated by signal" || true)
"$RL_BIN/dropdb" "$db"
"${psql[@]}" -c "DROP ROLE $role"
if [ "$crashes" != 0 ]; then
	tail -n +"$((before + 1))" "$log" | grep -B2 -A8 "terminated by signal" | head -60
	rl_log "fuzz: the server crashed $crashes time(s)"
	status=1
fi
[ $status = 0 ] && rl_log "fuzz: 4,000 hostile rl_ calls and $queries sqlsmith queries ($calls rl_ calls completed), no crash"
exit $status
