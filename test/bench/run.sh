#!/usr/bin/env bash
# make bench: a throwaway cluster, then pgbench runs measured side by side,
# each the median of RL_BENCH_REPS runs of RL_BENCH_SECONDS seconds, with
# ratios against the baseline of its row.
#
#   per call: rl_limit over 100,000 existing keys in one statement, against
#   a PL/pgSQL loop of bare UPDATEs and a PL/pgSQL reference limiter on an
#   identical table (reference.sql); and the first call for 100,000 keys.
#
#   hot key: 16 clients, every call on one global limit, shards => 1 and
#   shards => 16, against 16 clients on distinct random keys.
source "$(dirname "$0")/../lib.sh"
here=$RL_REPO/test/bench
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
SELECT rl_limit('keys', k) FROM generate_series(1, 100000) AS k;
SELECT rl_limit('hot16', NULL, 1) FROM generate_series(1, 200);
SQL
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$here/reference.sql" >/dev/null
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
INSERT INTO bench_state SELECT 'keys', k::text, 0, 1e9, now() FROM generate_series(1, 100000) AS k;
VACUUM ANALYZE;
SQL

# milliseconds for one statement
ms() {
	"$RL_BIN/psql" -X -At -c "SELECT bench_ms(\$\$$1\$\$)"
}

# a fresh name for each run of the first-call measurement
fresh=0
first_calls() {
	fresh=$((fresh + 1))
	"$RL_BIN/psql" -X -q -c "SELECT rl_define('new$fresh', 'token bucket', 1e9, '1 second')" >/dev/null
	ms "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('new$fresh', k)).ok"
}

# tps of one pgbench run: pgbench FILE CLIENTS [extra args]
tps() {
	local file=$1 clients=$2
	shift 2
	"$RL_BIN/pgbench" -n -M prepared -c "$clients" -j 2 -T "$seconds" \
		-f "$here/$file" "$@" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}

# the median of $reps runs
median() {
	local runs=()
	for ((i = 0; i < reps; i++)); do runs+=("$("$@")"); done
	printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(((reps + 1) / 2))p"
}

# a / b, to two places
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'
}

limit_ms=$(median ms "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('keys', k)).ok")
bare_ms=$(median ms "SELECT bench_bare_update(100000)")
plpgsql_ms=$(median ms "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (bench_plpgsql_limit('keys', k::text, 1)).ok")
first_ms=$(median first_calls)

keys16=$(median tps keys.sql 16)
hot1=$(median tps hot.sql 16 -D limit=hot1)
hot16=$(median tps hot.sql 16 -D limit=hot16)

printf '\n%-52s %12s %10s\n' "per call, 100,000 keys in one statement (median of $reps)" "ms" "ratio"
printf '%-52s %12.0f %10s\n' "bare UPDATE loop in PL/pgSQL (baseline)" "$bare_ms" "1.00"
printf '%-52s %12.0f %10.2f\n' "PL/pgSQL reference limiter" "$plpgsql_ms" "$(ratio "$plpgsql_ms" "$bare_ms")"
printf '%-52s %12.0f %10.2f\n' "rl_limit, existing keys" "$limit_ms" "$(ratio "$limit_ms" "$bare_ms")"
printf '%-52s %12.0f %10.2f\n' "rl_limit, first call for new keys" "$first_ms" "$(ratio "$first_ms" "$bare_ms")"

printf '\n%-52s %12s %10s\n' "hot key, 16 clients (median of $reps x ${seconds}s)" "tps" "ratio"
printf '%-52s %12.0f %10s\n' "distinct random keys (baseline)" "$keys16" "1.00"
printf '%-52s %12.0f %10.2f\n' "one global limit, shards => 1" "$hot1" "$(ratio "$hot1" "$keys16")"
printf '%-52s %12.0f %10.2f\n' "one global limit, shards => 16" "$hot16" "$(ratio "$hot16" "$keys16")"

# Scale-out through the PL/Proxy router: clusters of its own.
rl_stop_quietly
bench_tap=$RL_TMP/bench-tap
rm -rf "$bench_tap"
mkdir -p "$bench_tap"
if rl_is_root; then chown postgres: "$bench_tap"; fi
pgxs=$(dirname "$RL_BIN")/lib/pgxs
(cd "$bench_tap" && rl_as_server env PATH="$RL_BIN:$PATH" TESTDIR="$bench_tap" \
	PG_REGRESS="$pgxs/src/test/regress/pg_regress" \
	RL_BENCH_REPS="$reps" RL_BENCH_SECONDS="$seconds" \
	perl -I "$pgxs/src/test/perl" "$here/router.pl" 2>/dev/null | grep -v '^\(ok\|1\.\.\)')
