#!/usr/bin/env bash
# make bench-external (also the last section of make bench): rl_limit against
# the limiters users would pick instead, measured side by side by
# compare.js: rate-limiter-flexible's RateLimiterPostgres on the same
# server, and a Lua token bucket in Redis.
#
# Unlike the rest of make bench, this cluster runs with fsync = on and
# synchronous_commit = on (set with ALTER SYSTEM and checked by compare.js):
# the comparison is about what a durable commit costs.  It also runs with
# checkpoint_timeout = 30min and max_wal_size = 8GB, so that no checkpoint
# falls inside the runs (see compare.js's setup), and with autovacuum off,
# so that no run is charged for WAL a background vacuum wrote (compare.js
# vacuums after its setup; the runs are too short to need more).  Three
# redis-server processes of our own, on Unix sockets only (port 0) under
# ./tmp/redis: AOF everysec, AOF always, and no persistence.
#
# Installs, under ./tmp only and only for this target: the npm packages of
# package-lock.json (npm ci), and when missing the Debian packages nodejs
# and npm (unless a node is already installed) and redis-tools, which holds
# the redis-server program (the redis-server package would add a system
# service, which we do not want).
#
#   RL_EXT_SECONDS (default 1.5) seconds measured per run, after 0.3 s warm-up
#   RL_EXT_ROUNDS (default 3)   interleaved rounds; each figure is the median
#   RL_EXT_CLIENTS ("1 8 32")   concurrencies of the PostgreSQL shapes
#   RL_EXT_SHAPES (default all)  the shapes run: alone hot app refused redis
#   RL_EXT_FIGURES_FILE         where to write the figures (default below)
#   RL_BENCH_INSTALLED=1        skip the build (make bench has just done it)
#
# compare.js also writes the figures it prints under "ratios at 8 clients"
# to ./tmp/bench-external/figures-at-8.txt ("name value" lines, "-" when not
# measured), from which make bench prints its table of targets.
source "$(dirname "$0")/../../lib.sh"
here=$RL_REPO/test/bench/external

rl_ensure_packages
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	rl_ensure_packages nodejs npm
fi
rl_ensure_packages redis-tools
rl_choose_tmp

# The npm packages, reinstalled when the lock file changes.
ext=$RL_TMP/bench-external
if ! cmp -s "$here/package-lock.json" "$ext/installed-lock.json" 2>/dev/null; then
	rl_log "installing the npm packages into $ext"
	rm -rf "$ext"
	mkdir -p "$ext"
	cp "$here/package.json" "$here/package-lock.json" "$ext/"
	npm ci --prefix "$ext" --no-audit --no-fund --loglevel=error >/dev/null
	cp "$here/package-lock.json" "$ext/installed-lock.json"
fi

# redis-server is redis-check-rdb under another name (the program picks
# its role from the name it is run as).
redis_dir=$RL_TMP/redis
redis_bin=$(command -v redis-server || true)
if [ -z "$redis_bin" ]; then
	mkdir -p "$redis_dir"
	ln -sf "$(command -v redis-check-rdb)" "$redis_dir/redis-server"
	redis_bin=$redis_dir/redis-server
fi

redis_pids=()
stop_all() {
	for pid in "${redis_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rl_stop_quietly
}
trap stop_all EXIT

# start_redis MODE: a redis-server in $redis_dir/MODE, socket redis.sock
start_redis() {
	local mode=$1 dir=$redis_dir/$1 aof=yes fsync=$1
	if [ "$mode" = none ]; then aof=no fsync=everysec; fi
	rm -rf "$dir"
	mkdir -p "$dir"
	cat >"$dir/redis.conf" <<CONF
port 0
unixsocket $dir/redis.sock
unixsocketperm 700
dir $dir
logfile $dir/redis.log
daemonize no
save ""
appendonly $aof
appendfsync $fsync
CONF
	"$redis_bin" "$dir/redis.conf" &
	redis_pids+=($!)
	for _ in $(seq 100); do
		redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	rl_die "redis-server ($mode) did not start: see $dir/redis.log"
}

if [ -z "${RL_BENCH_INSTALLED:-}" ]; then rl_install >/dev/null; fi
rl_start
"$RL_BIN/psql" -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
ALTER SYSTEM SET fsync = on;
ALTER SYSTEM SET synchronous_commit = on;
ALTER SYSTEM SET max_connections = 100;
-- no checkpoint during the runs (compare.js checkpoints after its setup,
-- then changes every page once, so that no run writes full-page images)
ALTER SYSTEM SET checkpoint_timeout = '30min';
ALTER SYSTEM SET max_wal_size = '8GB';
-- WAL is counted cluster-wide: a vacuum would be charged to the run it
-- lands in (the 0 bytes of a refused call among them)
ALTER SYSTEM SET autovacuum = off;
-- the application shape's memory limit holds 100,000 keys
ALTER SYSTEM SET ratelimit.memory_max_keys = 200000;
SQL
rl_as_server "$RL_BIN/pg_ctl" -D "$RL_DATA" -l "$RL_LOGDIR/postgresql.log" -w restart >/dev/null
redis_sockets=
for mode in everysec always none; do
	start_redis "$mode"
	redis_sockets+="$mode=$redis_dir/$mode/redis.sock "
done

rl_log "external comparison: fsync = on, synchronous_commit = on; ${RL_EXT_ROUNDS:-3} rounds of ${RL_EXT_SECONDS:-1.5}s per run"
printf '\nagainst rate-limiter-flexible and Redis, through node-postgres and node-redis\n'
figures=${RL_EXT_FIGURES_FILE:-$ext/figures-at-8.txt}
rm -f "$figures"
RL_EXT_REDIS=$redis_sockets RL_EXT_FIGURES=$figures NODE_PATH=$ext/node_modules node "$here/compare.js"
