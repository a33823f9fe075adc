#!/usr/bin/env bash
# rl_settle's ledger under load, against the cluster run-tests.sh started:
# 8 sessions make RL_SETTLE_CALLS (default 100,000) random calls on an
# estimate, each granted one settled on a random actual cost, under a
# pinned clock (no refill), on three runs: the table store on the direct
# path, the memory store, and the table store on the SQL path.  Each run
# has a limit of capacity 1e9 (no bound is hit) and one of 2,000 (keys go
# into debt, and settlements reach the bound), both with max_debt 50.
# Every key must hold its capacity less the actual costs charged, exactly;
# no call may be admitted at a balance of 0 or below, and no call or
# settlement may take a key below -50.
source "$(dirname "$0")/../lib.sh"
rl_choose_tmp
here=$RL_REPO/test/stress
db=ratelimit_settle
calls=${RL_SETTLE_CALLS:-100000}

"$RL_BIN/dropdb" --if-exists "$db"
"$RL_BIN/createdb" "$db"
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
SELECT rl_define('sd_big_t', 'token bucket', 1e9, '1 hour', max_debt => 50);
SELECT rl_define('sd_small_t', 'token bucket', 2000, '1 hour', max_debt => 50);
SELECT rl_define('sd_big_m', 'token bucket', 1e9, '1 hour', max_debt => 50, storage => 'memory');
SELECT rl_define('sd_small_m', 'token bucket', 2000, '1 hour', max_debt => 50, storage => 'memory');
SELECT rl_define('sd_big_s', 'token bucket', 1e9, '1 hour', max_debt => 50);
SELECT rl_define('sd_small_s', 'token bucket', 2000, '1 hour', max_debt => 50);
CREATE TABLE settle_log (lim text, k int, ok boolean, remaining float8,
	est float8, act float8, value float8, unsettled float8);
-- one call and, when granted, its settlement; logged in the same transaction
CREATE FUNCTION settle_call(lim text, k int, est float8, act float8)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	r rl_result;
	s record;
BEGIN
	r := rl_limit(lim, k::text, est);
	IF r.ok THEN
		SELECT * INTO s FROM rl_settle(lim, k::text, est, act);
		INSERT INTO settle_log VALUES (lim, k, true, r.remaining, est, act,
			s.value, s.unsettled);
	ELSE
		INSERT INTO settle_log VALUES (lim, k, false, r.remaining, est, act,
			NULL, 0);
	END IF;
END
$$;
SQL

for run in t:on m:on s:off; do
	out=$(PGOPTIONS="-c ratelimit.now_override=2026-01-01T00:00:00Z -c ratelimit.direct_access=${run#*:}" \
		"$RL_BIN/pgbench" -n -c 8 -j 2 -t $((calls / 8)) -D run="${run%%:*}" \
		-f "$here/settle.sql" "$db" 2>&1) || { echo "$out" >&2; exit 1; }
	if grep -q 'number of failed transactions: [1-9]' <<<"$out"; then
		grep 'failed' <<<"$out" >&2
		rl_log "settle: FAILED (run ${run%%:*})"
		exit 1
	fi
done

result=$("$RL_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -v calls=$((calls / 8 * 8)) -d "$db" \
	-f "$here/settle_check.sql")
[ -n "${RL_SETTLE_KEEP:-}" ] || "$RL_BIN/dropdb" "$db"
if grep -v '|t$' <<<"$result" | grep -q .; then
	echo "$result" >&2
	rl_log "settle: FAILED"
	exit 1
fi
rl_log "settle: $((calls / 8 * 8)) calls on each store and path, settled under load: every key at capacity less the costs charged, exactly; nothing admitted at 0 or below; no key below -max_debt"
