#!/usr/bin/env bash
# make bench BASE=REV and make bench-memory BASE=REV: this build against the
# build of git revision REV (the last release, HEAD, a branch), interleaved
# in one run, figure by figure.  Two runs of the same build minutes apart
# differ by more than most changes do (0.84 and 1.13 against the same
# baseline on the 2-core machine of docs/performance.md), so a regression
# can only be told from noise by measuring both builds in the same minutes.
#
#   test/bench/versions.sh REV [bench|memory]
#
# Two private installations under $RL_TMP/versions/, each its own copy of
# the server binaries (as rl_install makes) with its own build of ratelimit:
# "this" is the working tree (uncommitted changes included), "base" is REV,
# extracted with git archive into versions/base/src and built there (kept
# between runs of the same commit).  Each installation gets its own
# throwaway cluster (fsync = off, the library preloaded, a socket directory
# of its own, both on RL_PORT); both are stopped before anything is
# installed, so that no library file a running server has mapped is
# replaced.  Both clusters get the same setup; a statement the base
# revision does not support is reported, and the figures that need it
# print "n/a".
#
# Each of BENCH_ROUNDS rounds (default 5) measures every figure once on
# each build, back to back, the base build first in odd rounds and this one
# first in even rounds.  The table gives, for every figure and round, the
# base figure, this figure and this/base, then the median of the rounds'
# ratios and their range.  For milliseconds a ratio below 1 is faster, for
# calls per second above 1.  The bare UPDATE loop and SELECT 1 run no code
# of ratelimit: their ratios show the noise of the run.
#
# Figures: the section "bench" (make bench BASE=) measures the per-call,
# end-to-end, hot-key and concurrency rows of run.sh and the memory store's
# rows of memory.sh; "memory" (make bench-memory BASE=) only the latter.
# Knobs: BENCH_ROUNDS (default 5), RL_BENCH_SECONDS (default 5: the length
# of each pgbench run).
source "$(dirname "$0")/../lib.sh"
here=$RL_REPO/test/bench
# ratio
source "$here/targets.sh"
if [ $# -lt 1 ] || [ -z "$1" ]; then rl_die "usage: $0 REV [bench|memory]"; fi
base_rev=$1
section=${2:-bench}
case $section in
bench | memory) ;;
*) rl_die "make bench-$section does not take BASE: only make bench and make bench-memory compare two builds" ;;
esac
rounds=${BENCH_ROUNDS:-5}
seconds=${RL_BENCH_SECONDS:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || rl_die "BENCH_ROUNDS must be a positive whole number"
base_commit=$(git -C "$RL_REPO" rev-parse --verify -q "$base_rev^{commit}") ||
	rl_die "BASE=$base_rev is not a git revision of $RL_REPO"
this_desc=$(git -C "$RL_REPO" describe --always --dirty)

rl_ensure_packages
rl_choose_tmp
versions=$RL_TMP/versions
sides="base this"

# use SIDE: the installation, cluster and psql of SIDE
use() {
	rl_use_dir "$versions/$1"
}
stop_all() {
	for side in $sides; do
		use "$side"
		rl_stop_quietly
	done
}
trap stop_all EXIT

# Both clusters stopped before either installation is replaced
# (rl_install removes the installation and copies a new one in).
stop_all
mkdir -p "$versions"
rl_install_versions "$versions" "$base_rev" "$base_commit"

# Both the same setup, statement by statement; what one side lacks is
# reported (a figure that needs it then prints n/a).
setup=(
	"CREATE EXTENSION ratelimit"
	"SELECT rl_define('keys', 'token bucket', 1e9, '1 second')"
	"SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('keys', k)).ok"
	"SELECT rl_define('hot1', 'token bucket', 1e9, '1 second', shards => 1)"
	"SELECT rl_define('hot16', 'token bucket', 1e9, '1 second', shards => 16)"
	"SELECT count(*) FROM generate_series(1, 200) WHERE (rl_limit('hot16', NULL, 1)).ok"
	"SELECT rl_define('refused', 'token bucket', 1, '100 years')"
	"SELECT rl_limit('refused')"
	"SELECT rl_define_concurrency('conc', 4)"
	"SELECT rl_define('mem', 'token bucket', 1e9, '1 second', storage => 'memory')"
	"SELECT count(*) FROM generate_series(1, 10000) AS k WHERE (rl_limit('mem', k)).ok"
	"SELECT rl_limit('mem')"
)
for side in $sides; do
	use "$side"
	rl_start
	for sql in "${setup[@]}"; do
		out=$("$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -c "$sql" 2>&1 >/dev/null) ||
			rl_log "$side: the setup statement $sql failed: ${out%%$'\n'*}"
	done
	"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$here/reference.sql" >/dev/null
	"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -f "$here/reference_keys.sql" >/dev/null
done

# The figures, each: label, unit and a measuring command, run on the side
# in use; it prints one number, or nothing when the side cannot measure it.
ms() {
	"$RL_BIN/psql" -X -At -c "SELECT bench_ms(\$\$$1\$\$)" 2>/dev/null
}
ms_off() {
	PGOPTIONS="-c ratelimit.track_stats=off" ms "$@"
}
# the first call for 100,000 keys of a fresh name per round
first_calls() {
	"$RL_BIN/psql" -X -q -c "SELECT rl_define('new$round', 'token bucket', 1e9, '1 second')" >/dev/null 2>&1 &&
		ms "SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('new$round', k)).ok"
}
# tps FILE CLIENTS [pgbench args]: nothing when a call failed
tps() {
	local file=$1 clients=$2 out
	shift 2
	out=$("$RL_BIN/pgbench" -n -M prepared -c "$clients" -j 2 -T "$seconds" \
		-f "$here/$file" "$@" postgres 2>&1) || return 0
	printf '%s\n' "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}
per_call="SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('keys', k)).ok"
labels=() units=() commands=()
figure() {
	labels+=("$1")
	units+=("$2")
	commands+=("$3")
}
if [ "$section" = bench ]; then
	figure "bare UPDATE loop, 100,000 keys (no ratelimit code)" ms "ms 'SELECT bench_bare_update(100000)'"
	figure "rl_limit, 100,000 existing keys in one statement" ms "ms \"\$per_call\""
	figure "  the same, ratelimit.track_stats = off" ms "ms_off \"\$per_call\""
	figure "rl_limit, first call for 100,000 new keys" ms "first_calls"
	figure "PL/pgSQL reference limiter, 100,000 keys" ms "ms \"SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (bench_plpgsql_limit('keys', k::text, 1)).ok\""
	figure "bare UPDATE per transaction, 4 clients (no ratelimit code)" tps "tps bare.sql 4"
	figure "rl_limit per transaction, 4 clients" tps "tps keys.sql 4"
	figure "rl_limit per transaction, 16 clients" tps "tps keys.sql 16"
	figure "hot key, 16 clients, shards => 1" tps "tps hot.sql 16 -D limit=hot1"
	figure "hot key, 16 clients, shards => 16" tps "tps hot.sql 16 -D limit=hot16"
	figure "rl_limit, every call refused (one key), 4 clients" tps "tps refused.sql 4"
	figure "rl_acquire per transaction, 4 clients" tps "tps acquire.sql 4"
fi
figure "SELECT 1, 8 clients (no ratelimit code)" tps "tps select1.sql 8"
figure "memory store, 10,000 keys, 8 clients" tps "tps keys10k.sql 8 -D limit=mem"
figure "memory store, one hot key, 16 clients" tps "tps hot.sql 16 -D limit=mem"

# values[FIGURE,ROUND,SIDE]
declare -A values
rl_log "$rounds rounds of ${#labels[@]} figures on both builds (pgbench runs of ${seconds}s)"
for ((round = 1; round <= rounds; round++)); do
	order=$( ((round % 2)) && echo "base this" || echo "this base")
	for ((f = 0; f < ${#labels[@]}; f++)); do
		for side in $order; do
			use "$side"
			values[$f,$round,$side]=$(eval "${commands[$f]}" || true)
		done
	done
	rl_log "round $round of $rounds done"
done
stop_all

# a figure as printed: one place below 100, none above; n/a when missing
shown() {
	if [ -n "$1" ]; then awk -v v="$1" 'BEGIN { printf (v < 100 ? "%.1f" : "%.0f"), v }'; else echo n/a; fi
}

printf '\nthis build (%s) against base %s (%s), %d rounds interleaved\n' \
	"$this_desc" "$base_rev" "$(git -C "$RL_REPO" log -1 --format=%h "$base_commit")" "$rounds"
printf '%s\n' "(ms: lower is faster, this/base below 1 is faster; tps: higher is faster, this/base above 1 is faster)"
printf '\n%-58s %-4s %6s %10s %10s %10s\n' "figure" "unit" "round" "base" "this" "this/base"
for ((f = 0; f < ${#labels[@]}; f++)); do
	ratios=()
	first=1
	for ((round = 1; round <= rounds; round++)); do
		b=${values[$f,$round,base]} t=${values[$f,$round,this]}
		if [ -n "$b" ] && [ -n "$t" ]; then
			r=$(ratio "$t" "$b")
			ratios+=("$r")
		else
			r=n/a
		fi
		if ((first)); then
			printf '%-58s %-4s' "${labels[$f]}" "${units[$f]}"
			first=0
		else
			printf '%-58s %-4s' "" ""
		fi
		printf ' %6d %10s %10s %10s\n' "$round" "$(shown "$b")" "$(shown "$t")" "$r"
	done
	if [ ${#ratios[@]} -gt 0 ]; then
		printf '%s\n' "${ratios[@]}" | sort -g | awk -v w=58 '{ r[NR] = $1 }
			END { m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
				printf "%-*s %-4s %6s %10s %10s %10.2f  rounds %.2f-%.2f\n", w, "", "", "median", "", "", m, r[1], r[NR] }'
	else
		printf '%-58s %-4s %6s %10s %10s %10s\n' "" "" "median" "" "" "n/a"
	fi
done
