#!/usr/bin/env bash
# make bench-wait: how fair rl_limit(..., wait => interval) is between
# waiters of one key.  Waiters are not queued: each sleeps until its
# retry_after and the first to take the token has it.  This measures what
# that gives: N clients (default 8) call one key of R tokens a second
# (default 50, capacity 1) as fast as they can, each call waiting up to
# 2 s, for S seconds (default 20), once on the table store and once on the
# memory store.  Per store: the grants each client got (min, max, Jain's
# fairness index, 1 = perfectly even), the calls that ran out of wait, and
# the latency of every call (p50, p99, max).  The limit's rate bounds
# the total: R x S grants, whatever the clients do.
#
# Its own throwaway cluster; pgbench, prepared, one transaction per call.
#   RL_BENCH_WAIT_CLIENTS, RL_BENCH_WAIT_RATE, RL_BENCH_WAIT_SECONDS
#   RL_BENCH_INSTALLED=1  skip the build
source "$(dirname "$0")/../lib.sh"
clients=${RL_BENCH_WAIT_CLIENTS:-8}
rate=${RL_BENCH_WAIT_RATE:-50}
seconds=${RL_BENCH_WAIT_SECONDS:-20}

rl_ensure_packages
rl_choose_tmp
trap rl_stop_quietly EXIT
if [ -z "${RL_BENCH_INSTALLED:-}" ]; then rl_install >/dev/null; fi
rl_start

out=$RL_TMP/bench-wait
rm -rf "$out"
mkdir -p "$out"
if rl_is_root; then chown postgres: "$out"; fi

"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE EXTENSION ratelimit;
SELECT rl_define('fair_table', 'token bucket', $rate, '1 second', capacity => 1);
SELECT rl_define('fair_memory', 'token bucket', $rate, '1 second', capacity => 1,
	storage => 'memory');
CREATE TABLE fair_log (store text, client int, ok boolean);
CREATE TABLE fair_lat (store text, ms float8);
SQL

printf '%-7s %7s %7s %6s %6s %6s %8s %8s %8s %8s\n' store clients grants min max jain "no wait" "p50 ms" "p99 ms" "max ms"
for store in table memory; do
	cat >"$out/$store.sql" <<SQL
INSERT INTO fair_log (store, client, ok)
SELECT '$store', :client_id, ok FROM rl_limit('fair_$store', 'k', wait => '2 seconds');
SQL
	# -l: one line per call: client, transaction, latency (us), ...
	(cd "$out" && rl_as_server "$RL_BIN/pgbench" -n -M prepared -c "$clients" -j 2 \
		-T "$seconds" -f "$out/$store.sql" -l --log-prefix="$out/$store" \
		>"$out/$store.pgbench" 2>&1) || { cat "$out/$store.pgbench"; exit 1; }
	# latencies of every call, from pgbench's log (third field, us)
	cat "$out/$store".[0-9]* | awk '{ print $3 / 1000 }' >"$out/$store.ms"
	"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 \
		-c "CREATE TEMP TABLE x (ms float8)" \
		-c "\\copy x FROM '$out/$store.ms'" \
		-c "INSERT INTO fair_lat SELECT '$store', ms FROM x"
	"$RL_BIN/psql" -X -At -F ' ' -v ON_ERROR_STOP=1 <<SQL
WITH per AS (
	SELECT client, count(*) FILTER (WHERE ok) AS grants
	FROM fair_log WHERE store = '$store' GROUP BY client),
lat AS (
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
		percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99,
		max(ms) AS mx
	FROM fair_lat WHERE store = '$store')
SELECT format('%-7s %7s %7s %6s %6s %6s %8s %8s %8s %8s', '$store',
	(SELECT count(*) FROM per), (SELECT sum(grants) FROM per),
	(SELECT min(grants) FROM per), (SELECT max(grants) FROM per),
	(SELECT round((sum(grants)^2 / (count(*) * sum(grants^2)))::numeric, 3) FROM per),
	(SELECT count(*) FILTER (WHERE NOT ok) FROM fair_log WHERE store = '$store'),
	round(p50::numeric, 1), round(p99::numeric, 1), round(mx::numeric, 1))
FROM lat;
SQL
done
"$RL_BIN/psql" -X -At -v ON_ERROR_STOP=1 -c \
	"SELECT 'rl_stats: ' || string_agg(name || ' granted ' || granted || ', refused ' || refused, '; ' ORDER BY name) FROM rl_stats WHERE name LIKE 'fair%'"
echo "(the rate bounds the grants: $rate a second for $seconds s is $((rate * seconds)), plus the first token)"
