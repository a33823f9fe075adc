#!/usr/bin/env bash
# test/sql-edition/run.sh: the SQL edition (sql-edition/), built by make
# sql-edition, then
#   1. its pg_tle script is valid SQL, and the body it passes to
#      pgtle.install_extension (a stub that keeps it, since pg_tle is not
#      packaged here) is the plain install byte for byte;
#   2. it installs with one psql -f on a cluster that does not load the C
#      library, as a role that is not a superuser and has only USAGE and
#      CREATE on one schema;
#   3. its types, tables and functions are declared as the C edition's
#      (shape.sql on both, compared by shape.pl, which lists the exceptions
#      and what the SQL edition lacks, each with its reason);
#   4. the isolation specs of what it has (SPECS below) run against it with
#      the C edition's expected output, the extension's creation and drop
#      replaced by emptying its tables, and its own specs
#      (test/sql-edition/specs) where its answer differs;
#   5. the differential test (differential.pl) compares it, call for call,
#      with the C edition on the test cluster (RL_PORT, running):
#      RL_SQLED_CALLS calls (default 100000 on the host's major, four to eight
#      minutes here, and 20000 in the Debian roots of the others), seed
#      RL_SQLED_SEED (default 1).
# The plain cluster runs on RL_PORT + 1 and is stopped at the end.
source "$(dirname "$0")/../lib.sh"

rl_choose_tmp
if [ "$RL_PG_MAJOR" = "$RL_HOST_MAJOR" ]; then
	calls=${RL_SQLED_CALLS:-100000}
else
	calls=${RL_SQLED_CALLS:-20000}
fi
seed=${RL_SQLED_SEED:-1}
plain=$RL_TMP/sqled-plain
port=$((RL_PORT + 1))
data=$plain/data
sock=$plain/sock
fail() {
	rl_log "FAILED: $*"
	exit 1
}
stop_plain() {
	if [ -f "$data/postmaster.pid" ]; then
		rl_as_server "$RL_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
	fi
}
trap stop_plain EXIT

install=$(make -C "$RL_REPO" -s --no-print-directory sql-edition | tail -1)
pgtle=${install%.sql}.pgtle.sql
[ -f "$install" ] && [ -f "$pgtle" ] || fail "make sql-edition did not print the install script's path"
chmod a+r "$install" "$pgtle"

stop_plain
rm -rf "$plain"
mkdir -p "$data" "$sock" "$plain/log"
if rl_is_root; then chown postgres: "$data" "$sock" "$plain/log"; fi
rl_as_server "$RL_BIN/initdb" -D "$data" -U postgres --auth=trust --no-sync -E UTF8 --no-locale >/dev/null
rl_as_server env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE -u PGOPTIONS \
	"$RL_BIN/pg_ctl" -D "$data" -l "$plain/log/postgresql.log" -w \
	-o "-p $port -k $sock -c listen_addresses=''" start >/dev/null || fail "the plain cluster did not start"
plain_psql() { "$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$sock" -p "$port" "$@"; }

# 1. The pg_tle script, against a stub of pgtle.install_extension.
rl_log "the pg_tle script: valid SQL, and its body is the plain install"
plain_psql -U postgres -d postgres -c "CREATE DATABASE tle" \
	-c "CREATE DATABASE sqled" -c "CREATE ROLE rl_app LOGIN" -c "CREATE ROLE rl_caller LOGIN"
plain_psql -U postgres -d tle <<'SQL'
CREATE SCHEMA pgtle;
CREATE TABLE pgtle.installed (name text, version text, description text, body text, requires text[]);
CREATE FUNCTION pgtle.install_extension(name text, version text, description text, ext text, requires text[] DEFAULT NULL)
RETURNS boolean LANGUAGE sql
AS $$INSERT INTO pgtle.installed VALUES (name, version, description, ext, requires) RETURNING true$$;
SQL
plain_psql -U postgres -d tle -f "$pgtle" >/dev/null || fail "the pg_tle script is not valid SQL"
got=$(plain_psql -U postgres -d tle -At -c "SELECT name || ' ' || version || ' ' || md5(body) FROM pgtle.installed")
want="ratelimit_sql 1.3 $(md5sum <"$install" | cut -d' ' -f1)"
[ "$got" = "$want" ] || fail "pg_tle body differs from the install: got '$got', want '$want'"

# 2. The install, as a role with only USAGE and CREATE on one schema.
rl_log "install as a role that is not a superuser, into a schema it may only create in"
plain_psql -U postgres -d sqled -c "REVOKE CREATE ON SCHEMA public FROM PUBLIC" \
	-c "CREATE SCHEMA limits" -c "GRANT USAGE, CREATE ON SCHEMA limits TO rl_app" \
	-c "GRANT USAGE ON SCHEMA limits TO rl_caller"
# A second role with CREATE on the schema (rl_peer) plants, before the
# install and after it, an exact match for every operator and internal
# function call that would otherwise need an implicit cast (plant.sql):
# the edition must never resolve to one, in anything below.
ops=$(sed 's/--.*//' "$install" | grep -oE '[-+*/<>=~!@#%^&|]+' | sort -u | tr '\n' ' ')
ops="$ops = <> < > <= >= ~~"
# The install refuses a schema where PUBLIC may create.
out=$(plain_psql -U postgres -d tle -c "GRANT CREATE ON SCHEMA public TO PUBLIC" 2>&1 &&
	PGOPTIONS="-c search_path=public" plain_psql -1 -U rl_app -d tle -f "$install" 2>&1 >/dev/null |
	grep -E '^psql|^DETAIL|^HINT' | sed 's/^psql:[^ ]* //') || :
want="ERROR:  schema \"public\" allows CREATE to PUBLIC
DETAIL:  Any role could create objects there that the edition's functions would run with its owner's rights.
HINT:  Revoke CREATE on the schema from PUBLIC, or install into a schema of its own."
[ "$out" = "$want" ] || fail "install into a schema where PUBLIC may create: got
$out"
plain_psql -U postgres -d tle -c "REVOKE CREATE ON SCHEMA public FROM PUBLIC" \
	-c "CREATE ROLE rl_peer LOGIN" -c "CREATE SCHEMA limits"
PGOPTIONS="-c search_path=limits" plain_psql -1 -U postgres -d tle -f "$install" >/dev/null ||
	fail "the install failed"
sigs_of() {
	plain_psql -U postgres -d "$1" -At -c "SET search_path = limits" -c "SELECT pg_catalog.string_agg(p.proname
		|| '|' || pg_catalog.array_to_string(p.proargtypes::regtype[]::text[], ',') || '|' || p.pronargdefaults
		|| '|' || pg_catalog.pg_get_function_result(p.oid), E'\n')
		FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'limits'::regnamespace AND p.proname ~ '^_rl_'"
}
plant() {
	plain_psql -U rl_peer -d sqled -v ops="$ops" -v sigs="$(sigs_of "$1")" \
		-f "$RL_REPO/test/sql-edition/plant.sql" 2>&1 >/dev/null | sed 's/^NOTICE:  /   /' >&2
}
plain_psql -U postgres -d sqled -c "GRANT USAGE, CREATE ON SCHEMA limits TO rl_peer"
rl_log "planting operators and functions in the schema, before the install"
plant tle
PGOPTIONS="-c search_path=limits -c zz_planted.installing=on" plain_psql -1 -U rl_app -d sqled -f "$install" >/dev/null ||
	fail "the install failed"
rl_log "planting operators and functions in the schema, after the install"
plant sqled
lib=$(plain_psql -U postgres -d sqled -At -c "SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = 'ratelimit'")
[ "$lib" = 0 ] || fail "the C edition is installed in the SQL edition's database"
edition=$(plain_psql -U rl_caller -d sqled -At -c "SELECT edition || ' ' || version FROM limits.rl_sql_edition()")
[ "$edition" = "sql 1.3" ] || fail "rl_sql_edition() says '$edition'"

# 3. The declarations, as installed, against the C edition's on the test
# cluster (before the suites below add functions of their own).
rl_log "declarations: the SQL edition's types, tables and functions as the C edition's"
"$RL_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS sqled_c" -c "CREATE DATABASE sqled_c"
"$RL_BIN/psql" -X -q -d sqled_c -c "CREATE EXTENSION ratelimit"
shape=$RL_TMP/sqled-shape
rm -rf "$shape"
mkdir -p "$shape"
"$RL_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d sqled_c -f "$RL_REPO/test/sql-edition/shape.sql" >"$shape/c.txt"
PGOPTIONS="-c search_path=limits" plain_psql -At -U rl_app -d sqled \
	-f "$RL_REPO/test/sql-edition/shape.sql" >"$shape/sql.txt"
perl "$RL_REPO/test/sql-edition/shape.pl" "$shape/c.txt" "$shape/sql.txt" "$RL_REPO/docs/managed.md" ||
	fail "the SQL edition's declarations differ from the C edition's"

# Grants as the C edition's, and a caller's temporary table in front of
# the edition's on its search_path changes nothing.
rl_log "privileges and search_path: a caller with only USAGE on the schema"
plain_psql -U rl_app -d sqled -c "SET search_path = limits" \
	-c "SELECT rl_define('guard', 'token bucket', 1, '1 hour')" >/dev/null
out=$(plain_psql -U rl_caller -d sqled -At 2>&1 <<'SQL'
CREATE TEMP TABLE rate_limits (name text, key text, shard smallint, value float8, ts timestamptz, prev float8);
INSERT INTO rate_limits VALUES ('guard', 'k', 0, 100, now(), NULL);
SET search_path = pg_temp, limits;
SELECT ok FROM rl_limit('guard', 'k');
SELECT ok FROM rl_limit('guard', 'k');
SELECT ok FROM limits.rl_limit('x', 'k', config => limits.rl_token_bucket(1, '1 second'));
\set ON_ERROR_STOP 0
\set SHOW_CONTEXT never
SELECT limits.rl_define('mine', 'token bucket', 1, '1 second');
SELECT limits.rl_reset('guard', 'k');
SELECT limits.rl_refund('guard', 'k');
SELECT limits._rl_us(now());
SELECT count(*) FROM limits.rate_limits;
SET ratelimit.now_override = '2030-01-01 00:00:00+00';
SELECT ok FROM rl_limit('guard', 'k');
SQL
)
want="t
f
t
ERROR:  permission denied for function rl_define
ERROR:  permission denied for function rl_reset
ERROR:  permission denied for function rl_refund
ERROR:  permission denied for function _rl_us
ERROR:  permission denied for table rate_limits
ERROR:  permission denied to pin the clock with ratelimit.now_override
DETAIL:  Only a superuser or a member of the role that owns the rate limits may set it.
HINT:  Reset ratelimit.now_override."
[ "$out" = "$want" ] || fail "privileges: got
$out"

# Keys and session settings the C edition does not see: an IPv4-mapped
# IPv6 address is its IPv4 address (src/access.c), and a window's origin
# is the same under standard_conforming_strings = off (each psql is a new
# session, so the PL/pgSQL bodies compile under that setting).
rl_log "inet keys as the C edition keys them; standard_conforming_strings = off"
out=$(plain_psql -U rl_caller -d sqled -At 2>&1 <<'SQL'
SET search_path = limits;
SELECT ok FROM rl_limit('mapped', '10.0.0.1'::inet, config => rl_token_bucket(1, '1 hour'));
SELECT ok FROM rl_limit('mapped', '::ffff:10.0.0.1'::inet, config => rl_token_bucket(1, '1 hour'));
SELECT ok FROM rl_limit('mapped', '::FFFF:0A00:0001/128'::inet, config => rl_token_bucket(1, '1 hour'));
SELECT ok FROM rl_limit('mapped', '::10.0.0.1'::inet, config => rl_token_bucket(1, '1 hour'));
\set ON_ERROR_STOP 0
\set SHOW_CONTEXT never
SELECT ok FROM rl_limit('mapped', '::ffff:10.0.0.0/120'::inet, config => rl_token_bucket(1, '1 hour'));
SQL
)
want="t
f
f
t
ERROR:  an inet rate limit key must be a host address
DETAIL:  The key has a netmask of 120 bits.
HINT:  Pass the caller's address; define the limit with ipv4_prefix or ipv6_prefix to count its network as one key."
[ "$out" = "$want" ] || fail "IPv4-mapped inet keys: got
$out"
scs_calls="SET search_path = limits;
SET ratelimit.now_override = '2026-01-01 00:00:00.5+00';
SELECT ok, remaining, reset_after_ms FROM rl_check('scs', 'k', config => rl_fixed_window(3, '1 hour'));
SELECT ok, remaining, reset_after_ms FROM rl_check('scs', NULL, config => rl_sliding_window(3, '7 seconds'));"
on=$(echo "$scs_calls" | plain_psql -U rl_app -d sqled -At 2>&1) || :
# PostgreSQL 19 no longer lets a session turn the setting off
if plain_psql -U rl_app -d sqled -At -c "SET standard_conforming_strings = off" >/dev/null 2>&1; then
	off=$( (echo "SET standard_conforming_strings = off;" && echo "$scs_calls") | plain_psql -U rl_app -d sqled -At 2>&1) || :
else
	rl_log "standard_conforming_strings cannot be turned off on this major: nothing to compare"
	off=$on
fi
[ "$on" = "$off" ] || fail "standard_conforming_strings = off: got
$off
where on gives
$on"

# 4. Isolation specs, as a superuser (some set deadlock_timeout); the
# calls run as the role that installed the edition, which owns them.
# (not the specs of the C edition's definition cache, cache_reset and
# cache_miss_race: the SQL edition has none, and reads every definition)
# Of the concurrency specs, lease_release_rr is not run: a REPEATABLE READ
# transaction cannot see a lease committed after its snapshot, and the
# edition refuses with 0A000 (sqled_concurrency_snapshots); and
# concurrency_redefine's look at pg_locks names the SQL edition's tag of
# the name's lock (sql-edition/65_concurrency.sql).
SPECS=${RL_SQLED_SPECS:-last_token new_key savepoint reservations isolation_levels \
	new_key_levels reads_never_block definition_cache hand_edits timeouts \
	held_grant limit_all_order limit_all_prefixes concurrency concurrency_lowered \
	concurrency_redefine lease_redefine block_race shards_both_busy \
	shards_holder_nowait shards_multixact shards_skip}
SPECS=$(echo $SPECS)
rl_log "isolation specs against the SQL edition: $SPECS"
# The name's lock of a concurrency limit, in pg_locks: the C edition's tag
# is (classid rl_key_hash(name), objid 0, objsubid 16382); the SQL
# edition's, (rl_key_hash(name) + 16382, 0, 2).  In spec and expected alike.
sqled_tags='s/AND classid = rl_key_hash(\('"'"'[^'"'"']*'"'"'\))$/AND classid = ((rl_key_hash(\1)::bigint + 16382) % 4294967296)::oid/
s/AND objid = 0 AND objsubid = 16382$/AND objid = 0 AND objsubid = 2/'
iso=$RL_TMP/sqled-iso
rm -rf "$iso"
mkdir -p "$iso/specs" "$iso/expected"
for spec in $SPECS; do
	sed -e 's/^\([[:space:]]*\)CREATE EXTENSION IF NOT EXISTS ratelimit;/\1TRUNCATE rate_limits, rl_definitions, rl_leases;/' \
		-e 's/^\([[:space:]]*\)DROP EXTENSION ratelimit;/\1TRUNCATE rate_limits, rl_definitions, rl_leases;/' \
		-e "$sqled_tags" "$RL_REPO/test/specs/$spec.spec" >"$iso/specs/$spec.spec"
	sed -e "$sqled_tags" "$RL_REPO/test/expected/$spec.out" >"$iso/expected/$spec.out"
done
# and the SQL edition's own, where its answer differs (each says why)
for f in "$RL_REPO"/test/sql-edition/specs/*.spec; do
	spec=$(basename "$f" .spec)
	cp "$f" "$iso/specs/"
	cp "$RL_REPO/test/sql-edition/expected/$spec.out" "$iso/expected/" 2>/dev/null || :
	SPECS="$SPECS $spec"
done
if rl_is_root; then chown -R postgres: "$iso"; fi
pgxs=$(dirname "$RL_BIN")/lib/pgxs
if ! (cd "$iso" && PGOPTIONS="-c search_path=limits" "$pgxs/src/test/isolation/pg_isolation_regress" \
	--inputdir="$iso" --outputdir="$iso" --bindir="$RL_BIN" --use-existing --dbname=sqled \
	--host="$sock" --port="$port" --user=postgres $SPECS); then
	cat "$iso/regression.diffs" 2>/dev/null || true
	fail "isolation specs against the SQL edition"
fi

# The regression suites of what it has, as the role that installed it,
# with the C edition's expected output (the extension's creation replaced
# by emptying its tables).  psql shows no error's CONTEXT,
# and an error's LOCATION and CONTEXT lines are left out of the expected
# output too: they name the source line that raised it, and PL/pgSQL's
# call stack, which the C edition's errors do not have.
# (not concurrency: it shows the C edition's lock tags in pg_locks)
REGRESS=${RL_SQLED_REGRESS:-define limit fixed_window keys reserve transactions limit_all_prefixes trigger_keys shards}
# rl_headers and rl_status: their suites define sharded limits too, so
# they run once the edition has shards (not gc: it creates a role, which
# the role that installed the edition may not; the differential test
# calls rl_gc)
if [ -z "${RL_SQLED_REGRESS:-}" ]; then
	if plain_psql -U rl_app -d sqled -c "SET search_path = limits" -c "BEGIN" \
		-c "SELECT rl_define('shards?', 'token bucket', 1, '1 second', shards => 2)" \
		-c "ROLLBACK" >/dev/null 2>&1; then
		REGRESS="$REGRESS http_headers status"
	else
		rl_log "not yet the suites http_headers and status: the edition has no shards"
	fi
fi
rl_log "regression suites against the SQL edition: $REGRESS"
reg=$RL_TMP/sqled-regress
rm -rf "$reg"
mkdir -p "$reg/sql" "$reg/expected"
for suite in $REGRESS; do
	for f in sql/$suite.sql expected/$suite.out; do
		{ echo '\set SHOW_CONTEXT never'; sed 's/^CREATE EXTENSION ratelimit;$/TRUNCATE rate_limits, rl_definitions, rl_leases;/' "$RL_REPO/$f"; } >"$reg/$f"
	done
done
if rl_is_root; then chown -R postgres: "$reg"; fi
plain_psql -U rl_app -d sqled -c "TRUNCATE limits.rate_limits, limits.rl_definitions, limits.rl_leases"
(cd "$reg" && PGOPTIONS="-c search_path=limits" "$pgxs/src/test/regress/pg_regress" \
	--inputdir="$reg" --outputdir="$reg" --bindir="$RL_BIN" --use-existing --dbname=sqled \
	--host="$sock" --port="$port" --user=rl_app $REGRESS >"$reg/pg_regress.log") || :
no_location() { grep -vE '^(LOCATION|CONTEXT):  |^(PL/pgSQL function|SQL function|SQL statement) ' "$1"; }
for suite in $REGRESS; do
	diff -u <(no_location "$reg/expected/$suite.out") <(no_location "$reg/results/$suite.out") ||
		fail "regression suite $suite against the SQL edition"
done

# sql/settle.sql's statements on the table store (not those of the memory
# store, the allow lists or rl_grant_sets, which the SQL edition has not),
# run on both editions, each error and answer compared line for line.
rl_log "sql/settle.sql on the table store, both editions compared"
perl -ne 'BEGIN { $s = "" } $s .= $_; $q ^= 1 for /\$\$/g;
	if (!$q && /;\s*$/) { print $s unless $s =~ /_m\x27|\x27memory\x27|settle_al_|rl_grant_sets/; $s = "" }' \
	"$RL_REPO/sql/settle.sql" >"$reg/settle_table.sql"
grep -q 'rl_settle' "$reg/settle_table.sql" || fail "no statement of sql/settle.sql kept"
chmod a+r "$reg/settle_table.sql"
settle_c=$("$RL_BIN/psql" -X -a -q -v SHOW_CONTEXT=never -d sqled_c -f "$reg/settle_table.sql" 2>&1)
settle_sql=$(PGOPTIONS="-c search_path=limits" plain_psql -a -v SHOW_CONTEXT=never -v ON_ERROR_STOP=0 \
	-U rl_app -d sqled -f "$reg/settle_table.sql" 2>&1)
diff -u <(echo "$settle_c") <(echo "$settle_sql") ||
	fail "sql/settle.sql on the table store: the editions differ"

# Permits under 12 clients while the limit changes between 1 and 3 by
# every route: a ledger kept outside any transaction (permits/hold.sql)
# never counts more holders than the limit allows.
rl_log "permits: 12 clients and changes of the limit, against a ledger"
plain_psql -U postgres -d sqled -c "CREATE SCHEMA stress" -c "CREATE SEQUENCE stress.enter" \
	-c "CREATE SEQUENCE stress.leave" -c "CREATE TABLE stress.over (inside bigint, permits float8)" \
	-c "GRANT ALL ON SCHEMA stress TO rl_app" -c "GRANT ALL ON ALL TABLES IN SCHEMA stress TO rl_app" \
	-c "GRANT ALL ON ALL SEQUENCES IN SCHEMA stress TO rl_app"
plain_psql -U rl_app -d sqled -c "SELECT limits.rl_define_concurrency('st', 2)" >/dev/null
"$RL_BIN/pgbench" -n -h "$sock" -p "$port" -U rl_app -c 12 -j 2 -T "${RL_SQLED_STRESS_SECS:-10}" \
	-f "$RL_REPO/test/sql-edition/permits/hold.sql@50" \
	-f "$RL_REPO/test/sql-edition/permits/redefine.sql@1" sqled >"$RL_TMP/sqled-permits.log" 2>&1 || :
granted=$(plain_psql -U postgres -d sqled -At -c "SELECT last_value FROM stress.enter")
over=$(plain_psql -U postgres -d sqled -At -c "SELECT count(*) || ' times, up to ' || COALESCE(max(inside), 0) FROM stress.over")
rl_log "   $granted permits granted; over the limit: $over"
[ "$over" = "0 times, up to 0" ] || fail "more holders than the limit allows: $over"
[ "$granted" -gt 1 ] || fail "no permit granted under the ledger (see $RL_TMP/sqled-permits.log)"

# 5. The differential test against the C edition, in the database of 3.
# rl_gc's memory pass also drops idle entries of the cluster's other
# databases, and of dropped ones, and counts them: forget every memory
# entry first, so that it finds none during the test (the SQL edition has
# no memory store)
for db in $("$RL_BIN/psql" -X -At -d postgres -c "SELECT datname FROM pg_database WHERE datallowconn"); do
	"$RL_BIN/psql" -X -q -At -d "$db" -c "SELECT rl_memory_forget(false) FROM pg_extension WHERE extname = 'ratelimit'" >/dev/null 2>&1 || true
done
"$RL_BIN/psql" -X -q -At -d sqled_c -c "SELECT rl_gc(1000000000)" >/dev/null
rl_log "differential test: $calls random calls, C edition and SQL edition side by side"
perl "$RL_REPO/test/sql-edition/differential.pl" --calls "$calls" --seed "$seed" \
	--c "$RL_BIN/psql -h $RL_SOCK -p $RL_PORT -U postgres -d sqled_c" \
	--sql "env PGOPTIONS=-csearch_path=limits $RL_BIN/psql -h $sock -p $port -U rl_app -d sqled" ||
	fail "the editions answered differently"
"$RL_BIN/psql" -X -q -d postgres -c "DROP DATABASE sqled_c"

# No planted operator or function ran inside the edition.
if grep -q 'planted \(operator\|function\)' "$plain/log/postgresql.log"; then
	grep 'planted \(operator\|function\)' "$plain/log/postgresql.log" | sort | uniq -c | sort -rn | head -20
	fail "the edition ran code planted in its schema"
fi
