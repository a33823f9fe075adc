#!/usr/bin/env bash
# test/packaging/pgxn.sh: the pgxn suite, on PostgreSQL RL_PG_MAJOR.
#
# Builds the release archive PGXN takes (make dist: git archive of HEAD,
# ratelimit-X.Y.Z.zip, everything under ratelimit-X.Y.Z/), checks it, and
# installs it as a PGXN user would, with Debian's pgxnclient (pgxn install,
# offline from the local file) into the system's PostgreSQL NN; then
# `pgxn load` (CREATE EXTENSION ratelimit) in a throwaway cluster of the
# system's binaries, a call, and `pgxn uninstall`, which must leave nothing.
# Skipped (exit 77) when it cannot install into the system (see
# test/packaging/system.sh), or when there is no commit to archive.
source "$(dirname "$0")/../lib.sh"
source "$RL_REPO/test/packaging/system.sh"

rl_choose_tmp
major=$RL_PG_MAJOR
rl_system_preflight pgxn

work=$RL_TMP/pgxn
rm -rf "$work"
mkdir -p "$work"
chmod a+rX "$work"

fail() {
	rl_log "FAILED: $*"
	exit 1
}

# The archive: made here from HEAD, or, in a Debian root of another major
# (a copy without .git), made by test/majors/run.sh on the host and left
# at the top of the copy.
dist=$(make -s -C "$RL_REPO" print-dist)
archive=$work/$dist
if git -C "$RL_REPO" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	rl_log "make dist"
	make -s -C "$RL_REPO" dist DIST="$archive" >/dev/null || fail "make dist"
elif [ -f "$RL_REPO/$dist" ]; then
	cp "$RL_REPO/$dist" "$archive"
else
	rl_skip "no git commit to archive (not a git checkout) and no $dist"
fi

rl_log "what $dist holds"
version=$(perl -MJSON::PP -0777 -ne 'print decode_json($_)->{version}' "$RL_REPO/META.json")
prefix=ratelimit-$version/
[ "$dist" = "ratelimit-$version.zip" ] || fail "make dist names the archive $dist, not ratelimit-$version.zip"
# The archive's names, and one member's text (python3 comes with pgxnclient).
zip_names() {
	python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$1"
}
zip_cat() {
	python3 -c 'import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())' "$1" "$2"
}
entries=$(zip_names "$archive") || fail "$dist is not a zip archive"
outside=$(grep -v "^$prefix" <<<"$entries" || true)
[ -z "$outside" ] || fail "$dist has entries outside $prefix: $(head -3 <<<"$outside")"
for f in META.json Makefile ratelimit.control $(rl_data_scripts); do
	grep -qxF "$prefix$f" <<<"$entries" || fail "$dist lacks $prefix$f"
done
meta_version=$(zip_cat "$archive" "${prefix}META.json" |
	perl -MJSON::PP -0777 -ne 'print decode_json($_)->{version}')
[ "$meta_version" = "$version" ] ||
	fail "$dist's META.json says $meta_version (HEAD's), the checkout's says $version: commit first"

rl_log "pgxn install $dist (PostgreSQL $major)"
pgxn_do() {
	(cd "$work" && pgxn "$@" --pg_config "$RL_SYS_PG_CONFIG" "./$dist")
}
# make install creates the documentation directory, make uninstall leaves
# it: remove it again when it was not there before and is empty.
docdir_existed=$([ -d "$rl_sys_docdir" ] && echo yes || true)
cleanup() {
	rl_stop_quietly
	if [ -n "$(rl_system_files)" ]; then
		pgxn_do uninstall >/dev/null 2>&1 || true
		rm -f $(rl_system_files)
	fi
	if [ -z "$docdir_existed" ]; then
		rmdir "$rl_sys_docdir/extension" "$rl_sys_docdir" 2>/dev/null || true
	fi
}
trap cleanup EXIT
pgxn_do install --make make >"$work/install.log" 2>&1 ||
	{ tail -40 "$work/install.log" >&2; fail "pgxn install"; }
for f in "$rl_sys_libdir/ratelimit.so" "$rl_sys_sharedir/extension/ratelimit.control"; do
	[ -f "$f" ] || fail "$f missing after pgxn install"
done

rl_system_cluster "$work"
rl_log "pgxn load (CREATE EXTENSION ratelimit)"
(cd "$work" && pgxn load --pg_config "$RL_SYS_PG_CONFIG" -h "$RL_SOCK" -p "$RL_PORT" \
	-U postgres -d postgres "./$dist") >"$work/load.log" 2>&1 ||
	{ cat "$work/load.log" >&2; fail "pgxn load"; }
control_version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$RL_REPO/ratelimit.control")
got=$(psql -X -At -v ON_ERROR_STOP=1 <<'SQL'
SELECT extversion FROM pg_extension WHERE extname = 'ratelimit';
SELECT ok FROM rl_limit('pgxn', 'k', 1, config => rl_fixed_window(2, '1 hour'));
SELECT ok FROM rl_limit('pgxn', 'k', 1, config => rl_fixed_window(2, '1 hour'));
SELECT ok FROM rl_limit('pgxn', 'k', 1, config => rl_fixed_window(2, '1 hour'));
SQL
) || fail "psql"
expected=$(printf '%s\n%s\n%s\n%s' "$control_version" t t f)
[ "$got" = "$expected" ] || fail "after pgxn load: got '$got', expected '$expected'"
rl_stop_quietly

rl_log "pgxn uninstall $dist"
pgxn_do uninstall >>"$work/install.log" 2>&1 ||
	{ tail -20 "$work/install.log" >&2; fail "pgxn uninstall"; }
rl_system_check_clean "pgxn uninstall" || exit 1
rl_log "pgxn: $dist installed with pgxnclient, loaded, called and uninstalled in $SECONDS s"
