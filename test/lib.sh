# test/lib.sh: what the test and demo scripts share.  Sourced, not run.
#
# The server and client programs come from a private copy of the PostgreSQL
# installation of major RL_PG_MAJOR (default: the host's, 15) under
# $RL_TMP/install; PostgreSQL finds its share and lib
# directories relative to its own binary, so the extension is installed
# there and nothing outside the repository is written.  The server never
# runs as root: as root, it runs as the postgres account.

set -euo pipefail

RL_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RL_HOST_MAJOR=15
RL_PG_MAJOR=${RL_PG_MAJOR:-$RL_HOST_MAJOR}
RL_SYS_BIN=/usr/lib/postgresql/$RL_PG_MAJOR/bin
RL_PORT=${RL_PORT:-55432}
RL_PACKAGES="make gcc postgresql-$RL_PG_MAJOR postgresql-server-dev-$RL_PG_MAJOR libipc-run-perl sqlsmith postgresql-$RL_PG_MAJOR-cron postgresql-$RL_PG_MAJOR-plproxy"
# What the package and pgxn suites need (test/packaging/), installed only
# when they run (as root); a Debian root of another major has them already.
RL_PACKAGING_PACKAGES="build-essential debhelper dpkg-dev fakeroot postgresql-server-dev-all lintian pgxnclient git"
# The majors the checked-in debian/control lists (pg_buildext updatecontrol
# with these as PG_SUPPORTED_VERSIONS); 16 is listed but tested nowhere here.
RL_DEB_MAJORS="15 16 17 18 19"

# Where, inside a Debian root of another major (test/majors/), this
# checkout's copy lives: one per checkout, so that two can test at once.
rl_root_copy() {
	printf '/build/ratelimit-%s' "$(printf '%s' "$RL_REPO" | md5sum | cut -c1-12)"
}

rl_log() { printf '%s\n' "== $*" >&2; }
rl_die() { printf '%s\n' "error: $*" >&2; exit 1; }
rl_is_root() { [ "$(id -u)" = 0 ]; }

# Run a command as the account the server runs as.
rl_as_server() {
	if rl_is_root; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# Install the Debian packages the build and tests need (or the ones named,
# as rl_ensure_packages redis-tools), when missing.  In a Debian root of
# another major (test/majors/) they were installed with it.
rl_ensure_packages() {
	[ -n "${RL_IN_ROOT:-}" ] && return 0
	local missing=()
	for p in ${*:-$RL_PACKAGES}; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	rl_log "installing missing packages: ${missing[*]}"
	local sudo=()
	if ! rl_is_root; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo=(sudo)
		else
			rl_die "missing packages: ${missing[*]}. Install them with: sudo apt-get install ${missing[*]}"
		fi
	fi
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
	if rl_is_root && ! id postgres >/dev/null 2>&1; then
		useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
	fi
}

# Where the private installation and clusters live: ./tmp, unless the
# server account cannot reach the checkout (a root-only home directory).
rl_choose_tmp() {
	RL_TMP=$RL_REPO/tmp
	if rl_is_root && ! runuser -u postgres -- test -x "$RL_REPO"; then
		RL_TMP=/tmp/ratelimit-$(printf '%s' "$RL_REPO" | md5sum | cut -c1-12)
		rl_log "postgres cannot reach $RL_REPO; using $RL_TMP"
	fi
	rl_use_dir "$RL_TMP"
	export PGPORT=$RL_PORT PGUSER=postgres PGDATABASE=postgres
}

# Point the private installation, the cluster and psql at directory DIR
# (read by rl_install, rl_start and rl_stop_quietly).
rl_use_dir() {
	RL_INSTALL=$1/install
	RL_BIN=$RL_INSTALL/usr/lib/postgresql/$RL_PG_MAJOR/bin
	RL_PG_CONFIG=$RL_BIN/pg_config
	RL_DATA=$1/data
	RL_SOCK=$1/sock
	RL_LOGDIR=$1/log
	export PGHOST=$RL_SOCK
}

# A private copy of the PostgreSQL installation, with the extension in it.
rl_install() {
	local lib=$RL_INSTALL/usr/lib/postgresql/$RL_PG_MAJOR/lib
	local share=$RL_INSTALL/usr/share/postgresql
	rm -rf "$RL_INSTALL"
	mkdir -p "$lib" "$share" "$RL_INSTALL/usr/include"
	cp -a "$RL_SYS_BIN" "$RL_BIN"
	cp -a "/usr/share/postgresql/$RL_PG_MAJOR" "$share/"
	ln -s /usr/include/postgresql "$RL_INSTALL/usr/include/postgresql"
	# Only this checkout's build of ratelimit: none that the package or pgxn
	# suite (or anything else) put into the system's directories.
	rm -f "$share/$RL_PG_MAJOR"/extension/ratelimit[.-]*
	for f in /usr/lib/postgresql/$RL_PG_MAJOR/lib/*; do
		case ${f##*/} in ratelimit.*) continue ;; esac
		ln -s "$f" "$lib/"
	done
	chmod -R a+rX "$RL_TMP"
	rl_log "building and installing into $RL_INSTALL"
	make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" PG_CFLAGS="${RL_CFLAGS:-}" all
	make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" install >/dev/null
}

# rl_install_versions DIR [REV COMMIT]: this checkout's working tree
# installed into DIR/this and, given REV (as the user named it) and its
# COMMIT, that commit's build into DIR/base, side by side, as rl_install
# does it (both installations removed and copied in again: stop their
# servers first).  COMMIT is extracted with git archive into DIR/base/src
# and built there, kept while COMMIT stays the same.  Leaves rl_use_dir at
# DIR/this.
rl_install_versions() {
	local dir=$1 rev=${2:-} commit=${3:-}
	if [ -n "$commit" ]; then
		local src=$dir/base/src
		if [ "$(cat "$dir/base/src.commit" 2>/dev/null)" != "$commit" ]; then
			rm -rf "$src" "$dir/base/src.commit"
			mkdir -p "$src"
			git -C "$RL_REPO" archive "$commit" | tar -x -C "$src"
			printf '%s\n' "$commit" >"$dir/base/src.commit"
		fi
		rl_log "base: $rev ($(git -C "$RL_REPO" log -1 --format='%h %ad' --date=short "$commit")); this: the working tree ($(git -C "$RL_REPO" describe --always --dirty))"
		rl_use_dir "$dir/base"
		RL_REPO=$src RL_TMP=$dir/base rl_install >/dev/null
	fi
	rl_use_dir "$dir/this"
	RL_TMP=$dir/this rl_install >/dev/null
}

# A fresh cluster listening on a Unix socket only.
rl_start() {
	rl_stop_quietly
	rm -rf "$RL_DATA" "$RL_SOCK"
	mkdir -p "$RL_DATA" "$RL_SOCK" "$RL_LOGDIR"
	if rl_is_root; then chown postgres: "$RL_DATA" "$RL_SOCK" "$RL_LOGDIR"; fi
	rl_as_server "$RL_BIN/initdb" -D "$RL_DATA" -U postgres --auth=trust \
		--no-sync -E UTF8 --no-locale >/dev/null
	cat >>"$RL_DATA/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$RL_SOCK'
port = $RL_PORT
fsync = off
max_connections = 50
# sql/memory.sql prepares transactions that hold no memory-store change
max_prepared_transactions = 2
log_line_prefix = '%m [%p] %q%a '
# rl_stats needs it on 15 and 16; test/t/010_stats.pl covers a server without
shared_preload_libraries = 'ratelimit'
CONF
	rl_as_server "$RL_BIN/pg_ctl" -D "$RL_DATA" -l "$RL_LOGDIR/postgresql.log" -w start >/dev/null
	rl_log "cluster started (socket $RL_SOCK, port $RL_PORT)"
}

# Stop the cluster if it is running.
rl_stop_quietly() {
	if [ -f "${RL_DATA:-/nonexistent}/postmaster.pid" ]; then
		rl_as_server "$RL_BIN/pg_ctl" -D "$RL_DATA" -m fast -w stop >/dev/null 2>&1 || true
	fi
}
