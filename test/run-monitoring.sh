#!/usr/bin/env bash
# The monitoring recipe of docs/monitoring.md, run: Debian's
# prometheus-postgres-exporter with examples/monitoring/postgres_exporter.yml,
# against the cluster run-suites.sh started (or one started by hand, with
# RL_PORT naming it).  A fresh database makes known calls; the exporter,
# on 127.0.0.1 and a free port of 55522-55529 (RL_EXPORTER_PORTS), is
# scraped once, and every ratelimit metric of those calls must have the
# exact value: the counters per limit, and the rl_stats_info gauges as
# psql reads them at the same moment.
#
# Exits 77 (skipped) when the exporter is not installed and cannot be:
# neither root nor password-less sudo, no network, or in a Debian root of
# another major (test/majors/) that lacks the package.
source "$(dirname "$0")/lib.sh"
rl_choose_tmp

skip() {
	rl_log "monitoring: SKIPPED: $*"
	exit 77
}

# RL_EXPORTER: another postgres_exporter binary (a newer release, say).
exporter=${RL_EXPORTER:-prometheus-postgres-exporter}
queries=$RL_REPO/examples/monitoring/postgres_exporter.yml

# The exporter: installed already, or installed now from Debian.
if ! command -v "$exporter" >/dev/null; then
	[ -n "${RL_IN_ROOT:-}" ] && skip "$exporter is not installed in this Debian root of PostgreSQL $RL_PG_MAJOR"
	sudo=()
	if ! rl_is_root; then
		if ! { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; then
			skip "$exporter is not installed, and installing it needs root: sudo apt-get install $exporter"
		fi
		sudo=(sudo -n)
	fi
	# On a host running systemd, Debian also starts the packaged service
	# (port 9187, the local cluster); the test runs its own instance.
	rl_log "installing $exporter"
	apt_install() {
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -o DPkg::Lock::Timeout=600 \
			-y -qq --no-install-recommends "$exporter" >/dev/null
	}
	apt_install 2>/dev/null || { "${sudo[@]}" apt-get update -qq && apt_install; } ||
		skip "could not install $exporter (no network?)"
fi
# The help read whole first: grep -q stops at the first match, and under
# pipefail the exporter's SIGPIPE for the rest would fail the check.
exporter_help=$("$exporter" --help 2>&1 || true)
grep -q -- '--extend.query-path' <<<"$exporter_help" ||
	rl_die "$exporter has no --extend.query-path: $("$exporter" --version 2>&1 | head -1)"
rl_log "monitoring: $("$exporter" --version 2>&1 | head -1)"

# The scrape: curl, or Perl's HTTP::Tiny where curl is missing.
fetch() {
	if command -v curl >/dev/null; then
		curl -fsS --max-time 10 "$1"
	else
		perl -MHTTP::Tiny -e '
			my $r = HTTP::Tiny->new(timeout => 10)->get($ARGV[0]);
			$r->{success} or die "$r->{status} $r->{reason}\n";
			print $r->{content};' "$1"
	fi
}

db=ratelimit_monitoring
out=$RL_TMP/monitoring
rm -rf "$out"
mkdir -p "$out"
exporter_pid=
cleanup() {
	if [ -n "$exporter_pid" ]; then
		kill "$exporter_pid" 2>/dev/null || true
		wait "$exporter_pid" 2>/dev/null || true
	fi
	"$RL_BIN/dropdb" --if-exists "$db" 2>/dev/null || true
}
trap cleanup EXIT

psql_db() { "$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }

"$RL_BIN/dropdb" --if-exists "$db" 2>/dev/null
"$RL_BIN/createdb" "$db"
psql_db -c 'CREATE EXTENSION ratelimit'
storage=$(psql_db -At -c 'SELECT storage FROM rl_stats_info')
[ "$storage" = "shared memory" ] || [ "$storage" = "dsm registry" ] ||
	rl_die "rl_stats is $storage here: the cluster must preload ratelimit"
keys_before=$(psql_db -At -c 'SELECT memory_keys FROM rl_stats_info')

# The known calls, at pinned times (2026-01-01 00:00:00 UTC is 1767225600):
# mon_bucket  a bucket of 5: 7 calls, 5 granted, 2 refused (the last at
#             00:00:30), then a count of 6 it can never grant: 1 error
# mon_reserve a bucket of 2 that may go 10 below zero: 2 tokens, then 3
#             reserved: 2 granted, 1 reservation 3 deep, 5 tokens
# mon_memory  a memory limit, 2 keys: 2 granted, 2 more keys in the store
# mon_wait    a row another session holds locked for a while: the key made
#             first, the holder's call, then one that waits: 1 lock wait
# mon_shadow  a bucket of 1 in shadow mode: 3 calls granted, 2 of them
#             counted as shadow refusals
# mon_block   a bucket of 1 with block_for: 3 calls, 1 granted, 2 refused,
#             the first refusal (00:00:30) blocks the key, the second not
# mon_bucket  also one refused rl_check: check_refused, and no call
# mon_refused a bucket of 1 with block_for, on the real clock (rl_refused
#             counts in windows of it): 3 calls on key 'a', 1 granted, 2
#             refused, the first of which blocks the key.  rl_stats_reset()
#             first, so that names earlier suites refused in this window
#             take no room in rl_refused, and its only rows are these.
psql_db >"$out/calls.out" <<'SQL'
SELECT rl_stats_reset();
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('mon_bucket', 'token bucket', 5, '1 hour');
SELECT rl_define('mon_reserve', 'token bucket', 2, '1 hour', max_reserved => 10);
SELECT rl_define('mon_memory', 'token bucket', 3, '1 hour', storage => 'memory');
SELECT rl_define('mon_wait', 'token bucket', 10, '1 hour');
SELECT rl_define('mon_shadow', 'token bucket', 1, '1 hour', shadow => true);
SELECT rl_define('mon_block', 'token bucket', 1, '1 hour', block_for => '1 hour');
SELECT (rl_limit('mon_shadow', 'k')).ok, (rl_limit('mon_block', 'k')).ok;
SELECT (rl_limit('mon_bucket', 'user:1')).ok FROM generate_series(1, 5);
SET ratelimit.now_override = '2026-01-01 00:00:20+00';
SELECT (rl_limit('mon_bucket', 'user:1')).ok;
SET ratelimit.now_override = '2026-01-01 00:00:30+00';
SELECT (rl_limit('mon_bucket', 'user:1')).ok;
SELECT (rl_check('mon_bucket', 'user:1')).ok;
SELECT (rl_limit('mon_shadow', 'k')).ok, (rl_limit('mon_block', 'k')).ok;
SELECT (rl_limit('mon_shadow', 'k')).ok, (rl_limit('mon_block', 'k')).ok;
DO $$ BEGIN
	PERFORM rl_limit('mon_bucket', 'user:1', 6);
	RAISE 'a count of 6 was not refused with 22023';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END $$;
SELECT (rl_limit('mon_reserve', NULL, 2)).ok;
SELECT ok, remaining FROM rl_limit('mon_reserve', NULL, 3, reserve => true);
SELECT (rl_limit('mon_memory', k)).ok FROM unnest(ARRAY['a', 'b']) k;
SELECT (rl_limit('mon_wait', 'k')).ok;
RESET ratelimit.now_override;
SELECT rl_define('mon_refused', 'token bucket', 1, '1 hour', block_for => '1 hour');
SELECT (rl_limit('mon_refused', 'a')).ok FROM generate_series(1, 3);
SQL
# The holder keeps the row until the waiter is seen waiting for a lock
# (at most 30 s), so that the wait happens however slow the machine.
PGAPPNAME=mon_holder psql_db >"$out/holder.out" 2>&1 <<'SQL' &
BEGIN;
SELECT (rl_limit('mon_wait', 'k')).ok;
DO $$ BEGIN
	FOR i IN 1..300 LOOP
		PERFORM pg_stat_clear_snapshot();
		EXIT WHEN EXISTS (SELECT FROM pg_stat_activity
			WHERE application_name = 'mon_waiter' AND wait_event_type = 'Lock');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT pg_sleep(0.2);
COMMIT;
SQL
holder=$!
for _ in $(seq 300); do
	[ "$(psql_db -At -c "SELECT count(*) FROM pg_stat_activity
		WHERE application_name = 'mon_holder' AND state = 'active' AND query LIKE 'DO%'")" = 1 ] && break
	sleep 0.1
done
PGAPPNAME=mon_waiter psql_db -At -c "SELECT (rl_limit('mon_wait', 'k')).ok" >>"$out/calls.out"
wait "$holder" || rl_die "the session holding mon_wait failed: $(cat "$out/holder.out")"

# What psql reads of rl_stats_info, to compare with the gauges.
IFS='|' read -r max_names names untracked mem_storage mem_max_keys mem_keys mem_full <<<"$(psql_db -At -c \
	'SELECT max_names, names, untracked_calls, memory_storage, memory_max_keys, memory_keys, memory_full_errors FROM rl_stats_info')"
[ $((mem_keys - keys_before)) -ge 2 ] || rl_die "the memory store holds $mem_keys keys, $keys_before before the calls"

# The exporter, on the first free port.
port=
for p in ${RL_EXPORTER_PORTS:-55522 55523 55524 55525 55526 55527 55528 55529}; do
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		port=$p
		break
	fi
done
[ -n "$port" ] || rl_die "no free port for the exporter among ${RL_EXPORTER_PORTS:-55522-55529}"
DATA_SOURCE_NAME="host=$RL_SOCK port=$RL_PORT user=postgres dbname=$db sslmode=disable" \
	"$exporter" --web.listen-address="127.0.0.1:$port" \
	--extend.query-path="$queries" >"$out/exporter.log" 2>&1 &
exporter_pid=$!
url=http://127.0.0.1:$port/metrics
for _ in $(seq 100); do
	kill -0 "$exporter_pid" 2>/dev/null || rl_die "the exporter exited: $(cat "$out/exporter.log")"
	fetch "$url" >"$out/metrics" 2>/dev/null && break
	sleep 0.1
done
fetch "$url" >"$out/metrics"
rl_log "monitoring: scraped $url into $out/metrics"

failures=0
# check METRIC SELECTOR WANT: the one sample of METRIC whose labels contain
# SELECTOR has the value WANT (compared as numbers), or lies in WANT's
# range LOW..HIGH.
check() {
	local metric=$1 sel=$2 want=$3 got
	got=$(awk -v m="$metric{" -v s="$sel" 'index($0, m) == 1 && index($0, s) { print $NF }' "$out/metrics")
	if [ "$(printf '%s\n' "$got" | grep -c .)" != 1 ]; then
		printf 'FAIL %s{%s}: %s samples: %s\n' "$metric" "$sel" "$(printf '%s\n' "$got" | grep -c .)" "$got" >&2
		failures=$((failures + 1))
	elif ! awk -v g="$got" -v w="$want" 'BEGIN {
			n = split(w, r, "\\.\\.");
			exit !(n == 2 ? (g + 0 >= r[1] + 0 && g + 0 <= r[2] + 0) : (g + 0 == w + 0)) }'; then
		printf 'FAIL %s{%s}: %s, expected %s\n' "$metric" "$sel" "$got" "$want" >&2
		failures=$((failures + 1))
	fi
}

# limit NAME calls granted refused errors tokens reservations deepest
#       lock_waits lock_wait_seconds last_refusal reset shadow_refused blocks
#       check_refused
limit() {
	local sel="datname=\"$db\",name=\"$1\","
	check ratelimit_calls_total "$sel" "$2"
	check ratelimit_granted_total "$sel" "$3"
	check ratelimit_refused_total "$sel" "$4"
	check ratelimit_errors_total "$sel" "$5"
	check ratelimit_tokens_total "$sel" "$6"
	check ratelimit_reservations_total "$sel" "$7"
	check ratelimit_deepest_reservation_tokens "$sel" "$8"
	check ratelimit_lock_waits_total "$sel" "$9"
	check ratelimit_lock_wait_seconds_total "$sel" "${10}"
	check ratelimit_both_shards_busy_total "$sel" 0
	check ratelimit_last_refusal_timestamp_seconds "$sel" "${11}"
	check ratelimit_reset_timestamp_seconds "$sel" "${12}"
	check ratelimit_shadow_refused_total "$sel" "${13}"
	check ratelimit_blocks_total "$sel" "${14}"
	check ratelimit_check_refused_total "$sel" "${15}"
}
t0=1767225600
#     name        calls granted refused errors tokens reserv. deepest waits wait_s  last_refusal reset         shadow blocks checks
limit mon_bucket  8     5       2       1      5      0       0       0     0       $((t0 + 30)) $t0           0      0      1
limit mon_reserve 2     2       0       0      5      1       3       0     0       0            $((t0 + 30))  0      0      0
limit mon_memory  2     2       0       0      2      0       0       0     0       0            $((t0 + 30))  0      0      0
limit mon_shadow  3     3       0       0      1      0       0       0     0       0            $t0           2      0      0
limit mon_block   3     1       2       0      1      0       0       0     0       $((t0 + 30)) $t0           0      1      0
# mon_wait's calls ran on the real clock; the wait lasted 0.2 s or more.
limit mon_wait    3     3       0       0      3      0       0       1     0.1..60 0            1e9..4e9      0      0      0
limit mon_refused 3     1       2       0      1      0       0       0     0       1e9..4e9     1e9..4e9      0      1      0
# rl_refused: the one key refused on the real clock.
rf="datname=\"$db\",key=\"a\",name=\"mon_refused\""
check ratelimit_refused_refusals "$rf" 2
check ratelimit_refused_blocks "$rf" 1
check ratelimit_refused_error "$rf" 0
check ratelimit_refused_since_timestamp_seconds "$rf" 1e9..4e9
# Nothing else of this database.
n=$(grep -c "^ratelimit_[a-z_]*{datname=\"$db\"," "$out/metrics" || true)
[ "$n" = 109 ] || { echo "FAIL: $n samples of database $db, expected 109 (7 limits, 15 metrics; one refused key, 4 metrics)" >&2; failures=$((failures + 1)); }

# rl_stats_info, as psql read it just before the scrape.
st="storage=\"$storage\""
check ratelimit_stats_max_names "$st" "$max_names"
check ratelimit_stats_names "$st" "$names"
check ratelimit_stats_untracked_calls_total "$st" "$untracked"
check ratelimit_stats_reset_timestamp_seconds "$st" 1e9..4e9
mt="storage=\"$mem_storage\""
check ratelimit_memory_max_keys "$mt" "$mem_max_keys"
check ratelimit_memory_keys "$mt" "$mem_keys"
check ratelimit_memory_full_errors_total "$mt" "$mem_full"
check ratelimit_memory_empty_since_timestamp_seconds "$mt" 0

# The exporter read the file and ran every query without an error.
check pg_exporter_user_queries_load_error "postgres_exporter.yml" 0
grep -q '^pg_up 1$' "$out/metrics" || { echo "FAIL: pg_up is not 1" >&2; failures=$((failures + 1)); }
grep -q '^pg_exporter_last_scrape_error 0$' "$out/metrics" ||
	{ echo "FAIL: pg_exporter_last_scrape_error is not 0" >&2; failures=$((failures + 1)); }
if grep -i 'level=error' "$out/exporter.log" >&2; then
	echo "FAIL: the exporter logged errors ($out/exporter.log)" >&2
	failures=$((failures + 1))
fi

# Every metric docs/monitoring.md names (its tables, its alerts) is one the
# exporter served.
for m in $(grep -oP '\b(pg_settings_)?ratelimit_[a-z_]*[a-z]\b' "$RL_REPO/docs/monitoring.md" | sort -u); do
	grep -q "^${m}[{ ]" "$out/metrics" || { echo "FAIL: docs/monitoring.md names $m, which the exporter did not serve" >&2; failures=$((failures + 1)); }
done

if [ "$failures" -gt 0 ]; then
	rl_log "monitoring: FAILED: $failures checks (metrics in $out/metrics)"
	exit 1
fi
rl_log "monitoring: every ratelimit metric the exporter served had its expected value"
