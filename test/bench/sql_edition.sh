#!/usr/bin/env bash
# make bench-sql-edition (also a section of make bench): the SQL edition
# (sql-edition/, make sql-edition) against the C edition and the bare
# UPDATE loop, on one throwaway cluster, measured round by round in the
# same minutes, with issue 37's three targets:
#
#   per call: one statement of RL_SQLED_BENCH_KEYS calls (default 20,000)
#   on existing keys of a defined token bucket that never runs dry: the
#   SQL edition (database sqled, schema limits, where the C extension is
#   not created and nothing of the edition calls the library), the C
#   edition's table store on the direct path and on the SQL path
#   (ratelimit.direct_access = off), and the bare UPDATE loop of
#   reference.sql on the same keys.  Targets: SQL edition / C edition
#   (direct path) <= 2.0, SQL edition / bare UPDATE loop <= 1.8.
#
#   end to end: pgbench, 4 clients, prepared, one call per transaction on
#   random keys among the same (keys_n.sql), RL_BENCH_SECONDS each
#   (default 5).
#   Target: SQL edition tps / C edition tps >= 0.7.
#
# Each of BENCH_ROUNDS rounds (default 3) measures every figure once, the
# order reversed every other round, and prints the round's figures and
# ratios; then the medians (of the figures, and of the rounds' ratios,
# which the targets are judged on) and the three target lines.
#
# BASE=REV (make bench-sql-edition BASE=REV): the SQL edition of git
# revision REV too, built from its sql-edition/ and installed in a third
# database (sqled_base), measured in the same rounds; its rows and
# this/base ratios follow (below 1 is faster per call, above 1 in tps).
# Only the SQL edition is taken from REV: the C edition is this tree's.
#
# The cluster lives in tmp/bench-sqled (port RL_PORT), apart from the one
# make run KEEP=1 leaves running in tmp, so both can run at once.
#   RL_BENCH_INSTALLED=1  skip the build (make bench, or make run, has just
#   done it)
source "$(dirname "$0")/../lib.sh"
here=$RL_REPO/test/bench
# ratio, holds, target_row
source "$here/targets.sh"
rounds=${BENCH_ROUNDS:-3}
seconds=${RL_BENCH_SECONDS:-5}
keys=${RL_SQLED_BENCH_KEYS:-20000}
base_rev=${BASE:-}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || rl_die "BENCH_ROUNDS must be a positive whole number"
[[ $keys =~ ^[1-9][0-9]*$ ]] || rl_die "RL_SQLED_BENCH_KEYS must be a positive whole number"

rl_ensure_packages
rl_choose_tmp
install=$(make -C "$RL_REPO" -s --no-print-directory sql-edition | tail -1)
[ -f "$install" ] || rl_die "make sql-edition did not print the install script's path"
base_install=
if [ -n "$base_rev" ]; then
	base_commit=$(git -C "$RL_REPO" rev-parse --verify -q "$base_rev^{commit}") ||
		rl_die "BASE=$base_rev is not a git revision of $RL_REPO"
	base_dir=$RL_TMP/sqled-bench-base
	rm -rf "$base_dir"
	mkdir -p "$base_dir"
	git -C "$RL_REPO" archive "$base_commit" sql-edition | tar -x -C "$base_dir"
	base_install=$(sh "$base_dir/sql-edition/build.sh" "$base_dir/out" | tail -1)
	[ -f "$base_install" ] || rl_die "the SQL edition of $base_rev did not build"
fi
chmod a+r "$install" ${base_install:+"$base_install"}

trap rl_stop_quietly EXIT
if [ -z "${RL_BENCH_INSTALLED:-}" ]; then rl_install >/dev/null; fi
RL_DATA=$RL_TMP/bench-sqled/data RL_SOCK=$RL_TMP/bench-sqled/sock RL_LOGDIR=$RL_TMP/bench-sqled/log
export PGHOST=$RL_SOCK
rl_start

psql_q() { "$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
# the C edition, and the bare UPDATE loop's table, in database postgres
psql_q >/dev/null <<SQL
CREATE EXTENSION ratelimit;
SELECT rl_define('keys', 'token bucket', 1e9, '1 second');
SELECT count(*) FROM generate_series(1, $keys) AS k WHERE (rl_limit('keys', k)).ok;
SQL
psql_q -f "$here/reference.sql" >/dev/null
psql_q >/dev/null <<SQL
INSERT INTO bench_state SELECT 'keys', k::text, 0, 1e9, now() FROM generate_series(1, $keys) AS k;
VACUUM ANALYZE;
SQL
# each SQL edition in a database of its own, in schema limits, with the
# same limit and keys
sqled_dbs=sqled
if [ -n "$base_install" ]; then sqled_dbs="sqled sqled_base"; fi
for db in $sqled_dbs; do
	script=$install
	if [ "$db" = sqled_base ]; then script=$base_install; fi
	psql_q -c "CREATE DATABASE $db" >/dev/null
	psql_q -d "$db" -c "CREATE SCHEMA limits" >/dev/null
	PGOPTIONS="-c search_path=limits,public" psql_q -1 -d "$db" -f "$script" >/dev/null ||
		rl_die "the SQL edition did not install in $db"
	lib=$("$RL_BIN/psql" -X -At -d "$db" -c "SELECT count(*) FROM pg_extension WHERE extname = 'ratelimit'")
	[ "$lib" = 0 ] || rl_die "the C edition is installed in $db"
	# bench_ms, the last function of reference.sql, in schema public
	sed -n '/^-- milliseconds a statement takes$/,$p' "$here/reference.sql" |
		PGOPTIONS="-c search_path=public" psql_q -d "$db" >/dev/null
	"$RL_BIN/psql" -X -At -d "$db" -c "SELECT 'public.bench_ms(text)'::regprocedure" >/dev/null ||
		rl_die "bench_ms is not the last function of reference.sql"
	psql_q -d "$db" >/dev/null <<SQL
SELECT limits.rl_define('keys', 'token bucket', 1e9, '1 second');
SELECT count(*) FROM generate_series(1, $keys) AS k WHERE (limits.rl_limit('keys', k)).ok;
VACUUM ANALYZE;
SQL
done

per_call="SELECT count(*) FROM generate_series(1, $keys) AS k WHERE (rl_limit('keys', k)).ok"
# milliseconds of one statement: ms DB STATEMENT [PGOPTIONS]
ms() {
	PGOPTIONS="${3:-}" "$RL_BIN/psql" -X -At -d "$1" -c "SELECT bench_ms(\$\$$2\$\$)"
}
# tps of one pgbench run of keys.sql, 4 clients: tps DB [PGOPTIONS]
tps() {
	local out
	out=$(PGOPTIONS="${2:-}" "$RL_BIN/pgbench" -n -M prepared -c 4 -j 2 -T "$seconds" \
		-D keys="$keys" -f "$here/keys_n.sql" "$1" 2>&1) || rl_die "pgbench on $1 failed: $out"
	printf '%s\n' "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}
declare -A runs
measure() {
	local name=$1 value
	shift
	value=$("$@")
	[ -n "$value" ] || rl_die "no figure for $name"
	runs[$name]+="$value "
	eval "cur_$name=\$value"
}
# the median of a list of numbers
median_of() {
	printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"
}
med() {
	# shellcheck disable=SC2086
	median_of ${runs[$1]}
}
# the per-round ratios a / b of two figures
round_ratios() {
	paste <(printf '%s\n' ${runs[$1]}) <(printf '%s\n' ${runs[$2]}) |
		awk '{ printf "%.4f\n", ($2 > 0 ? $1 / $2 : 0) }'
}
ratio_median() {
	# shellcheck disable=SC2046
	printf '%.2f' "$(median_of $(round_ratios "$1" "$2"))"
}
ratio_range() {
	round_ratios "$1" "$2" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
rl_log "SQL edition: $rounds rounds, $keys keys, ${seconds}s pgbench runs (load average $load)"
order="bare c c_sql sqled"
tps_order="c sqled"
if [ -n "$base_install" ]; then order="$order base" tps_order="$tps_order base"; fi
printf '\n%-7s %9s %9s %9s %9s %9s %7s %7s %9s %9s %7s\n' "round" "bare ms" "C ms" "C sql ms" "SQL ms" \
	"base ms" "SQL/C" "SQL/bare" "C tps" "SQL tps" "SQL/C"
for ((round = 0; round < rounds; round++)); do
	o=$order t=$tps_order
	if ((round % 2)); then
		o=$(printf '%s\n' $order | tac | tr '\n' ' ') t=$(printf '%s\n' $tps_order | tac | tr '\n' ' ')
	fi
	cur_base_ms=- cur_base_tps=-
	for m in $o; do
		case $m in
		bare) measure bare_ms ms postgres "SELECT bench_bare_update($keys)" ;;
		c) measure c_ms ms postgres "$per_call" ;;
		c_sql) measure c_sql_ms ms postgres "$per_call" "-c ratelimit.direct_access=off" ;;
		sqled) measure sqled_ms ms sqled "$per_call" "-c search_path=limits,public" ;;
		base) measure base_ms ms sqled_base "$per_call" "-c search_path=limits,public" ;;
		esac
	done
	for m in $t; do
		case $m in
		c) measure c_tps tps postgres ;;
		sqled) measure sqled_tps tps sqled "-c search_path=limits,public" ;;
		base) measure base_tps tps sqled_base "-c search_path=limits,public" ;;
		esac
	done
	printf '%-7s %9.0f %9.0f %9.0f %9.0f %9s %7.2f %7.2f %9.0f %9.0f %7.2f\n' "$((round + 1))" \
		"$cur_bare_ms" "$cur_c_ms" "$cur_c_sql_ms" "$cur_sqled_ms" \
		"$([ "$cur_base_ms" = - ] && echo - || printf '%.0f' "$cur_base_ms")" \
		"$(ratio "$cur_sqled_ms" "$cur_c_ms")" "$(ratio "$cur_sqled_ms" "$cur_bare_ms")" \
		"$cur_c_tps" "$cur_sqled_tps" "$(ratio "$cur_sqled_tps" "$cur_c_tps")"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

r_c=$(ratio_median sqled_ms c_ms) r_bare=$(ratio_median sqled_ms bare_ms)
r_tps=$(ratio_median sqled_tps c_tps)
printf '\n%-60s %12s %10s  %s\n' "SQL edition, per call, $keys keys in one statement (median of $rounds)" "ms" "ratio" "rounds"
printf '%-60s %12.0f %10s\n' "bare UPDATE loop in PL/pgSQL" "$(med bare_ms)" "-"
printf '%-60s %12.0f %10s\n' "C edition, table store, direct path (baseline)" "$(med c_ms)" "1.00"
printf '%-60s %12.0f %10s  %s\n' "C edition, table store, SQL path" "$(med c_sql_ms)" "$(ratio_median c_sql_ms c_ms)" "$(ratio_range c_sql_ms c_ms)"
printf '%-60s %12.0f %10s  %s\n' "SQL edition" "$(med sqled_ms)" "$r_c" "$(ratio_range sqled_ms c_ms)"
printf '%-60s %12s %10s  %s\n' "SQL edition / bare UPDATE loop" "" "$r_bare" "$(ratio_range sqled_ms bare_ms)"
printf '%-60s %12s %10s  %s\n' "SQL edition / C edition, SQL path" "" "$(ratio_median sqled_ms c_sql_ms)" "$(ratio_range sqled_ms c_sql_ms)"
printf '\n%-60s %12s %10s  %s\n' "end to end, 4 clients, prepared (median of $rounds x ${seconds}s)" "tps" "ratio" "rounds"
printf '%-60s %12.0f %10s\n' "C edition, one rl_limit per transaction (baseline)" "$(med c_tps)" "1.00"
printf '%-60s %12.0f %10s  %s\n' "SQL edition, one rl_limit per transaction" "$(med sqled_tps)" "$r_tps" "$(ratio_range sqled_tps c_tps)"
if [ -n "$base_install" ]; then
	printf '\n%-60s %12s %10s  %s\n' "this SQL edition against BASE=$base_rev's (median of $rounds)" "base" "this/base" "rounds"
	printf '%-60s %12.0f %10s  %s\n' "per call (ms; below 1 is faster)" "$(med base_ms)" "$(ratio_median sqled_ms base_ms)" "$(ratio_range sqled_ms base_ms)"
	printf '%-60s %12.0f %10s  %s\n' "end to end, 4 clients (tps; above 1 is faster)" "$(med base_tps)" "$(ratio_median sqled_tps base_tps)" "$(ratio_range sqled_tps base_tps)"
	printf '%-60s %12s %10s\n' "BASE per call / C edition, per call / bare, tps / C tps" "" \
		"$(ratio_median base_ms c_ms) $(ratio_median base_ms bare_ms) $(ratio_median base_tps c_tps)"
fi
printf '\n%-66s %-12s %16s  %s\n' "targets of the SQL edition (issue 37)" "target" "measured" "verdict"
target_width=12
target_row "SQL edition per call, existing keys / C edition (table store)" "<= 2.0" "$r_c" "<=" "$r_c" 2.0
target_row "SQL edition per call / bare UPDATE loop" "<= 1.8" "$r_bare" "<=" "$r_bare" 1.8
target_row "pgbench one call per transaction, SQL edition / C edition" ">= 0.7" "$r_tps" ">=" "$r_tps" 0.7
printf '%s\n' "(load average $load before the rounds, $load_after after; 2 shared cores: only ratios within one run mean anything)"
