#!/usr/bin/env bash
# The middleware examples (examples/middleware/, docs/middleware.md), each
# served over real HTTP against the cluster run-tests.sh started: Express
# with node-postgres, Flask and FastAPI with psycopg 3, and Django.  For
# each, in a fresh database with a limit 'api' of 5 tokens refilling one a
# minute, under a pinned clock (so every field is exact), curl checks that:
# - a burst of 7 requests of one key gets exactly 5 answers 200, with
#   RateLimit r=4..0 and t=60..300, then 429s with Retry-After 60,
#   RateLimit r=0;t=60 and RateLimit-Policy q=1;w=60, and exactly 5 rows
#   written by the handler committed;
# - a handler that writes and then fails answers 500 without the RateLimit
#   fields, its row is rolled back and its token returned (rl_value is 5,
#   and the key's next request shows r=4);
# - a route costing 2 tokens takes 2 (r=3, r=1, then 429 with r=1);
# - 12 requests of one key sent at once get exactly 5 answers 200;
# - while a handler of one key sleeps 2 s, the key's next request is
#   answered in under 0.5 s (the take does not hold the key's row).
# Node 18+ and npm (the packages express and pg, installed under
# $RL_TMP/node from the npm registry) and the Debian packages
# python3-psycopg, python3-psycopg-pool, python3-flask, python3-fastapi,
# python3-uvicorn, python3-django and python3-psycopg2 (installed when
# root or sudo) are needed only here; an integration that cannot run is
# skipped with the reason, and the suite exits 77 (skipped) unless all ran.
# RL_MW_PORT=N serves Express on port N, Flask on N+1, FastAPI on N+2 and
# Django on N+3 (default: free ports the system picks); RL_MW_PYTHON names
# another interpreter than /usr/bin/python3.
source "$(dirname "$0")/lib.sh"
rl_choose_tmp

if [ -n "${RL_IN_ROOT:-}" ]; then
	rl_log "middleware: skipped in the Debian root of PostgreSQL $RL_PG_MAJOR (it runs on the host's major, $RL_HOST_MAJOR)"
	exit 77
fi

mw=$RL_REPO/examples/middleware
work=$RL_TMP/middleware
rm -rf "$work"
mkdir -p "$work"
pids=()
dbs=()
cleanup() {
	for pid in ${pids[@]+"${pids[@]}"}; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	for db in ${dbs[@]+"${dbs[@]}"}; do
		"$RL_BIN/dropdb" --force --if-exists "$db" 2>/dev/null || true
	done
}
trap cleanup EXIT

failures=0
fail() {
	rl_log "middleware $app: FAILED: $*"
	failures=$((failures + 1))
}
# check WHAT GOT WANT
check() {
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}
# sql DB QUERY: one value
sql() {
	"$RL_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "$2"
}

# A fresh database with the extension, the limit, the handlers' table,
# and the clock pinned for every session the app opens.
make_db() {
	local db=$1
	"$RL_BIN/dropdb" --force --if-exists "$db" 2>/dev/null
	"$RL_BIN/createdb" "$db"
	dbs+=("$db")
	"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" >"$work/$db.setup" <<SQL
CREATE EXTENSION ratelimit;
SELECT rl_define('api', 'token bucket', 1, '1 minute', capacity => 5);
CREATE TABLE hits (who text NOT NULL, path text NOT NULL);
ALTER DATABASE $db SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SQL
}

# serve LOG COMMAND...: start an app in the background, wait for the port
# it prints, set base to its URL.
serve() {
	local log=$1 port=
	shift
	"$@" >"$log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 300); do
		port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$log")
		[ -n "$port" ] && break
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$port" ]; then
		cat "$log" >&2
		fail "the app did not start"
		return 1
	fi
	base=http://127.0.0.1:$port
}

# get USER PATH: one request as USER; sets status, seconds (how long it
# took), and hdr to the headers file and body to the body file.
get() {
	local out
	hdr=$work/$app.hdr body=$work/$app.body
	out=$(curl -s -o "$body" -D "$hdr" -w '%{http_code} %{time_total}' -H "X-User: $1" "$base$2") || out="none 0"
	status=${out% *} seconds=${out#* }
}
# field NAME: the value of a header of the last response ("" if absent).
field() {
	sed -n "s/^$1: //Ip" "$hdr" | tr -d '\r'
}

# The checks, against the app at $base and its database $db.
exercise() {
	local i statuses="" want
	# a burst of 7 of one key: 5 granted, counting down, then refused
	for i in 1 2 3 4 5; do
		get alice /hello
		check "burst request $i: status" "$status" 200
		check "burst request $i: RateLimit" "$(field RateLimit)" "\"api\";r=$((5 - i));t=$((60 * i))"
		check "burst request $i: RateLimit-Policy" "$(field RateLimit-Policy)" '"api";q=1;w=60'
		check "burst request $i: Retry-After" "$(field Retry-After)" ""
	done
	for i in 6 7; do
		get alice /hello
		check "burst request $i: status" "$status" 429
		check "burst request $i: Retry-After" "$(field Retry-After)" 60
		check "burst request $i: RateLimit" "$(field RateLimit)" '"api";r=0;t=60'
		check "burst request $i: RateLimit-Policy" "$(field RateLimit-Policy)" '"api";q=1;w=60'
		check "burst request $i: body" "$(tr -d ' \n' <"$body")" '{"error":"ratelimitexceeded","retry_after":60}'
	done
	check "rows the granted requests committed" "$(sql "$db" "SELECT count(*) FROM hits WHERE who = 'alice'")" 5
	check "tokens alice holds" "$(sql "$db" "SELECT value FROM rl_value('api', 'alice')")" 0

	# a failing handler: 500, its row and its token rolled back
	get bob /fail
	check "failing handler: status" "$status" 500
	check "failing handler: RateLimit" "$(field RateLimit)" ""
	check "failing handler: rows kept" "$(sql "$db" "SELECT count(*) FROM hits WHERE who = 'bob'")" 0
	check "failing handler: tokens bob holds" "$(sql "$db" "SELECT value FROM rl_value('api', 'bob')")" 5
	get bob /hello
	check "after the failure: status" "$status" 200
	check "after the failure: RateLimit" "$(field RateLimit)" '"api";r=4;t=60'

	# a count of 2
	get carol /export
	check "count 2, first: RateLimit" "$status $(field RateLimit)" '200 "api";r=3;t=120'
	get carol /export
	check "count 2, second: RateLimit" "$status $(field RateLimit)" '200 "api";r=1;t=240'
	get carol /export
	check "count 2, third: refused" "$status $(field Retry-After) $(field RateLimit)" '429 60 "api";r=1;t=60'
	check "tokens carol holds" "$(sql "$db" "SELECT value FROM rl_value('api', 'carol')")" 1

	# 12 at once: exactly 5 granted
	statuses=$(for i in $(seq 1 12); do
		printf 'url = "%s/hello"\noutput = "%s"\n' "$base" "$work/$app.parallel.$i"
	done | curl -s --no-progress-meter --parallel --parallel-max 12 -H "X-User: dave" \
		-w '%{http_code}\n' --config - | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
	check "12 at once" "$statuses" "200:5 429:7 "
	check "rows the concurrent requests committed" "$(sql "$db" "SELECT count(*) FROM hits WHERE who = 'dave'")" 5

	# a slow request (its handler sleeps 2 s) does not hold back the same
	# key's next one: once the slow handler is running (its transaction is
	# open), a second request of the key is answered in well under a second
	curl -s -o /dev/null -w '%{http_code}' -H "X-User: erin" "$base/slow" >"$work/$app.slow" &
	local slow=$! running=0
	for i in $(seq 1 50); do
		running=$(sql "$db" "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'")
		[ "$running" != 0 ] && break
		sleep 0.1
	done
	check "slow handler running" "$running" 1
	get erin /hello
	check "beside a slow request: status" "$status $(field RateLimit)" '200 "api";r=3;t=120'
	check "beside a slow request: answered in under 0.5 s" \
		"$(awk -v s="$seconds" 'BEGIN { print (s < 0.5) ? "yes" : "no (" s " s)" }')" yes
	wait "$slow" || true
	check "slow request: status" "$(cat "$work/$app.slow")" 200
	check "rows erin committed" "$(sql "$db" "SELECT count(*) FROM hits WHERE who = 'erin'")" 2
}

# run_app NAME: make the database, serve, exercise; counts failures.
ran=() skipped=()
run_app() {
	app=$1
	db=ratelimit_mw_$app
	local before=$failures port=0
	make_db "$db"
	if [ -n "${RL_MW_PORT:-}" ]; then
		port=$((RL_MW_PORT + $2))
	fi
	shift 2
	if serve "$work/$app.log" env PGDATABASE="$db" PORT="$port" "$@"; then
		exercise
	fi
	ran+=("$app")
	if [ "$failures" = "$before" ]; then
		rl_log "middleware $app: every check passed"
	else
		rl_log "middleware $app: server log:"
		tail -20 "$work/$app.log" >&2
	fi
}

# Express: node 18+ and npm, express and pg from the npm registry.
node_ready() {
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "node and npm are not installed"
		return 1
	fi
	if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 18 ]; then
		echo "node $(node --version) is too old (express 5 needs 18)"
		return 1
	fi
	mkdir -p "$RL_TMP/node"
	cp "$mw/express/package.json" "$RL_TMP/node/"
	if ! npm install --prefix "$RL_TMP/node" --no-audit --no-fund --prefer-offline --loglevel=error \
		>"$work/npm.log" 2>&1; then
		echo "npm install of express and pg failed (no network?): $(tail -3 "$work/npm.log" | tr '\n' ' ')"
		return 1
	fi
}
if why=$(node_ready); then
	run_app express 0 env NODE_PATH="$RL_TMP/node/node_modules" node "$mw/express/app.js"
else
	rl_log "middleware express: skipped: $why"
	skipped+=(express)
fi

# The Python ones: the system's python3 (the Debian packages' interpreter,
# whatever python3 comes first in PATH) with the Debian packages of each.
PY=${RL_MW_PYTHON:-/usr/bin/python3}
# py_ready NAME MODULES PACKAGE...: PY imports MODULES (a comma-separated
# list), after PACKAGEs are installed with apt-get if need be; else says why.
py_ready() {
	local name=$1 modules=$2
	shift 2
	"$PY" -c "import $modules" 2>/dev/null && return 0
	if ! rl_is_root && ! { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; then
		echo "$* are not all installed, and installing them needs root (sudo apt-get install $*)"
		return 1
	fi
	if ! (rl_ensure_packages "$@") >"$work/apt-$name.log" 2>&1 ||
		! "$PY" -c "import $modules" 2>/dev/null; then
		echo "installing $* failed: $(tail -3 "$work/apt-$name.log" | tr '\n' ' ')"
		return 1
	fi
}
# run_py NAME OFFSET MODULES PACKAGE...: serve examples/middleware/NAME/app.py
# on port RL_MW_PORT + OFFSET and check it, or skip it saying why.
run_py() {
	local name=$1 offset=$2 why
	shift 2
	if why=$(py_ready "$name" "$@"); then
		run_app "$name" "$offset" sh -c 'cd "$1" && exec "$2" app.py' - "$mw/$name" "$PY"
	else
		rl_log "middleware $name: skipped: $why"
		skipped+=("$name")
	fi
}
# Flask with psycopg 3 and psycopg_pool.
run_py flask 1 flask,psycopg,psycopg_pool python3-psycopg python3-psycopg-pool python3-flask
# FastAPI served by uvicorn, with psycopg 3's AsyncConnectionPool.
run_py fastapi 2 fastapi,uvicorn,psycopg,psycopg_pool python3-fastapi python3-uvicorn python3-psycopg python3-psycopg-pool
# Django on its own PostgreSQL backend, which is psycopg2 before Django 4.2.
run_py django 3 django,psycopg2 python3-django python3-psycopg2

if [ "$failures" -gt 0 ]; then
	rl_log "middleware: $failures checks FAILED"
	exit 1
fi
if [ ${#skipped[@]} -gt 0 ]; then
	rl_log "middleware: skipped ${skipped[*]}${ran[*]:+ (${ran[*]} passed)}"
	exit 77
fi
rl_log "middleware: Express, Flask, FastAPI and Django answered every check"
