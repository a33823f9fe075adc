#!/usr/bin/env bash
# Every suite on one PostgreSQL major (RL_PG_MAJOR, default the host's):
# build with -Werror, install into ./tmp, start a throwaway cluster, run the
# suites, stop the cluster; then the package and pgxn suites, which install
# into the system's PostgreSQL instead.  Each suite's outcome is printed and
# written to $RL_TMP/suites.result ("name passed|failed|skipped"); exits
# non-zero when any suite fails.  test/run-tests.sh (make test) runs this on
# every major.
source "$(dirname "$0")/lib.sh"

rl_ensure_packages
rl_choose_tmp
trap rl_stop_quietly EXIT
result=$RL_TMP/suites.result
mkdir -p "$RL_TMP"
: >"$result"
failed=()

# suite NAME COMMAND...: run one suite, record its outcome.  Exit status 77
# means the suite cannot run here (it says why): skipped, not failed.
suite() {
	local name=$1 rc=0
	shift
	"$@" || rc=$?
	case $rc in
	0) echo "$name passed" >>"$result" ;;
	77) echo "$name skipped" >>"$result" ;;
	*)
		echo "$name failed" >>"$result"
		failed+=("$name")
		;;
	esac
}

# The diffs pg_regress or pg_isolation_regress left, if any.
show_diffs() {
	cat "$RL_REPO/regression.diffs" "$RL_REPO/output_iso/regression.diffs" 2>/dev/null || true
}

STRICT="-Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare"
rl_log "PostgreSQL $RL_PG_MAJOR: building with $STRICT"
if ! RL_CFLAGS=$STRICT rl_install; then
	echo "build failed" >>"$result"
	rl_log "FAILED: build"
	exit 1
fi
echo "build passed" >>"$result"

rl_log "packaging (META.json, changelog, scripts)"
suite packaging "$RL_REPO/test/packaging/check.sh"

rl_log "layout of src/ (docs/layout.md)"
suite layout "$RL_REPO/test/layout/check.sh"

rl_log "links in README.md and docs/"
suite docs-links perl "$RL_REPO/test/docs/links.pl"

rl_log "prose of README.md and docs/ (sentence length, unlinked cross-references)"
suite docs-prose perl "$RL_REPO/test/docs/prose.pl"

rl_log "unit tests of the algebra"
suite unit make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" unit

rl_start

# First on the new cluster: the pages read rl_stats, which holds at most
# ratelimit.stats_max_names names (the suites below use many).
rl_log "SQL examples of docs/cookbook.md, docs/migrating.md and docs/policies.md (test/docs/examples.pl)"
suite docs-examples "$RL_REPO/test/run-doc-examples.sh"

CONNECT="--host=$RL_SOCK --port=$RL_PORT --user=postgres"

# pg_regress and pg_isolation_regress; PGOPTIONS picks the path.
regress() {
	rm -f "$RL_REPO/regression.diffs" "$RL_REPO/output_iso/regression.diffs"
	make -C "$RL_REPO" -s PG_CONFIG="$RL_PG_CONFIG" installcheck "$@" \
		EXTRA_REGRESS_OPTS="$CONNECT" || { show_diffs; return 1; }
}
export PGISOLATIONTIMEOUT=60

rl_log "regression suites (pg_regress)"
suite regress regress ISOLATION=

rl_log "isolation specs (pg_isolation_regress)"
suite isolation regress REGRESS=

# The SQL path (storage.c through SPI) must stay correct for tables the
# direct path does not serve: the same suites again with it forced.
rl_log "regression suites and isolation specs again on the SQL path (ratelimit.direct_access = off)"
sql_path() { PGOPTIONS="-c ratelimit.direct_access=off" regress; }
suite sql-path sql_path

rl_log "examples"
suite examples "$RL_REPO/test/run-examples.sh"

rl_log "monitoring (prometheus-postgres-exporter with examples/monitoring/postgres_exporter.yml, scraped)"
suite monitoring "$RL_REPO/test/run-monitoring.sh"

rl_log "middleware examples (Express, Flask, FastAPI and Django over HTTP; skipped without node, npm or the Python packages)"
suite middleware "$RL_REPO/test/run-middleware.sh"

rl_log "stress test (pgbench, 16 clients)"
suite stress "$RL_REPO/test/stress/stress.sh"

rl_log "permits stress test (pgbench, 16 clients, a concurrency limit of 4)"
suite permits-stress "$RL_REPO/test/stress/permits.sh"

rl_log "refused stress test (pgbench, 8 clients refusing the same keys, rl_refused exact)"
suite refused-stress "$RL_REPO/test/stress/refused.sh"

rl_log "hostile input at random (targeted calls, sqlsmith)"
suite fuzz "$RL_REPO/test/fuzz/run.sh"

rl_log "SQL edition (make sql-edition; its pg_tle script; installed by a role that is not a superuser on a cluster without the C library; the differential test against the C edition)"
suite sql-edition "$RL_REPO/test/sql-edition/run.sh"

rl_stop_quietly

rl_log "make installcheck as a packager runs it (a plain cluster on its own port and socket, no shared_preload_libraries, no PGHOST in its environment; the checkout left as it was)"
suite plain-installcheck "$RL_REPO/test/installcheck-plain.sh"

rl_log "TAP tests (crash recovery, dump and restore, the pg_cron recipe, the PL/Proxy router, rl_gc memory, statistics, logical replication, the memory store, a hint chain into truncated pages, REINDEX CONCURRENTLY beside new keys, the memory store's per-database bound, a take during a definition change's commit, rl_refused at its largest sizes and with a clock in the future)"
tap=$RL_TMP/tap
rm -rf "$tap"
mkdir -p "$tap"
if rl_is_root; then chown postgres: "$tap"; fi
pgxs=$(dirname "$RL_BIN")/lib/pgxs
tap_tests() {
	(cd "$RL_REPO" && rl_as_server env PATH="$RL_BIN:$PATH" TESTDIR="$tap" \
		TESTDATADIR="$tap/tmp_check" TESTLOGDIR="$tap/tmp_check/log" \
		PG_REGRESS="$pgxs/src/test/regress/pg_regress" \
		prove -I "$pgxs/src/test/perl" test/t/*.pl) && return 0
	cat "$tap"/tmp_check/log/regress_log_* 2>/dev/null | tail -50
	return 1
}
suite tap tap_tests

# Not the private copy: the system's PostgreSQL, as users install it.
rl_log "Debian package (build postgresql-$RL_PG_MAJOR-ratelimit, lintian, apt-get install, installcheck, purge)"
suite package "$RL_REPO/test/packaging/deb.sh"

rl_log "PGXN archive (make dist, pgxn install, pgxn load, pgxn uninstall)"
suite pgxn "$RL_REPO/test/packaging/pgxn.sh"

# run-tests.sh counts a major whose run stopped before this line (a
# cluster that would not start ends the script early) as a failure
echo "complete" >>"$result"
if [ ${#failed[@]} -gt 0 ]; then
	rl_log "PostgreSQL $RL_PG_MAJOR FAILED: ${failed[*]}"
	exit 1
fi
rl_log "PostgreSQL $RL_PG_MAJOR: all suites passed"
