#!/usr/bin/env bash
# The stress test, against the cluster run-tests.sh started: 16 sessions
# hammer one key whose capacity is 500 and whose refill is negligible
# (one token a year), and must be granted exactly 500 times; then
# 16 sessions call 1,000 keys of capacity 3 under a pinned clock, and every
# key must be granted exactly min(calls, 3); then 16 sessions call the same
# brand-new key of capacity 3 together, a new one every 2 ms, so that first
# calls race to insert its row (some lose after their pre-check, and their
# speculative insertion is killed), with a second unique index on the
# key's columns, and the same verdict; then the same with a two-shard
# limit of 4 and calls of 3, so that every first call creates both shards
# (granted exactly once per key, and no deadlock); then 24 sessions mix
# calls, refunds, rl_gc and rl_limit_all on a few keys of 2 to 4 shards,
# with no failed transaction (no deadlock); then 12 sessions call one key
# of 8 shards twice per transaction, on each path, with no failed
# transaction (no deadlock); then, with fillfactor 100 and a
# snapshot held open, 8 sessions call 200 keys of 480 bytes, so that most
# updates are not HOT and need new index entries, and every key must hold
# exactly capacity minus its calls; then, in the memory store, 16
# sessions call a key of capacity 500 and 200 keys of capacity 3 under a
# pinned clock, a quarter of them rolling back and a quarter rolling back
# to a savepoint, and the committed grants must be exactly 500 on the one
# key and, on every key, its capacity less what its state holds (never
# more than the capacity), the rolled-back grants having returned their
# tokens.  amcheck then checks the state table and its index.  Last,
# settle.sh: 8 sessions settle 100,000 calls on each store and path.
source "$(dirname "$0")/../lib.sh"
rl_choose_tmp
here=$RL_REPO/test/stress
db=ratelimit_stress

"$RL_BIN/dropdb" --if-exists "$db"
"$RL_BIN/createdb" "$db"
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
CREATE EXTENSION amcheck;
SELECT rl_define('hot', 'token bucket', 1, '1 year', capacity => 500);
SELECT rl_define('many', 'token bucket', 3, '1 minute');
CREATE TABLE grants (n int);
CREATE TABLE calls (key int, ok boolean);
SELECT rl_define('fresh', 'token bucket', 3, '1 minute');
CREATE TABLE fresh_calls (key bigint, ok boolean);
SELECT rl_define('pair', 'token bucket', 4, '1 minute', shards => 2);
CREATE TABLE pair_calls (key bigint, ok boolean);
SELECT rl_define('m2', 'token bucket', 1, '1 year', capacity => 20, shards => 2);
SELECT rl_define('m3', 'token bucket', 1, '1 year', capacity => 30, shards => 3);
SELECT rl_define('m4', 'token bucket', 1, '1 year', capacity => 40, shards => 4);
SELECT rl_define('s8', 'token bucket', 1000000000, '1 hour', shards => 8);
SELECT rl_define('long', 'token bucket', 1000, '1 day', capacity => 1000000);
CREATE TABLE long_calls (key int);
SELECT rl_define('mhot', 'token bucket', 1, '1 year', capacity => 500, storage => 'memory');
SELECT rl_define('mmany', 'token bucket', 3, '1 minute', storage => 'memory');
CREATE TABLE mem_grants (n int);
CREATE TABLE mem_calls (key text, ok boolean);
CREATE SEQUENCE mem_rolled_back;
SQL

"$RL_BIN/pgbench" -n -c 16 -j 2 -t 100 -f "$here/hot.sql" "$db" >/dev/null
PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z" \
	"$RL_BIN/pgbench" -n -c 16 -j 2 -t 400 -f "$here/many.sql" "$db" >/dev/null
# with a second unique index on the key's columns, which INSERT ... ON
# CONFLICT (name, key, shard) takes as an arbiter too: a call that loses the
# race must find the winner's row, not raise 23505 from that index
"$RL_BIN/psql" -X -q -d "$db" -c "CREATE UNIQUE INDEX fresh_same_columns ON rate_limits (shard, key, name)"
PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z" \
	"$RL_BIN/pgbench" -n -c 16 -j 2 -T 5 -f "$here/fresh.sql" "$db" >/dev/null
"$RL_BIN/psql" -X -q -d "$db" -c "DROP INDEX fresh_same_columns"
# pgbench counts a deadlock (40P01) as a failed transaction, not an error
out=$(PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z" \
	"$RL_BIN/pgbench" -n -c 16 -j 2 -T 5 -f "$here/fresh_pair.sql" "$db" 2>&1)
if grep -q 'number of failed transactions: [1-9]' <<<"$out"; then
	grep 'failed' <<<"$out" >&2
	rl_log "stress: FAILED (calls creating the shards of a new key failed)"
	exit 1
fi
# calls, refunds, rl_gc and rl_limit_all on a few sharded keys: a call that
# held a shard and created a lower missing one deadlocked with a refund
out=$(PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z -c deadlock_timeout=50ms" \
	"$RL_BIN/pgbench" -n -c 24 -j 2 -T 5 -f "$here/mix_limit.sql@10" \
	-f "$here/mix_refund.sql@6" -f "$here/mix_gc.sql@1" -f "$here/mix_all.sql@3" "$db" 2>&1)
if grep -q 'number of failed transactions: [1-9]' <<<"$out"; then
	grep 'failed' <<<"$out" >&2
	rl_log "stress: FAILED (sharded calls, refunds and rl_gc failed)"
	exit 1
fi
# the same sharded key twice per transaction, nothing refused: the second
# call waited for another shard while holding one, and two such
# transactions deadlocked (40P01), on the SQL path above all
for path in on off; do
	out=$(PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z -c deadlock_timeout=50ms -c ratelimit.direct_access=$path" \
		"$RL_BIN/pgbench" -n -c 12 -j 2 -T 4 -f "$here/twice.sql" "$db" 2>&1)
	if grep -q 'number of failed transactions: [1-9]' <<<"$out"; then
		grep 'failed' <<<"$out" >&2
		rl_log "stress: FAILED (one sharded key twice per transaction, direct_access = $path)"
		exit 1
	fi
done
"$RL_BIN/psql" -X -q -d "$db" -c "ALTER TABLE rate_limits SET (fillfactor = 100)"
# a snapshot held open meanwhile keeps old versions from being pruned, so
# pages fill and most updates must go to another page (not HOT)
"$RL_BIN/psql" -X -q -d "$db" -c "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM long_calls; SELECT pg_sleep(3); COMMIT" >/dev/null &
holder=$!
sleep 0.5
PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z" \
	"$RL_BIN/pgbench" -n -c 8 -j 2 -t 300 -f "$here/long.sql" "$db" >/dev/null
wait "$holder"
# the memory store: takes seen by every session at once, final at commit,
# returned by a rollback or a rollback to a savepoint
PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z" \
	"$RL_BIN/pgbench" -n -c 16 -j 2 -t 150 -f "$here/mem_hot.sql" "$db" >/dev/null
PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z" \
	"$RL_BIN/pgbench" -n -c 16 -j 2 -t 400 -f "$here/mem_many.sql" "$db" >/dev/null

"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$here/check.sql" | sed '/^$/d' >"$RL_TMP/stress.out"
"$RL_BIN/dropdb" "$db"
if ! diff -u "$here/check.expected" "$RL_TMP/stress.out"; then
	rl_log "stress: FAILED"
	exit 1
fi
# rl_settle's ledger: its own database and checks
"$here/settle.sh" || exit 1
rl_log "stress: 1,600 calls on one key granted exactly 500; 6,400 calls on 1,000 keys exact; 16 sessions racing on each new key exact, unsharded and on two shards; sharded calls, refunds and rl_gc mixed without a deadlock; one sharded key twice per transaction without a deadlock, on both paths; 2,400 non-HOT calls on long keys exact; memory store: committed grants exact through rollbacks and savepoints, on one key and 200; amcheck clean"
