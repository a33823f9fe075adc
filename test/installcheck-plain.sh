#!/usr/bin/env bash
# test/installcheck-plain.sh: make installcheck as a packager runs it.
#
# A plain cluster of this checkout's private installation (initdb, nothing
# added to postgresql.conf: no shared_preload_libraries, no prepared
# transactions), started by the server account with only a port and a
# socket directory of its own (pg_ctl start -o "-p PORT -k DIR") and none of
# PGHOST, PGPORT, PGUSER or PGDATABASE in its environment; then
# `make installcheck` with the connection in the client's environment, as
# docs/packaging.md says.  Then the same cluster restarted with the library
# preloaded (still no prepared transactions) and the regression suites
# again.  The build, the runs and make clean leave every tracked file as it
# was (git status --porcelain before and after).
source "$(dirname "$0")/lib.sh"

rl_choose_tmp
[ -x "$RL_PG_CONFIG" ] || rl_install
plain=$RL_TMP/plain
port=$((RL_PORT + 1))
data=$plain/data
sock=$plain/sock
log=$plain/log/postgresql.log

stop_plain() {
	if [ -f "$data/postmaster.pid" ]; then
		rl_as_server "$RL_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
	fi
}
trap stop_plain EXIT
fail() {
	rl_log "FAILED: $*"
	exit 1
}

# The tracked files as they are now (a checkout may have uncommitted work).
tracked_state() {
	git -C "$RL_REPO" status --porcelain=v1 --untracked-files=all
	git -C "$RL_REPO" diff HEAD --no-ext-diff 2>/dev/null | md5sum
}
in_git=
if git -C "$RL_REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	in_git=1
	before=$(tracked_state)
else
	rl_log "not a git checkout: the tracked-files check is skipped"
fi

# A build from clean, as a packager's first make.
make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" clean
make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" PG_CFLAGS="${RL_CFLAGS:-}" all
make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" install >/dev/null

stop_plain
rm -rf "$plain"
mkdir -p "$data" "$sock" "$plain/log"
if rl_is_root; then chown postgres: "$data" "$sock" "$plain/log"; fi
rl_as_server "$RL_BIN/initdb" -D "$data" -U postgres --auth=trust --no-sync >/dev/null

# start_plain [OPTION...]: the server with the client's connection settings
# taken out of its environment.
start_plain() {
	rl_as_server env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE -u PGOPTIONS \
		"$RL_BIN/pg_ctl" -D "$data" -l "$log" -w \
		-o "-p $port -k $sock $*" start >/dev/null || {
		tail -20 "$log" >&2
		fail "the plain cluster did not start"
	}
}

# installcheck LABEL [VAR=VALUE...]: as docs/packaging.md says, the server
# named in the client's environment only.
installcheck() {
	local label=$1
	shift
	rl_log "make installcheck against the plain cluster ($label)"
	rm -f "$RL_REPO/regression.diffs" "$RL_REPO/output_iso/regression.diffs"
	if ! env -u PGOPTIONS -u PGDATABASE PGHOST="$sock" PGPORT="$port" PGUSER=postgres \
		make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" installcheck "$@"; then
		cat "$RL_REPO/regression.diffs" "$RL_REPO/output_iso/regression.diffs" 2>/dev/null || true
		fail "make installcheck against a plain cluster ($label)"
	fi
}

start_plain
installcheck "no shared_preload_libraries, max_prepared_transactions = 0"
stop_plain

start_plain -c shared_preload_libraries=ratelimit
installcheck "shared_preload_libraries = ratelimit, max_prepared_transactions = 0" ISOLATION=
stop_plain

if [ -n "$in_git" ]; then
	make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" clean
	after=$(tracked_state)
	if [ "$before" != "$after" ]; then
		diff <(echo "$before") <(echo "$after") >&2 || true
		fail "the build, make installcheck or make clean changed the checkout (git status --porcelain above)"
	fi
	# the other suites use the build
	make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" PG_CFLAGS="${RL_CFLAGS:-}" all
fi
rl_log "plain-installcheck: make installcheck passed against a packager's cluster, with and without the library preloaded"
