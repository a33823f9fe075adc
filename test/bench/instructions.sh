#!/usr/bin/env bash
# make bench-instructions [BASE=REV]: instructions per call, counted by
# valgrind (callgrind), for one build or for REV's build and this one.
# Timing cannot show a per-call cost unchanged to within 5% on a shared
# machine (two rounds of the same build differ by 0.73 to 1.21), and the
# hardware counters are not there in a VM; an instruction count does not
# depend on the load, so it moves only when the code does.
#
#   test/bench/instructions.sh [REV]
#
# The builds are versions.sh's: "this" (the working tree) under
# $RL_TMP/versions/this, REV's under $RL_TMP/versions/base.  Each gets a
# fresh data directory (no server is started): the setup runs natively in
# a single-user backend (postgres --single), then one single-user backend
# runs the figures under valgrind --tool=callgrind.  Each figure is a
# warm-up (the same statements, on the same keys where the figure is about
# existing keys), then INSTR_CALLS statements (default 1,000).  A call of
# pg_backend_pid() between the parts makes callgrind dump its counters
# (--dump-before), so each part is counted alone; a part between two
# markers with nothing in it counts what the markers cost, and is
# subtracted.  A figure is (part - empty part) / calls, the empty part
# the cheaper of one before the figures and one after them.
#
# Each statement of the "statement" figures is its own transaction, as a
# client calls it, and runs a statement prepared in the warm-up (EXECUTE,
# as make bench's pgbench -M prepared), so it includes the executor, the
# commit and sending the row; "above SELECT 1" subtracts the same build's
# SELECT 1.  "Parsed and planned each call" sends the whole statement each
# time (a client that does not prepare): it adds the parse analysis and
# planning of a call of rl_limit, which read the defaults of every
# overload of rl_limit.
# The two "in one statement" figures are INSTR_CALLS calls in one
# statement (make bench's per-call rows), their statement's own cost
# spread over the calls.  A statement the build does not support prints
# n/a (the memory store before 1.3).
#
# The counts are deterministic to within 0.02% (two runs of each build
# differed by at most 57 instructions per call, most figures by none);
# what varies is work that depends on the time: the backend's flush of its
# statistics, at most once a second, and the clock's readings.
# INSTR_REPEAT=2 runs every build twice and prints both counts and their
# difference.  The callgrind files of the measured parts are left in
# $RL_TMP/versions/SIDE/instr/ for callgrind_annotate.
source "$(dirname "$0")/../lib.sh"
base_rev=${1:-}
calls=${INSTR_CALLS:-1000}
repeat=${INSTR_REPEAT:-1}
[[ $calls =~ ^[1-9][0-9]*$ ]] || rl_die "INSTR_CALLS must be a positive whole number"
[[ $repeat =~ ^[12]$ ]] || rl_die "INSTR_REPEAT must be 1 or 2"
if [ -n "$base_rev" ]; then
	base_commit=$(git -C "$RL_REPO" rev-parse --verify -q "$base_rev^{commit}") ||
		rl_die "BASE=$base_rev is not a git revision of $RL_REPO"
	sides="base this"
else
	sides="this"
fi
this_desc=$(git -C "$RL_REPO" describe --always --dirty)

rl_ensure_packages
rl_ensure_packages valgrind
rl_choose_tmp
versions=$RL_TMP/versions
started=$SECONDS

# use SIDE: the installation and data directory of SIDE
use() {
	rl_use_dir "$versions/$1"
	RL_DATA=$versions/$1/instr/data
	out=$versions/$1/instr
}
# single [postgres options]: a single-user backend on SIDE's data directory,
# reading statements from standard input
single() {
	rl_as_server "$RL_BIN/postgres" --single -D "$RL_DATA" "$@" postgres
}

# Neither installation is replaced under a running server: make bench
# BASE= stops its clusters when done, and these backends end with their
# input.
mkdir -p "$versions"
for side in $sides; do
	rl_use_dir "$versions/$side"
	rl_stop_quietly
done
rl_install_versions "$versions" "$base_rev" "${base_commit:-}"

setup=(
	"CREATE EXTENSION ratelimit"
	"SELECT rl_define('keys', 'token bucket', 1e9, '1 second')"
	"SELECT count(*) FROM generate_series(1, 100000) AS k WHERE (rl_limit('keys', k)).ok"
	"SELECT rl_define('refused', 'token bucket', 1, '100 years')"
	"SELECT rl_limit('refused')"
	"SELECT rl_define('mem', 'token bucket', 1e9, '1 second', storage => 'memory')"
	"VACUUM ANALYZE"
	"CHECKPOINT"
)

# The figures: label, kind (statement or loop), the statements that set
# the session up for it (run in its warm-up) and the measured statement,
# in which K is the key's number.  Keys: 1..calls exist; new keys start at
# 200,001 (the warm-up) and 300,001 (the measured calls).
labels=() kinds=() preludes=() stmts=() warms=() firsts=()
figure() {
	labels+=("$1")
	kinds+=("$2")
	preludes+=("$3")
	stmts+=("$4")
	# the warm-up's first key and the measured part's first key
	warms+=("$5")
	firsts+=("$6")
}
figure "SELECT 1 (the floor: no ratelimit code)" statement "PREPARE p_one AS SELECT 1;" "EXECUTE p_one;" 1 1
figure "rl_limit, existing keys, table store, direct path" statement "PREPARE p_keys(text) AS SELECT ok FROM rl_limit('keys', \$1);" "EXECUTE p_keys('K');" 1 1
figure "  the same, ratelimit.direct_access = off" statement "SET ratelimit.direct_access = off;" "EXECUTE p_keys('K');" 1 1
figure "rl_limit, first call for new keys, table store" statement "RESET ratelimit.direct_access;" "EXECUTE p_keys('K');" 200001 300001
figure "rl_limit, existing keys, memory store" statement "PREPARE p_mem(text) AS SELECT ok FROM rl_limit('mem', \$1);" "EXECUTE p_mem('K');" 1 1
figure "rl_limit, refused call (one key)" statement "PREPARE p_refused AS SELECT ok FROM rl_limit('refused');" "EXECUTE p_refused;" 1 1
figure "rl_limit, existing keys, parsed and planned each call" simple "" "SELECT ok FROM rl_limit('keys', 'K');" 1 1
figure "rl_limit, existing keys, in one statement" loop "" "SELECT count(*) FROM generate_series(1, N) AS k WHERE (rl_limit('keys', k)).ok;" 1 1
figure "rl_limit, first call for new keys, in one statement" loop "" "SELECT count(*) FROM generate_series(F, F + N - 1) AS k WHERE (rl_limit('keys', k)).ok;" 400001 500001
# warm-up statements of a statement figure (at most calls)
warm_calls=$((calls < 200 ? calls : 200))

marker="SELECT pg_backend_pid();"
# the session: two markers around nothing, then per figure its warm-up and
# its measured part, each between markers
session() {
	local f i n
	printf '%s\n%s\n' "$marker" "$marker"
	for ((f = 0; f < ${#labels[@]}; f++)); do
		[ -n "${preludes[$f]}" ] && printf '%s\n' "${preludes[$f]}"
		if [ "${kinds[$f]}" = loop ]; then
			printf '%s\n' "${stmts[$f]}" | sed "s/\\bF\\b/${warms[$f]}/g; s/\\bN\\b/$calls/g"
			printf '%s\n' "$marker"
			printf '%s\n' "${stmts[$f]}" | sed "s/\\bF\\b/${firsts[$f]}/g; s/\\bN\\b/$calls/g"
		else
			# existing keys: the warm-up calls every key the measured part calls
			n=$warm_calls
			[ "${warms[$f]}" = "${firsts[$f]}" ] && n=$calls
			for ((i = 0; i < n; i++)); do printf '%s\n' "${stmts[$f]/K/$((warms[f] + i))}"; done
			printf '%s\n' "$marker"
			for ((i = 0; i < calls; i++)); do printf '%s\n' "${stmts[$f]/K/$((firsts[f] + i))}"; done
		fi
		printf '%s\n' "$marker"
	done
	printf '%s\n%s\n' "$marker" "$marker"
}

# counts[SIDE,RUN,PART]: instructions of each dumped part
declare -A counts failed
for side in $sides; do
	use "$side"
	for ((run = 1; run <= repeat; run++)); do
		rm -rf "$out"
		mkdir -p "$RL_DATA"
		chown postgres: "$out" "$RL_DATA" 2>/dev/null || true
		rl_as_server "$RL_BIN/initdb" -D "$RL_DATA" -U postgres --auth=trust \
			--no-sync -E UTF8 --no-locale >/dev/null
		cat >>"$RL_DATA/postgresql.conf" <<CONF
fsync = off
shared_preload_libraries = 'ratelimit'
CONF
		for sql in "${setup[@]}"; do
			err=$(printf '%s\n' "$sql" | single 2>&1 >/dev/null | grep -m1 'ERROR' || true)
			[ -n "$err" ] && rl_log "$side: the setup statement $sql failed: $err"
		done
		# a figure whose statement fails on this build is not counted: one
		# call of it (on a key no part uses, after the preludes of the
		# figures up to it) before the session
		for ((f = 0; f < ${#labels[@]}; f++)); do
			err=$(printf '%s\n' "${preludes[@]:0:f+1}" "${stmts[$f]}" |
				sed 's/\bK\b/999999/; s/\bF\b/999999/g; s/\bN\b/1/g' |
				single 2>&1 >/dev/null | grep -m1 'ERROR' || true)
			failed[$side,$f]=$err
		done
		rl_log "$side, run $run: $((${#labels[@]})) figures of $calls calls under callgrind"
		session >"$out/session.sql"
		chmod a+r "$out/session.sql"
		rl_as_server valgrind --tool=callgrind --dump-before=pg_backend_pid \
			--callgrind-out-file="$out/callgrind.out" \
			"$RL_BIN/postgres" --single -D "$RL_DATA" postgres \
			<"$out/session.sql" >"$out/session.log" 2>"$out/valgrind.log" ||
			rl_die "$side: the session under valgrind failed (see $out/valgrind.log)"
		for file in "$out"/callgrind.out.*; do
			part=${file##*.}
			counts[$side,$run,$part]=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$file")
		done
	done
done

# per_call SIDE RUN FIGURE: instructions per call, or nothing when the
# figure failed on SIDE.  Parts: 1 is the start, 2 an empty part, then per
# figure its warm-up and its measured part, then two empty parts.
per_call() {
	local side=$1 run=$2 f=$3
	[ -n "${failed[$side,$f]}" ] && return 0
	local part=${counts[$side,$run,$((4 + 2 * f))]}
	local empty=${counts[$side,$run,2]} end=${counts[$side,$run,$((3 + 2 * ${#labels[@]}))]}
	# the cheaper of the two empty parts: the other may hold a flush of
	# the statistics, which the backend does at most once a second
	((end < empty)) && empty=$end
	awk -v p="$part" -v e="$empty" -v n="$calls" 'BEGIN { printf "%.0f", (p - e) / n }'
}

printf '\ninstructions per call (callgrind), %d calls per figure\n' "$calls"
if [ -n "$base_rev" ]; then
	printf 'base %s (%s), this: the working tree (%s)\n' "$base_rev" "$(git -C "$RL_REPO" log -1 --format=%h "$base_commit")" "$this_desc"
else
	printf 'this: the working tree (%s)\n' "$this_desc"
fi
for side in $sides; do
	for ((run = 1; run <= repeat; run++)); do
		n=$((4 + 2 * ${#labels[@]}))
		printf '%s, run %d: the empty part %s instructions, at the end %s\n' "$side" "$run" \
			"${counts[$side,$run,2]}" "${counts[$side,$run,$((n - 1))]:-?}"
	done
done
for side in $sides; do
	for ((f = 0; f < ${#labels[@]}; f++)); do
		[ -n "${failed[$side,$f]}" ] && printf '%s: %s: %s\n' "$side" "${labels[$f]}" "${failed[$side,$f]}"
	done
done

declare -A value
for side in $sides; do
	for ((f = 0; f < ${#labels[@]}; f++)); do
		value[$side,$f]=$(per_call "$side" 1 "$f")
	done
done
# above SELECT 1: a statement figure less the same build's floor
above() {
	[ -n "$1" ] && [ -n "$2" ] && echo $(($1 - $2))
}
shown() { echo "${1:-n/a}"; }
# this/base to three places: the counts hold to far less than 0.001
rt() {
	if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; else echo n/a; fi
}
if [ -n "$base_rev" ]; then
	printf '\n%-52s %10s %10s %9s  %s\n' "figure" "base" "this" "this/base" "above SELECT 1: base, this, this/base"
	for ((f = 0; f < ${#labels[@]}; f++)); do
		b=${value[base,$f]} t=${value[this,$f]}
		printf '%-52s %10s %10s %9s' "${labels[$f]}" "$(shown "$b")" "$(shown "$t")" "$(rt "$t" "$b")"
		if [ "${kinds[$f]}" = statement ] && ((f > 0)); then
			ba=$(above "$b" "${value[base,0]}") ta=$(above "$t" "${value[this,0]}")
			printf '  %s, %s, %s' "$(shown "$ba")" "$(shown "$ta")" "$(rt "$ta" "$ba")"
		fi
		printf '\n'
	done
else
	printf '\n%-52s %10s  %s\n' "figure" "this" "above SELECT 1"
	for ((f = 0; f < ${#labels[@]}; f++)); do
		t=${value[this,$f]}
		printf '%-52s %10s' "${labels[$f]}" "$(shown "$t")"
		if [ "${kinds[$f]}" = statement ] && ((f > 0)); then
			printf '  %s' "$(shown "$(above "$t" "${value[this,0]}")")"
		fi
		printf '\n'
	done
fi
if ((repeat == 2)); then
	printf '\nthe same build twice (instructions per call: run 1, run 2, difference)\n'
	for side in $sides; do
		for ((f = 0; f < ${#labels[@]}; f++)); do
			a=$(per_call "$side" 1 "$f") b=$(per_call "$side" 2 "$f")
			[ -n "$a" ] && printf '%-5s %-52s %10s %10s %6s\n' "$side" "${labels[$f]}" "$a" "$b" "$((b - a))"
		done
	done
fi
printf '\n%d s; callgrind files of each part in %s/SIDE/instr/\n' "$((SECONDS - started))" "$versions"
