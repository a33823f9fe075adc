#!/usr/bin/env bash
# make bench-memory (also a section of make bench): the memory store's
# figures (issue 25), on a throwaway cluster of its own with the library
# preloaded, fsync = on and synchronous_commit = off (the table store's rows
# then lose at most what Redis's AOF everysec loses; the memory store
# commits nothing either way), and ratelimit.memory_max_keys = 1,000,000.
#
#   C clients: pgbench -M prepared against redis-benchmark, Unix sockets, no
#   pipelining, 8 clients (2 client threads each), random keys among 10,000:
#   rl_limit on a memory limit, on a table limit, SELECT 1, and a Lua token
#   bucket in Redis (external/bucket.lua, loaded once, EVALSHA) with AOF
#   everysec.  RL_BENCH_MEM_ROUNDS interleaved rounds (the order reversed
#   every other round) of RL_BENCH_MEM_SECONDS each; medians.
#   redis-benchmark counts requests, not time: each run asks for as many as
#   the previous run made in that time.
#
#   hot key: 16 clients, memory store, one key (no shards) against random
#   keys among 10,000, in the same rounds.
#
#   long transactions: 4 clients on one key for RL_BENCH_MEM_LONG_SECONDS,
#   without and then with a REPEATABLE READ snapshot held in another
#   session (as pg_dump holds one); the throughput of the last 20 s of each
#   (pgbench --progress).  Memory store, and the table store beside it.
#
#   WAL and transaction ids: 2,000 memory calls, one per transaction; the
#   WAL insert position and the next transaction id (read without taking
#   one) before and after, with autovacuum off for the while.
#
#   memory per key: the size of the shared memory allocation "ratelimit
#   memory store" over ratelimit.memory_max_keys; then 1,000,000 keys of a
#   slowly refilling limit taken at once (none can be dropped), counted in
#   rl_stats_info, and the next new key refused with 53400.
#
#   application shape: external/run.sh with RL_EXT_SHAPES=app at 8 clients,
#   RL_EXT_SECONDS (default 3 here) and RL_EXT_ROUNDS (default the rounds above)
#   (its own durable cluster): INSERT ... WHERE rl_limit on a memory limit
#   against a Redis check (AOF everysec) followed by the INSERT.
#
# It ends with a table of issue 25's targets: figure, target, measured,
# verdict.  Installs redis-tools when missing (for redis-benchmark and
# redis-server, as external/run.sh does), and what external/run.sh installs.
#   RL_BENCH_MEM_ROUNDS (default 3), RL_BENCH_MEM_SECONDS (default 10)
#   RL_BENCH_MEM_LONG_SECONDS (default 60, more than 20)
#   RL_BENCH_MEM_SKIP_EXTERNAL=1  skip the application shape
#   RL_BENCH_INSTALLED=1  skip the build (make bench has just done it)
source "$(dirname "$0")/../lib.sh"
here=$RL_REPO/test/bench
rounds=${RL_BENCH_MEM_ROUNDS:-3}
seconds=${RL_BENCH_MEM_SECONDS:-10}
long=${RL_BENCH_MEM_LONG_SECONDS:-60}
window=20
max_keys=1000000
[ "$long" -gt "$window" ] || rl_die "RL_BENCH_MEM_LONG_SECONDS must be more than $window"

rl_ensure_packages
rl_ensure_packages redis-tools
rl_choose_tmp

# redis-server is redis-check-rdb under another name (see external/run.sh)
redis_dir=$RL_TMP/redis-memory
redis_bin=$(command -v redis-server || true)
mkdir -p "$redis_dir"
if [ -z "$redis_bin" ]; then
	ln -sf "$(command -v redis-check-rdb)" "$redis_dir/redis-server"
	redis_bin=$redis_dir/redis-server
fi
redis_pid=
# start_holder and stop_holder: a session holding a snapshot
source "$(dirname "$0")/holder.sh"
# ratio, holds, target_row (a target column of 12)
source "$(dirname "$0")/targets.sh"
target_width=12
stop_all() {
	stop_holder
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	rl_stop_quietly
}
trap stop_all EXIT

if [ -z "${RL_BENCH_INSTALLED:-}" ]; then rl_install >/dev/null; fi
rl_start
q() { "$RL_BIN/psql" -X -At -v ON_ERROR_STOP=1 -c "$1"; }
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
ALTER SYSTEM SET fsync = on;
ALTER SYSTEM SET synchronous_commit = off;
ALTER SYSTEM SET max_connections = 100;
ALTER SYSTEM SET ratelimit.memory_max_keys = $max_keys;
SQL
rl_as_server "$RL_BIN/pg_ctl" -D "$RL_DATA" -l "$RL_LOGDIR/postgresql.log" -w restart >/dev/null
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
-- limits that never run dry during a run: what is measured is the call
SELECT rl_define('mem', 'token bucket', 1e9, '1 second', storage => 'memory');
SELECT rl_define('tab', 'token bucket', 1e9, '1 second');
SELECT count(*) FROM generate_series(1, 10000) AS k WHERE (rl_limit('mem', k)).ok;
SELECT count(*) FROM generate_series(1, 10000) AS k WHERE (rl_limit('tab', k)).ok;
SELECT rl_limit('mem'), rl_limit('tab');
VACUUM ANALYZE;
SQL

# Redis, AOF everysec, on a Unix socket only
rm -rf "$redis_dir/everysec"
mkdir -p "$redis_dir/everysec"
sock=$redis_dir/everysec/redis.sock
cat >"$redis_dir/everysec/redis.conf" <<CONF
port 0
unixsocket $sock
unixsocketperm 700
dir $redis_dir/everysec
logfile $redis_dir/everysec/redis.log
daemonize no
save ""
appendonly yes
appendfsync everysec
CONF
"$redis_bin" "$redis_dir/everysec/redis.conf" &
redis_pid=$!
for _ in $(seq 100); do
	redis-cli -s "$sock" ping >/dev/null 2>&1 && break
	sleep 0.1
done
redis-cli -s "$sock" ping >/dev/null 2>&1 || rl_die "redis-server did not start: see $redis_dir/everysec/redis.log"
sha=$(redis-cli -s "$sock" SCRIPT LOAD "$(cat "$here/external/bucket.lua")")
[[ $sha =~ ^[0-9a-f]{40}$ ]] || rl_die "SCRIPT LOAD answered: $sha"
# EVALSHA sha 1 key rate capacity count keep_ms: a bucket that never runs dry
redis_call=(EVALSHA "$sha" 1 "key:__rand_int__" 1e9 1e9 1 3600000)
[ "$(redis-cli -s "$sock" EVALSHA "$sha" 1 key:check 1e9 1e9 1 3600000 | head -1)" = 1 ] ||
	rl_die "the Lua bucket did not grant its first call"
# every key exists before the runs, as the rows do
redis-benchmark -s "$sock" -c 8 -n 100000 -r 10000 -q "${redis_call[@]}" >/dev/null

# tps of one pgbench run: pgbench_tps FILE CLIENTS [pgbench args]
pgbench_tps() {
	local file=$1 clients=$2 out
	shift 2
	out=$("$RL_BIN/pgbench" -n -M prepared -c "$clients" -j 2 -T "$seconds" \
		-f "$here/$file" "$@" postgres 2>&1) || rl_die "pgbench $file failed: $out"
	printf '%s\n' "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}
# requests per second of one redis-benchmark run of about $seconds seconds
redis_n=$((20000 * seconds))
redis_tps() {
	local rps
	rps=$(redis-benchmark -s "$sock" -c 8 --threads 2 -n "$redis_n" -r 10000 --csv "${redis_call[@]}" |
		tail -1 | cut -d, -f2 | tr -d '"')
	redis_n=$(awk -v r="$rps" -v s="$seconds" 'BEGIN { printf "%d", r * s }')
	printf '%s\n' "$rps"
}

declare -A runs
measure() {
	local name=$1
	shift
	runs[$name]+="$("$@") "
}
med() {
	printf '%s\n' ${runs[$1]} | sort -g | sed -n "$(((rounds + 1) / 2))p"
}

# a first, shorter redis-benchmark run sets how many requests fill $seconds
redis_n=$((20000 * 2))
seconds_=$seconds seconds=2
redis_tps >/dev/null
seconds=$seconds_

for ((round = 0; round < rounds; round++)); do
	rl_log "memory store: round $((round + 1)) of $rounds (${seconds}s runs)"
	order="mem tab sel1 redis mhot16 mkeys16"
	((round % 2)) && order="mkeys16 mhot16 redis sel1 tab mem"
	for m in $order; do
		case $m in
		mem) measure mem pgbench_tps keys10k.sql 8 -D limit=mem ;;
		tab) measure tab pgbench_tps keys10k.sql 8 -D limit=tab ;;
		sel1) measure sel1 pgbench_tps select1.sql 8 ;;
		redis) measure redis redis_tps ;;
		mhot16) measure mhot16 pgbench_tps hot.sql 16 -D limit=mem ;;
		mkeys16) measure mkeys16 pgbench_tps keys10k.sql 16 -D limit=mem ;;
		esac
	done
done
# redis-benchmark counts error replies as requests: there must be none
redis_errors=$(redis-cli -s "$sock" INFO stats | tr -d '\r' | sed -n 's/^total_error_replies://p')
[ "${redis_errors:-1}" = 0 ] || rl_die "Redis answered $redis_errors calls with an error"
mem=$(med mem) tab=$(med tab) sel1=$(med sel1) redis=$(med redis)
mhot16=$(med mhot16) mkeys16=$(med mkeys16)

# WAL bytes and transaction ids per memory call, autovacuum off meanwhile
q "ALTER SYSTEM SET autovacuum = off" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
sleep 1
q "CHECKPOINT" >/dev/null
position() {
	q "SELECT pg_current_wal_insert_lsn() || ' ' || pg_snapshot_xmax(pg_current_snapshot())"
}
read -r lsn0 xid0 <<<"$(position)"
"$RL_BIN/pgbench" -n -M prepared -c 1 -t 2000 -f "$here/keys10k.sql" -D limit=mem postgres >/dev/null 2>&1 ||
	rl_die "the WAL run failed"
read -r lsn1 xid1 <<<"$(position)"
wal_mem=$(q "SELECT round(pg_wal_lsn_diff('$lsn1', '$lsn0') / 2000.0, 1)")
xid_mem=$(awk -v a="$xid0" -v b="$xid1" 'BEGIN { printf "%.2f", (b - a) / 2000 }')
q "ALTER SYSTEM RESET autovacuum" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null

# the mean tps of the last $window progress reports of a $long s run
long_tps() {
	local out
	out=$("$RL_BIN/pgbench" -n -M prepared -c 4 -j 2 -T "$long" -P 1 \
		-f "$here/hot.sql" -D limit="$1" postgres 2>&1) || rl_die "pgbench failed: $out"
	printf '%s\n' "$out" |
		awk -v from=$((long - window)) '$1 == "progress:" && $2 + 0 > from { sum += $4; n++ }
			END { printf "%.0f", (n ? sum / n : 0) }'
}
# Long transactions: each limit without and then with a snapshot held
for lim in mem tab; do
	q "VACUUM rate_limits" >/dev/null
	rl_log "long transactions: $lim, ${long}s without a snapshot held"
	printf -v "long_${lim}_free" '%s' "$(long_tps "$lim")"
	q "VACUUM rate_limits" >/dev/null
	start_holder
	rl_log "long transactions: $lim, ${long}s with a snapshot held"
	printf -v "long_${lim}_held" '%s' "$(long_tps "$lim")"
	stop_holder
done

# Memory per key, and the store filled: a limit that refills 10 tokens an
# hour, so that no entry it takes can be dropped for six minutes
shmem=$(q "SELECT size FROM pg_shmem_allocations WHERE name = 'ratelimit memory store'")
per_key=$(awk -v s="$shmem" -v k="$max_keys" 'BEGIN { printf "%.1f", s / k }')
q "SELECT rl_define('fill', 'token bucket', 10, '1 hour', storage => 'memory')" >/dev/null
fill_start=$(date +%s.%N)
filled=$(q "SELECT count(*) FROM generate_series(1, $max_keys) AS k WHERE (rl_limit('fill', k)).ok")
fill_s=$(awk -v a="$fill_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
keys_held=$(q "SELECT memory_keys FROM rl_stats_info")
over=$("$RL_BIN/psql" -X -At -v VERBOSITY=sqlstate -c "SELECT rl_limit('fill', 'one more')" 2>&1 |
	sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p' || true)

# The application shape, through node-postgres on a durable cluster
stop_all
trap - EXIT
app= app_status=0
if [ -z "${RL_BENCH_MEM_SKIP_EXTERNAL:-}" ]; then
	app_figures=$RL_TMP/bench-memory-app.txt
	rm -f "$app_figures"
	RL_BENCH_INSTALLED=1 RL_EXT_SHAPES=app RL_EXT_CLIENTS=8 RL_EXT_FIGURES_FILE=$app_figures \
		RL_EXT_SECONDS=${RL_EXT_SECONDS:-3} RL_EXT_ROUNDS=${RL_EXT_ROUNDS:-$rounds} \
		"$here/external/run.sh" || app_status=$?
	if [ -f "$app_figures" ]; then
		app=$(awk '$1 == "app_mem_redis" && $2 != "-" { print $2 }' "$app_figures")
	fi
fi

printf '\n%-60s %12s %10s\n' "C clients, 8 clients, 10,000 keys (median of $rounds x ${seconds}s)" "calls/s" "ratio"
printf '%-60s %12.0f %10s\n' "Redis Lua bucket, AOF everysec, EVALSHA (baseline)" "$redis" "1.00"
printf '%-60s %12.0f %10.2f\n' "rl_limit, memory store" "$mem" "$(ratio "$mem" "$redis")"
printf '%-60s %12.0f %10.2f\n' "rl_limit, table store (synchronous_commit off)" "$tab" "$(ratio "$tab" "$redis")"
printf '%-60s %12.0f %10.2f\n' "SELECT 1" "$sel1" "$(ratio "$sel1" "$redis")"
printf '\n%-60s %12s %10s\n' "memory store, 16 clients (median of $rounds x ${seconds}s)" "calls/s" "ratio"
printf '%-60s %12.0f %10s\n' "random keys among 10,000 (baseline)" "$mkeys16" "1.00"
printf '%-60s %12.0f %10.2f\n' "one hot key, no shards" "$mhot16" "$(ratio "$mhot16" "$mkeys16")"
printf '\n%-60s %12s %10s %8s\n' "long transactions, one key, 4 clients (last ${window}s of ${long}s)" "without" "held" "ratio"
printf '%-60s %12s %10s %8.2f\n' "memory store" "$long_mem_free" "$long_mem_held" "$(ratio "$long_mem_held" "$long_mem_free")"
printf '%-60s %12s %10s %8.2f\n' "table store" "$long_tab_free" "$long_tab_held" "$(ratio "$long_tab_held" "$long_tab_free")"
printf '\n%-60s %12s\n' "memory store footprint" "value"
printf '%-60s %12s\n' "shared memory of the store (bytes)" "$shmem"
printf '%-60s %12s\n' "bytes per key (at memory_max_keys = $max_keys)" "$per_key"
printf '%-60s %12s\n' "keys granted filling the store (${fill_s}s), keys held" "$filled, $keys_held"
printf '%-60s %12s\n' "a new key past the last (SQLSTATE)" "${over:-none}"

r_redis=$(ratio "$mem" "$redis") r_sel1=$(ratio "$mem" "$sel1") r_hot=$(ratio "$mhot16" "$mkeys16")
r_long=$(ratio "$long_mem_held" "$long_mem_free")
printf '\n%-66s %-12s %16s  %s\n' "targets of the memory store (issue 25)" "target" "measured" "verdict"
target_row "memory store / Redis Lua AOF everysec (C clients, 8, tps)" ">= 1.2" "$r_redis" ">=" "$r_redis" 1.2
target_row "memory store / SELECT 1 (C clients, 8, tps)" ">= 0.85" "$r_sel1" ">=" "$r_sel1" 0.85
target_row "memory store, one hot key / 10,000 keys, 16 clients, no shards" ">= 0.9" "$r_hot" ">=" "$r_hot" 0.9
target_row "memory store, snapshot held / not held, one key, 4 clients" ">= 0.9" "$r_long" ">=" "$r_long" 0.9
target_row "WAL bytes and transaction ids per memory call" "0 and 0" "$wal_mem B, $xid_mem" \
	"<" "$wal_mem" 0.5 "<" "$xid_mem" 0.005
target_row "bytes of shared memory per key (1,000,000 keys)" "<= 128" "$per_key" \
	"<=" "$per_key" 128 ">=" "$keys_held" "$max_keys"
target_row "application: INSERT ... WHERE rl_limit (memory) / Redis + INSERT" ">= 1.5" "${app:-}" \
	">=" "${app:-}" 1.5
printf '%s\n' "(the last row from the external section's cluster: fsync and synchronous_commit on, 8 clients)"
if [ "$app_status" != 0 ]; then
	rl_log "the application shape failed (exit $app_status): see its error above"
fi
exit "$app_status"
