# test/packaging/system.sh: what the package and pgxn suites share.  Sourced
# after test/lib.sh, not run.
#
# Both install ratelimit into the system's PostgreSQL of RL_PG_MAJOR
# (/usr/lib/postgresql/NN, /usr/share/postgresql/NN), as a user would, and
# take it out again; the other suites never see it (rl_install leaves the
# system's ratelimit files out of the private copy).  So they run only as
# root, only on a PostgreSQL that has no ratelimit of its own, and one at a
# time on a machine (or Debian root): a lock serialises checkouts.

# Exit status that run-suites.sh records as "skipped".
RL_SKIP=77

rl_skip() {
	rl_log "skipped: $*"
	exit $RL_SKIP
}

RL_SYS_PG_CONFIG=$RL_SYS_BIN/pg_config
rl_sys_libdir=/usr/lib/postgresql/$RL_PG_MAJOR/lib
rl_sys_sharedir=/usr/share/postgresql/$RL_PG_MAJOR
rl_sys_docdir=/usr/share/doc/postgresql-doc-$RL_PG_MAJOR

# Every file of ratelimit in the system's installation: none when clean.
rl_system_files() {
	local f
	for f in "$rl_sys_libdir"/ratelimit.* "$rl_sys_sharedir"/extension/ratelimit[.-]* \
		"$rl_sys_docdir"/extension/ratelimit_router.sql*; do
		[ -e "$f" ] && echo "$f"
	done
	return 0
}

# The extension's scripts, as the Makefile installs them (DATA).
rl_data_scripts() {
	make -s -C "$RL_REPO" print-data
}

# Skip unless this can install into the system's PostgreSQL: as root, with
# the packaging tools, holding the lock, on a PostgreSQL without ratelimit.
rl_system_preflight() {
	local what=$1
	rl_is_root || rl_skip "the $what suite installs ratelimit into /usr/lib/postgresql/$RL_PG_MAJOR; run make test as root (CI does)"
	[ -x "$RL_SYS_PG_CONFIG" ] || rl_skip "no $RL_SYS_PG_CONFIG"
	rl_ensure_packages $RL_PACKAGING_PACKAGES
	exec 9>/var/tmp/ratelimit-system-install.lock
	if ! flock -n 9; then
		rl_log "waiting for another checkout's package or pgxn suite (/var/tmp/ratelimit-system-install.lock)"
		flock 9
	fi
	if dpkg-query -W -f='${Status}\n' "postgresql-$RL_PG_MAJOR-ratelimit" 2>/dev/null | grep -q ' installed$'; then
		rl_skip "postgresql-$RL_PG_MAJOR-ratelimit is installed already; the $what suite needs a PostgreSQL $RL_PG_MAJOR without ratelimit (apt-get purge postgresql-$RL_PG_MAJOR-ratelimit)"
	fi
	local left
	left=$(rl_system_files)
	if [ -n "$left" ]; then
		rl_skip "PostgreSQL $RL_PG_MAJOR already has ratelimit files that no package owns (a make install or pgxn install?); the $what suite needs it without: $(echo $left)"
	fi
}

# A throwaway cluster of the system's binaries under DIR (data, sock, log),
# run by the server account, on a Unix socket only: rl_start's, with the
# system's installation instead of the private copy.
rl_system_cluster() {
	local dir=$1
	RL_BIN=$RL_SYS_BIN
	RL_DATA=$dir/data
	RL_SOCK=$dir/sock
	RL_LOGDIR=$dir/log
	export PGHOST=$RL_SOCK
	rl_start
}

# Fail unless the system's installation has no ratelimit file left.
rl_system_check_clean() {
	local left
	left=$(rl_system_files)
	[ -z "$left" ] && return 0
	rl_log "FAILED: ratelimit files left behind after $1:"
	printf '  %s\n' $left >&2
	return 1
}
