#!/usr/bin/env bash
# make bench-long (also a section of make bench): calls while a long
# transaction holds the xmin horizon.  A REPEATABLE READ snapshot held in
# another session (as pg_dump holds one) keeps every version an update
# replaces; this measures what that costs a call on the direct path.
#
# For each workload (one hot key; one hot key with 16 shards; 10,000
# distinct keys), 4 clients, prepared, run for RL_BENCH_LONG_SECONDS
# (default 60) twice on a freshly vacuumed table: without a snapshot held,
# then with one held for the whole run.  The figure is the throughput of
# the last 20 s of each run (pgbench --progress), where the versions kept
# are the most; the ratio with / without is judged against its target.
# While the snapshot is held, the growth of the table and primary key is
# counted per call (bytes in use, from pgstattuple and pgstatindex); after
# the snapshot ends, VACUUM's result is shown: the file sizes, and the
# share of the table free for reuse.
#
# Its own throwaway cluster (fsync off, autovacuum on as by default).
#   RL_BENCH_LONG_SECONDS (default 60) seconds per run
#   RL_BENCH_LONG_WORKLOADS (default "hot1 hot16 keys") the workloads run
#   RL_BENCH_INSTALLED=1  skip the build (make bench has just done it)
#   RL_BENCH_PER_CALL=RATIO  make bench's per-call ratio (existing keys / bare
#                         UPDATE loop), repeated in the table of targets
source "$(dirname "$0")/../lib.sh"
here=$RL_REPO/test/bench
seconds=${RL_BENCH_LONG_SECONDS:-60}
window=20
[ "$seconds" -gt "$window" ] || rl_die "RL_BENCH_LONG_SECONDS must be more than $window"

rl_ensure_packages
rl_choose_tmp
trap 'stop_holder; rl_stop_quietly' EXIT
if [ -z "${RL_BENCH_INSTALLED:-}" ]; then rl_install >/dev/null; fi
rl_start

"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
CREATE EXTENSION pgstattuple;
-- limits that never run dry during a run: what is measured is the call
SELECT rl_define('hot1', 'token bucket', 1e9, '1 second', shards => 1);
SELECT rl_define('hot16', 'token bucket', 1e9, '1 second', shards => 16);
SELECT rl_define('keys', 'token bucket', 1e9, '1 second');
SELECT rl_limit('hot1');
SELECT rl_limit('hot16', NULL, 1) FROM generate_series(1, 200);
SELECT rl_limit('keys', k) FROM generate_series(1, 10000) AS k;
VACUUM ANALYZE;
SQL

q() { "$RL_BIN/psql" -X -At -v ON_ERROR_STOP=1 -c "$1"; }

# start_holder and stop_holder: a session holding a snapshot
source "$(dirname "$0")/holder.sh"

# bytes in use in the table (all but its free space: a run first fills
# what the VACUUM before it freed) and in the primary key's leaf pages
used() {
	q "SELECT t.table_len - t.free_space || ' ' ||
		round(i.leaf_pages * current_setting('block_size')::int * i.avg_leaf_density / 100)
	FROM pgstattuple('rate_limits') t, pgstatindex('rate_limits_pkey') i"
}

# run NAME SCRIPT [pgbench args]: one run; sets ${NAME}_tps (mean of the
# last $window progress reports) and ${NAME}_calls
run() {
	local name=$1 file=$2 out
	shift 2
	out=$("$RL_BIN/pgbench" -n -M prepared -c 4 -j 2 -T "$seconds" -P 1 \
		-f "$here/$file" "$@" postgres 2>&1) || rl_die "pgbench failed: $out"
	printf -v "${name}_tps" '%s' "$(printf '%s\n' "$out" |
		awk -v from=$((seconds - window)) '$1 == "progress:" && $2 + 0 > from { sum += $4; n++ }
			END { printf "%.0f", (n ? sum / n : 0) }')"
	printf -v "${name}_calls" '%s' "$(printf '%s\n' "$out" |
		sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')"
}

# measure NAME SCRIPT [pgbench args]: without, then with a snapshot held;
# the growth while it is held, and what VACUUM leaves after it
measure() {
	local name=$1 heap0 pkey0 heap1 pkey1 calls
	q "VACUUM rate_limits" >/dev/null
	rl_log "long transactions: $name, ${seconds}s without a snapshot held"
	run "${name}_free" "${@:2}"
	q "VACUUM rate_limits" >/dev/null
	read -r heap0 pkey0 <<<"$(used)"
	start_holder
	rl_log "long transactions: $name, ${seconds}s with a snapshot held"
	run "${name}_held" "${@:2}"
	read -r heap1 pkey1 <<<"$(used)"
	stop_holder
	q "VACUUM rate_limits" >/dev/null
	calls=${name}_held_calls
	calls=${!calls}
	printf -v "${name}_growth" '%s' "$(awk -v h=$((heap1 - heap0)) -v p=$((pkey1 - pkey0)) -v c="$calls" \
		'BEGIN { printf "%.1f + %.1f", h / c, p / c }')"
	printf -v "${name}_grown" '%s' "$(awk -v h=$((heap1 - heap0)) -v p=$((pkey1 - pkey0)) \
		'BEGIN { printf "%.1f + %.1f MB", h / 1048576, p / 1048576 }')"
	printf -v "${name}_vacuumed" '%s' "$(q "SELECT round(pg_relation_size('rate_limits') / 1048576.0, 1) || ' + ' ||
		round(pg_relation_size('rate_limits_pkey') / 1048576.0, 1) || ' MB, ' ||
		round(free_percent::numeric) || '% free' FROM pgstattuple('rate_limits')")"
}

workloads=${RL_BENCH_LONG_WORKLOADS:-hot1 hot16 keys}
for w in $workloads; do
	case $w in
	hot1) measure hot1 hot.sql -D limit=hot1 ;;
	hot16) measure hot16 hot.sql -D limit=hot16 ;;
	keys) measure keys long_keys.sql ;;
	*) rl_die "unknown workload $w (RL_BENCH_LONG_WORKLOADS: hot1 hot16 keys)" ;;
	esac
done

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'
}
holds() {
	awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { exit !(op == "<=" ? v <= t : v >= t) }'
}

printf '\n%-44s %12s %12s %8s %8s  %s\n' \
	"long transactions, 4 clients, direct path" "tps without" "tps held" "ratio" "target" "verdict"
printf '%-44s %12s %12s\n' "(last ${window}s of ${seconds}s runs)" "" ""
row() {
	local label=$1 name=$2 target=$3 free held r verdict=met
	free=${name}_free_tps held=${name}_held_tps
	[ -n "${!free:-}" ] || return 0
	r=$(ratio "${!held}" "${!free}")
	holds "$r" ">=" "$target" || verdict="not met"
	printf '%-44s %12s %12s %8s %8s  %s\n' "$label" "${!free}" "${!held}" "$r" ">= $target" "$verdict"
}
row "one hot key" hot1 0.5
row "one hot key, 16 shards" hot16 0.5
row "10,000 distinct keys" keys 0.7
if [ -n "${RL_BENCH_PER_CALL:-}" ]; then
	verdict=met
	holds "$RL_BENCH_PER_CALL" "<=" 0.85 || verdict="not met"
	printf '%-44s %12s %12s %8s %8s  %s\n' "existing keys, no snapshot: per call / bare" "" "" \
		"$RL_BENCH_PER_CALL" "<= 0.85" "$verdict"
	printf '%s\n' "(the last row repeats the per-call ratio above: UPDATE loop, 100,000 keys)"
fi

printf '\n%-44s %22s %22s %24s\n' "growth while the snapshot is held" \
	"bytes/call tbl + pkey" "in use, over the run" "files after VACUUM"
growth() {
	local label=$1 name=$2 g v w
	g=${name}_growth v=${name}_grown w=${name}_vacuumed
	[ -n "${!g:-}" ] || return 0
	printf '%-44s %22s %22s %24s\n' "$label" "${!g}" "${!v}" "${!w}"
}
growth "one hot key" hot1
growth "one hot key, 16 shards" hot16
growth "10,000 distinct keys" keys
