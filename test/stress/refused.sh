#!/usr/bin/env bash
# rl_refused under contention, against the cluster run-tests.sh started:
# 8 sessions refuse the same 4 keys of a table limit, a memory limit and a
# limit with block_for at once (pgbench, 200 transactions each, on each
# path), plus a refused rl_check of one key per transaction.  Every key
# must show exactly the refusals made, with error 0, and each limit's sums
# must equal rl_stats' refused + check_refused and blocks.  It empties
# rl_stats and rl_refused first (rl_stats_reset()), so that names refused
# by earlier suites in this window take no room.
source "$(dirname "$0")/../lib.sh"
rl_choose_tmp
here=$RL_REPO/test/stress
db=ratelimit_refused

"$RL_BIN/dropdb" --if-exists "$db"
"$RL_BIN/createdb" "$db"
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
SELECT rl_define('rf_table', 'token bucket', 1, '1 year');
SELECT rl_define('rf_memory', 'token bucket', 1, '1 year', storage => 'memory');
SELECT rl_define('rf_block', 'token bucket', 1, '1 year', block_for => '1 year');
-- each key's one token taken: every call from now on is refused
SELECT count(*) FROM unnest(ARRAY['rf_table', 'rf_memory', 'rf_block']) l,
	unnest(ARRAY['k1', 'k2', 'k3', 'k4']) k, LATERAL rl_limit(l, k) r
WHERE r.ok;
SELECT rl_stats_reset();
SQL
for path in on off; do
	PGOPTIONS="-c ratelimit.direct_access=$path" \
		"$RL_BIN/pgbench" -n -c 8 -j 2 -t 200 -f "$here/refused.sql" "$db" >/dev/null
done
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$here/refused_check.sql" | sed '/^$/d' >"$RL_TMP/refused.out"
"$RL_BIN/dropdb" "$db"
if ! diff -u "$here/refused.expected" "$RL_TMP/refused.out"; then
	rl_log "refused stress: FAILED"
	exit 1
fi
rl_log "refused stress: 8 sessions refusing 12 keys at once, on both paths: every key's refusals exact in rl_refused, and its sums equal rl_stats'"
