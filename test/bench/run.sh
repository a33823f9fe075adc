#!/usr/bin/env bash
# make bench: a throwaway cluster, then pgbench runs measured side by side,
# each the median of RL_BENCH_REPS runs of RL_BENCH_SECONDS seconds, with
# ratios against the baseline of its row.
#
#   per call: rl_limit over 100,000 existing keys in one statement, against
#   a PL/pgSQL loop of bare UPDATEs and a PL/pgSQL reference limiter on an
#   identical table (reference.sql); and the first call for 100,000 keys.
#
#   end to end: pgbench, 4 clients, prepared, one rl_limit per transaction
#   on random keys among 100,000, against one bare UPDATE per transaction.
#
#   hot key: 16 clients, every call on one global limit, shards => 1 and
#   shards => 16, against 16 clients on distinct random keys.
#
#   footprint: bytes per key of the table and its primary key, and the
#   share of HOT updates over the whole run.
#
#   concurrency: one rl_acquire per transaction (a permit in the lock
#   manager) against one rl_limit and against the alternative design, a
#   slot row locked FOR UPDATE SKIP LOCKED; and the WAL bytes and
#   transaction ids each costs per call, and a refused rl_limit call
#   (refused.sql, one key that refuses every call; checked in rl_stats).
#
#   statistics: the per-call and end-to-end rows again with
#   ratelimit.track_stats = off, in the same rounds, against on.
#
#   the SQL edition: sql_edition.sh (also make bench-sql-edition), its
#   own cluster and its own table of issue 37's targets.
#
#   long transactions: calls while another session holds a REPEATABLE
#   READ snapshot, against the same runs without (long.sh, also make
#   bench-long): one hot key, 16 shards, 10,000 keys; the growth per call.
#
#   scale-out: through the PL/Proxy router (router.pl).
#
#   the memory store: memory.sh (also make bench-memory), its own clusters
#   and its own table of issue 25's targets.
#
#   against rate-limiter-flexible and Redis, with fsync and
#   synchronous_commit on: external/run.sh (also make bench-external).
#
#   targets of the second performance round: the last table, nine figures,
#   each with its target, the value and "met" or "not met".  It measures
#   nothing: the first four rows repeat ratios and the footprint printed
#   above, the other five what compare.js printed under "ratios at 8
#   clients" and wrote to tmp/bench-external/figures-at-8.txt.  Each is
#   judged as printed (two places for ratios).  When the external section
#   could not run, its rows say "not measured" and make bench fails, after
#   the table.
#
# Knobs: RL_BENCH_REPS (default 3) and RL_BENCH_SECONDS (default 5), for
# every section but the external one, which has its own (RL_EXT_SECONDS,
# RL_EXT_ROUNDS, RL_EXT_CLIENTS: see external/run.sh); RL_BENCH_SKIP_ROUTER=1
# skips the scale-out section (its clusters take a while to set up), and
# RL_BENCH_SKIP_SQL_EDITION=1 the SQL edition's, and
# RL_BENCH_SKIP_LONG=1 the long-transaction one (six minutes; its own
# knob RL_BENCH_LONG_SECONDS), for quick checks of the rest.
source "$(dirname "$0")/../lib.sh"
here=$RL_REPO/test/bench
# ratio, holds, target_row
source "$here/targets.sh"
reps=${RL_BENCH_REPS:-3}
seconds=${RL_BENCH_SECONDS:-5}

rl_ensure_packages
rl_choose_tmp
trap rl_stop_quietly EXIT
rl_install >/dev/null
rl_start

"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION ratelimit;
-- limits that never run dry during a run: what is measured is the call
SELECT rl_define('hot1', 'token bucket', 1e9, '1 second', shards => 1);
SELECT rl_define('hot16', 'token bucket', 1e9, '1 second', shards => 16);
SELECT rl_define('keys', 'token bucket', 1e9, '1 second');
-- one token per 100 years, taken here: every later call is refused
SELECT rl_define('refused', 'token bucket', 1, '100 years');
SELECT rl_limit('refused');
SELECT rl_limit('keys', k) FROM generate_series(1, 100000) AS k;
SELECT rl_limit('hot16', NULL, 1) FROM generate_series(1, 200);
SELECT rl_define_concurrency('conc', 4);
CREATE TABLE bench_slots (key int, slot int, PRIMARY KEY (key, slot));
INSERT INTO bench_slots SELECT k, s FROM generate_series(1, 100000) AS k, generate_series(0, 3) AS s;
SQL
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$here/reference.sql" >/dev/null
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$here/reference_keys.sql" >/dev/null

# milliseconds for one statement
ms() {
	"$RL_BIN/psql" -X -At -c "SELECT bench_ms(\$\$$1\$\$)"
}

# the same with statistics off
ms_off() {
	PGOPTIONS="-c ratelimit.track_stats=off" ms "$@"
}

# the first call for 100,000 keys of a fresh name: first_calls ROUND
first_calls() {
	"$RL_BIN/psql" -X -q -c "SELECT rl_define('new$1', 'token bucket', 1e9, '1 second')" >/dev/null
	ms "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('new$1', k)).ok"
}

# tps of one pgbench run: pgbench FILE CLIENTS [extra args]
tps() {
	local file=$1 clients=$2
	shift 2
	"$RL_BIN/pgbench" -n -M prepared -c "$clients" -j 2 -T "$seconds" \
		-f "$here/$file" "$@" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}

# the same with statistics off
tps_off() {
	PGOPTIONS="-c ratelimit.track_stats=off" tps "$@"
}

# the median of $reps runs
median() {
	local runs=()
	for ((i = 0; i < reps; i++)); do runs+=("$("$@")"); done
	printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(((reps + 1) / 2))p"
}


# Footprint: state table plus primary key per key, 100,000 short keys
# freshly written (and nothing else in the table but 16 shard rows).
footprint=$("$RL_BIN/psql" -X -At -c "SELECT round((pg_relation_size('rate_limits') + pg_relation_size('rate_limits_pkey'))::numeric / count(*), 1) FROM rate_limits")
footprint_parts=$("$RL_BIN/psql" -X -At -c "SELECT round(pg_relation_size('rate_limits')::numeric / count(*), 1) || ' + ' || round(pg_relation_size('rate_limits_pkey')::numeric / count(*), 1) FROM rate_limits")
# The same rows packed: copied into a table of the same columns and
# fillfactor, whose primary key is built after loading (a btree build fills
# its leaves to 90 %, where keys inserted in random order leave them about
# two thirds full).  The smallest these rows can be in this layout.
footprint_packed=$("$RL_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 <<'SQL'
CREATE TEMP TABLE bench_packed (LIKE rate_limits) WITH (fillfactor = 90);
INSERT INTO bench_packed SELECT * FROM rate_limits;
ALTER TABLE bench_packed ADD PRIMARY KEY (name, key, shard);
SELECT round(pg_relation_size('bench_packed')::numeric / count(*), 1) || ' + ' ||
       round(pg_relation_size('bench_packed_pkey')::numeric / count(*), 1) || ' = ' ||
       round((pg_relation_size('bench_packed') + pg_relation_size('bench_packed_pkey'))::numeric / count(*), 1)
FROM bench_packed;
SQL
)
"$RL_BIN/psql" -X -q -c "SELECT pg_stat_reset()" >/dev/null

# Every measurement once per round, the rounds interleaved, so that all of
# them see the same machine; then the median of each.
declare -A runs
measure() {
	local name=$1
	shift
	runs[$name]+="$("$@") "
}
for ((round = 0; round < reps; round++)); do
	measure bare_ms ms "SELECT bench_bare_update(100000)"
	# statistics on and off: which runs first alternates between rounds
	for stats in $( ((round % 2)) && echo "off on" || echo "on off"); do
		if [ "$stats" = on ]; then
			measure limit_ms ms "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('keys', k)).ok"
		else
			measure limit_off_ms ms_off "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('keys', k)).ok"
		fi
	done
	measure plpgsql_ms ms "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (bench_plpgsql_limit('keys', k::text, 1)).ok"
	measure first_ms first_calls "$round"
	measure bare4 tps bare.sql 4
	for stats in $( ((round % 2)) && echo "off on" || echo "on off"); do
		if [ "$stats" = on ]; then
			measure keys4 tps keys.sql 4
		else
			measure keys4_off tps_off keys.sql 4
		fi
	done
	measure keys16 tps keys.sql 16
	measure hot1 tps hot.sql 16 -D limit=hot1
	measure hot16 tps hot.sql 16 -D limit=hot16
	measure acquire4 tps acquire.sql 4
	measure slots4 tps slots.sql 4
done
med() {
	printf '%s\n' ${runs[$1]} | sort -g | sed -n "$(((reps + 1) / 2))p"
}
bare_ms=$(med bare_ms) limit_ms=$(med limit_ms) plpgsql_ms=$(med plpgsql_ms)
first_ms=$(med first_ms) bare4=$(med bare4) keys4=$(med keys4)
keys16=$(med keys16) hot1=$(med hot1) hot16=$(med hot16)
acquire4=$(med acquire4) slots4=$(med slots4)

# WAL bytes and transaction ids per call: 2,000 calls, one per transaction
wal_xid() {
	local before after
	before=$("$RL_BIN/psql" -X -At -c "SELECT pg_current_wal_insert_lsn() || ' ' || txid_current()")
	"$RL_BIN/pgbench" -n -M prepared -c 1 -t 2000 -f "$here/$1" postgres >/dev/null 2>&1
	after=$("$RL_BIN/psql" -X -At -c "SELECT pg_current_wal_insert_lsn() || ' ' || txid_current()")
	"$RL_BIN/psql" -X -At -c "SELECT round(pg_wal_lsn_diff('${after% *}', '${before% *}') / 2000.0, 1) || ' ' || round((${after#* } - ${before#* } - 1) / 2000.0, 2)"
}
read -r wal_limit xid_limit <<<"$(wal_xid keys.sql)"
refused_count() {
	"$RL_BIN/psql" -X -At -c "SELECT granted || ' ' || refused FROM rl_stats WHERE name = 'refused' AND datname = current_database()"
}
read -r granted0 refused0 <<<"$(refused_count)"
read -r wal_refused xid_refused <<<"$(wal_xid refused.sql)"
read -r granted1 refused1 <<<"$(refused_count)"
if [ "$((granted1 - granted0))" != 0 ] || [ "$((refused1 - refused0))" != 2000 ]; then
	rl_die "the refused shape: of 2,000 calls, $((granted1 - granted0)) granted and $((refused1 - refused0)) refused (rl_stats)"
fi
read -r wal_acquire xid_acquire <<<"$(wal_xid acquire.sql)"
read -r wal_slots xid_slots <<<"$(wal_xid slots.sql)"
limit_off_ms=$(med limit_off_ms) keys4_off=$(med keys4_off)

# the lowest and highest of the per-round ratios a / b: spread NAME_A NAME_B
spread() {
	paste <(printf '%s\n' ${runs[$1]}) <(printf '%s\n' ${runs[$2]}) |
		awk '$2 > 0 { r = $1 / $2; if (n++ == 0 || r < lo) lo = r; if (n == 1 || r > hi) hi = r }
			END { printf "%.2f-%.2f", lo, hi }'
}

# HOT share when each transaction updates one key (the end-to-end shape),
# apart from the one-statement runs above, which rewrite every row of a
# page in one transaction, so that pruning cannot make room on the page.
sleep 1	# statistics reach pg_stat_user_tables within a second
hot_share_counts() {
	"$RL_BIN/psql" -X -At -c "SELECT n_tup_upd || ' ' || n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'rate_limits'"
}
read -r upd0 hot0 <<<"$(hot_share_counts)"
tps keys.sql 4 >/dev/null
sleep 1
read -r upd1 hot1_ <<<"$(hot_share_counts)"
hot_pgbench=$(awk -v u=$((upd1 - upd0)) -v h=$((hot1_ - hot0)) 'BEGIN { printf "%.1f", (u > 0 ? 100 * h / u : 0) }')

hot_share() {
	"$RL_BIN/psql" -X -At -c "SELECT round(100.0 * n_tup_hot_upd / greatest(n_tup_upd, 1), 1) FROM pg_stat_user_tables WHERE relname = '$1'"
}
hot_limits=$(hot_share rate_limits)
hot_bare=$(hot_share bench_state)

printf '\n%-52s %12s %10s\n' "per call, 100,000 keys in one statement (median of $reps)" "ms" "ratio"
printf '%-52s %12.0f %10s\n' "bare UPDATE loop in PL/pgSQL (baseline)" "$bare_ms" "1.00"
printf '%-52s %12.0f %10.2f\n' "PL/pgSQL reference limiter" "$plpgsql_ms" "$(ratio "$plpgsql_ms" "$bare_ms")"
printf '%-52s %12.0f %10.2f\n' "rl_limit, existing keys" "$limit_ms" "$(ratio "$limit_ms" "$bare_ms")"
printf '%-52s %12.0f %10.2f\n' "rl_limit, first call for new keys" "$first_ms" "$(ratio "$first_ms" "$bare_ms")"
printf '%-52s %12s %10.2f\n' "PL/pgSQL reference / rl_limit (speed-up)" "" "$(ratio "$plpgsql_ms" "$limit_ms")"

printf '\n%-52s %12s %10s\n' "end to end, 4 clients, prepared (median of $reps x ${seconds}s)" "tps" "ratio"
printf '%-52s %12.0f %10s\n' "bare UPDATE per transaction (baseline)" "$bare4" "1.00"
printf '%-52s %12.0f %10.2f\n' "rl_limit per transaction" "$keys4" "$(ratio "$keys4" "$bare4")"

printf '\n%-52s %12s %10s\n' "hot key, 16 clients (median of $reps x ${seconds}s)" "tps" "ratio"
printf '%-52s %12.0f %10s\n' "distinct random keys (baseline)" "$keys16" "1.00"
printf '%-52s %12.0f %10.2f\n' "one global limit, shards => 1" "$hot1" "$(ratio "$hot1" "$keys16")"
printf '%-52s %12.0f %10.2f\n' "one global limit, shards => 16" "$hot16" "$(ratio "$hot16" "$keys16")"

printf '\n%-52s %12s %10s\n' "concurrency, 4 clients, prepared (median of $reps x ${seconds}s)" "tps" "ratio"
printf '%-52s %12.0f %10s\n' "rl_limit per transaction (baseline)" "$keys4" "1.00"
printf '%-52s %12.0f %10.2f\n' "rl_acquire per transaction (lock manager)" "$acquire4" "$(ratio "$acquire4" "$keys4")"
printf '%-52s %12.0f %10.2f\n' "slot row FOR UPDATE SKIP LOCKED per transaction" "$slots4" "$(ratio "$slots4" "$keys4")"
printf '%-52s %12s %10s\n' "per call (2,000 calls, one per transaction)" "WAL bytes" "xids"
printf '%-52s %12s %10s\n' "rl_limit" "$wal_limit" "$xid_limit"
printf '%-52s %12s %10s\n' "rl_limit, every call refused (one key)" "$wal_refused" "$xid_refused"
printf '%-52s %12s %10s\n' "rl_acquire" "$wal_acquire" "$xid_acquire"
printf '%-52s %12s %10s\n' "slot row FOR UPDATE SKIP LOCKED" "$wal_slots" "$xid_slots"
printf '\n%-52s %12s %10s %10s\n' "statistics on against off (median of $reps)" "on" "off" "on/off"
printf '%-52s %12.0f %10.0f %10.2f  rounds %s\n' "per call, existing keys (ms; above 1 is slower)" "$limit_ms" "$limit_off_ms" "$(ratio "$limit_ms" "$limit_off_ms")" "$(spread limit_ms limit_off_ms)"
printf '%-52s %12.0f %10.0f %10.2f  rounds %s\n' "end to end, 4 clients (tps; below 1 is slower)" "$keys4" "$keys4_off" "$(ratio "$keys4" "$keys4_off")" "$(spread keys4 keys4_off)"

printf '\n%-52s %12s\n' "footprint and HOT updates" "value"
printf '%-52s %12s\n' "bytes per key, table + primary key (100,000 keys)" "$footprint"
printf '%-52s %12s\n' "  of which table + primary key" "$footprint_parts"
printf '%-52s %12s\n' "  the same rows packed (key built after loading)" "$footprint_packed"
printf '%-52s %11s%%\n' "HOT share of rate_limits updates, whole run" "$hot_limits"
printf '%-52s %11s%%\n' "HOT share, one key per transaction (4 clients)" "$hot_pgbench"
printf '%-52s %11s%%\n' "HOT share of the bare-UPDATE table, same run" "$hot_bare"

# The SQL edition against the C edition: a cluster of its own
# (sql_edition.sh), about two minutes, with its own table of targets.
rl_stop_quietly
if [ -n "${RL_BENCH_SKIP_SQL_EDITION:-}" ]; then
	printf '\n%-52s\n' "SQL edition: skipped (RL_BENCH_SKIP_SQL_EDITION)"
else
	RL_BENCH_INSTALLED=1 BENCH_ROUNDS="$reps" RL_BENCH_SECONDS="$seconds" BASE= "$here/sql_edition.sh"
fi

# Long transactions: a cluster of its own (long.sh), about six minutes.
rl_stop_quietly
if [ -n "${RL_BENCH_SKIP_LONG:-}" ]; then
	printf '\n%-52s\n' "long transactions: skipped (RL_BENCH_SKIP_LONG)"
else
	RL_BENCH_INSTALLED=1 RL_BENCH_PER_CALL=$(ratio "$limit_ms" "$bare_ms") "$here/long.sh"
fi

# Scale-out through the PL/Proxy router: clusters of its own.
rl_stop_quietly
if [ -n "${RL_BENCH_SKIP_ROUTER:-}" ]; then
	printf '\n%-52s\n' "scale-out: skipped (RL_BENCH_SKIP_ROUTER)"
else
	bench_tap=$RL_TMP/bench-tap
	rm -rf "$bench_tap"
	mkdir -p "$bench_tap"
	if rl_is_root; then chown postgres: "$bench_tap"; fi
	pgxs=$(dirname "$RL_BIN")/lib/pgxs
	(cd "$bench_tap" && rl_as_server env PATH="$RL_BIN:$PATH" TESTDIR="$bench_tap" \
		PG_REGRESS="$pgxs/src/test/regress/pg_regress" \
		RL_BENCH_REPS="$reps" RL_BENCH_SECONDS="$seconds" \
		perl -I "$pgxs/src/test/perl" "$here/router.pl" 2>/dev/null | grep -v '^\(ok\|1\.\.\)')
fi

# The memory store: clusters of its own, and a table of its own targets.
rl_stop_quietly
memory_status=0
RL_BENCH_INSTALLED=1 "$here/memory.sh" || memory_status=$?

# Against rate-limiter-flexible and Redis: a cluster of its own, durable.
# compare.js writes its figures at 8 clients to $figures (external/run.sh
# says where); a file left by an earlier run is removed first, so that a
# section that could not run leaves none.
rl_stop_quietly
figures=$RL_TMP/bench-external/figures-at-8.txt
rm -f "$figures"
external_status=0
RL_BENCH_INSTALLED=1 "$here/external/run.sh" || external_status=$?

# The targets of the second performance round, each figure repeated from
# above (the pgbench medians, and compare.js's ratios at 8 clients) and
# judged as printed.

# external NAME: a figure of compare.js's file, empty when not measured
external() {
	[ -f "$figures" ] && awk -v k="$1" '$1 == k && $2 != "-" { print $2 }' "$figures"
	return 0
}
first_ratio=$(ratio "$first_ms" "$bare_ms") limit_ratio=$(ratio "$limit_ms" "$bare_ms")
hot16_ratio=$(ratio "$hot16" "$keys16")
ext_alone=$(external alone) ext_hot16=$(external hot16) ext_app=$(external app_stmt)
ext_refused=$(external refused) ext_refused_wal=$(external refused_wal)
ext_async=$(external async_redis_everysec)

printf '\n%-66s %-20s %16s  %s\n' "targets of the second performance round" "target" "measured" "verdict"
target_row "first call for new keys / bare UPDATE loop (per call, ms)" "<= 1.0" "$first_ratio" \
	"<=" "$first_ratio" 1.0
target_row "existing keys / bare UPDATE loop (per call, ms)" "<= 0.85" "$limit_ratio" \
	"<=" "$limit_ratio" 0.85
target_row "bytes per key, table + primary key" "<= 90" "$footprint" \
	"<=" "$footprint" 90
target_row "hot key, 16 shards / distinct keys, 16 clients (tps)" ">= 0.9" "$hot16_ratio" \
	">=" "$hot16_ratio" 0.9
target_row "application, 8 clients: INSERT ... WHERE rl_limit / rlf + INSERT" ">= 1.8" "$ext_app" \
	">=" "$ext_app" 1.8
target_row "limiter alone, distinct keys, 8 clients: rl_limit / rlf" ">= 1.0" "$ext_alone" \
	">=" "$ext_alone" 1.0
target_row "hot global limit, 8 clients: rl_limit (16 shards) / rlf" ">= 2.5" "$ext_hot16" \
	">=" "$ext_hot16" 2.5
# 0 bytes of WAL: below half a byte per call, as the WAL B columns round
# it (a call that wrote a record would show 24 bytes or more; fractions
# are background WAL spread over the run's calls)
target_row "every call refused, hot key, 8 clients: refused / granted calls/s" ">= 2.0, 0 WAL B" \
	"$ext_refused, $ext_refused_wal WAL B" ">=" "$ext_refused" 2.0 "<" "$ext_refused_wal" 0.5
target_row "limiter alone, 8 clients, synchronous_commit off / Redis everysec" ">= 1.0" "$ext_async" \
	">=" "$ext_async" 1.0
printf '%s\n' "(rlf: rate-limiter-flexible; the last five rows from the external section above)"
if [ "$external_status" != 0 ]; then
	rl_log "the external section failed (exit $external_status): see its error above"
fi
if [ "$memory_status" != 0 ]; then
	rl_log "the memory-store section failed (exit $memory_status): see its error above"
fi
[ "$memory_status" = 0 ] || exit "$memory_status"
exit "$external_status"
