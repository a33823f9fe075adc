#!/usr/bin/env bash
# test/packaging/deb.sh: the package suite, on PostgreSQL RL_PG_MAJOR.
#
# Builds postgresql-NN-ratelimit from debian/ as a packager would
# (dpkg-buildpackage, pg_buildext, source and binary), checks debian/control
# against control.in, what the package holds and what lintian says of it,
# installs it with apt into the system's PostgreSQL NN, runs every
# regression suite and isolation spec (make installcheck) against a
# throwaway cluster of the system's binaries, then purges the package and
# checks that nothing is left.  Skipped (exit 77) when it cannot install
# into the system: see test/packaging/system.sh.
source "$(dirname "$0")/../lib.sh"
source "$RL_REPO/test/packaging/system.sh"

# Lintian tags accepted on every major (errors and warnings fail the suite;
# information and pedantic tags are shown).  docs/packaging.md says why.
ACCEPTED_TAGS=initial-upload-closes-no-bugs

rl_choose_tmp
major=$RL_PG_MAJOR
pkg=postgresql-$major-ratelimit
rl_system_preflight package

work=$RL_TMP/package
version=$(dpkg-parsechangelog -l "$RL_REPO/debian/changelog" -S Version)
upstream=${version%-*}
src=$work/build/ratelimit-$upstream
arch=$(dpkg --print-architecture)
deb=$work/build/${pkg}_${version}_$arch.deb
changes=$work/build/ratelimit_${version}_$arch.changes

cleanup() {
	rl_stop_quietly
	if dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q ' installed$'; then
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 purge -y -qq "$pkg" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

fail() {
	rl_log "FAILED: $*"
	exit 1
}

# The tree as it is checked out (uncommitted changes included), without
# what builds and test runs leave, and an upstream tarball of it.
rm -rf "$work"
mkdir -p "$src"
tar -C "$RL_REPO" --exclude=./.git --exclude=./tmp --exclude=./results \
	--exclude=./output_iso --exclude=./tmp_check --exclude='*.o' \
	--exclude='*.so' --exclude='*.bc' --exclude='*.zip' \
	--exclude=./test/unit/test_algebra --exclude=./debian/.debhelper \
	--exclude=./debian/files --exclude='./debian/*.substvars' \
	--exclude=./debian/debhelper-build-stamp \
	--exclude='./debian/postgresql-*-ratelimit' -cf - . | tar -C "$src" -xf -
tar -C "$work/build" --exclude="ratelimit-$upstream/debian" \
	-czf "$work/build/ratelimit_$upstream.orig.tar.gz" "ratelimit-$upstream"

rl_log "debian/control is pg_buildext updatecontrol's for PostgreSQL $RL_DEB_MAJORS"
(cd "$src" && PG_SUPPORTED_VERSIONS="$RL_DEB_MAJORS" pg_buildext checkcontrol >&2) ||
	fail "debian/control differs from debian/control.in; run: PG_SUPPORTED_VERSIONS=\"$RL_DEB_MAJORS\" pg_buildext updatecontrol"

# Only this major: the control file of the copy lists postgresql-$major-ratelimit
# alone.  The build-time test is left out (nocheck): installcheck below runs
# the same suites against the installed package.
rl_log "dpkg-buildpackage for PostgreSQL $major"
t0=$SECONDS
if ! (cd "$src" && PG_SUPPORTED_VERSIONS=$major PG_UPDATECONTROL=yes \
	DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc >"$work/build.log" 2>&1); then
	tail -40 "$work/build.log" >&2
	fail "dpkg-buildpackage (log: $work/build.log)"
fi
[ -f "$deb" ] || fail "dpkg-buildpackage made no $deb"

rl_log "what $pkg holds"
libdir=$rl_sys_libdir
extdir=$rl_sys_sharedir/extension
docdir=/usr/share/doc/$pkg
contents=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -e 's|^\./|/|' -e '/\/$/d')
bad=0
for f in "$libdir/ratelimit.so" "$extdir/ratelimit.control" "$docdir/copyright" \
	"$docdir/README.md.gz" "$docdir/docs/reference.md.gz" "$docdir/changelog.gz" \
	"$docdir/examples/postgres_exporter.yml" "$docdir/examples/demo.sql" \
	"$rl_sys_docdir/extension/ratelimit_router.sql"; do
	grep -qxF "$f" <<<"$contents" || { rl_log "$pkg lacks $f"; bad=1; }
done
want=$(for s in $(rl_data_scripts); do echo "$extdir/$s"; done | sort)
have=$(grep "^$extdir/ratelimit-" <<<"$contents" | sort || true)
if [ "$want" != "$have" ]; then
	rl_log "$pkg's scripts differ from the Makefile's DATA (< DATA, > package):"
	diff <(echo "$want") <(echo "$have") >&2 || true
	bad=1
fi
stray=$(grep -v -e "^$libdir/" -e "^$extdir/" -e "^$docdir/" \
	-e "^$rl_sys_docdir/extension/" <<<"$contents" || true)
[ -z "$stray" ] || { rl_log "$pkg installs outside PostgreSQL $major's directories: $stray"; bad=1; }
depends=$(dpkg-deb -f "$deb" Depends)
grep -q "postgresql-$major\\b" <<<"$depends" || { rl_log "$pkg does not depend on postgresql-$major: $depends"; bad=1; }
[ $bad = 0 ] || fail "$pkg's contents"

t_build=$((SECONDS - t0))
rl_log "lintian (errors and warnings fail; accepted: $ACCEPTED_TAGS)"
t0=$SECONDS
# Not as root: lintian only reads the files.
chmod -R a+rX "$work/build"
if ! rl_as_server lintian --display-info --pedantic --fail-on error,warning \
	--suppress-tags "$ACCEPTED_TAGS" "$changes" >"$work/lintian.log" 2>&1; then
	cat "$work/lintian.log" >&2
	fail "lintian"
fi
cat "$work/lintian.log" >&2

t_lintian=$((SECONDS - t0))
rl_log "apt-get install $deb"
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$deb" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log" >&2; fail "apt-get install"; }
for f in "$libdir/ratelimit.so" "$extdir/ratelimit.control"; do
	[ -f "$f" ] || fail "$f missing after installing $pkg"
done

rl_system_cluster "$work"
control_version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$RL_REPO/ratelimit.control")
offered=$(psql -X -Atc "SELECT default_version FROM pg_available_extensions WHERE name = 'ratelimit'")
[ "$offered" = "$control_version" ] ||
	fail "the server offers ratelimit '$offered', not $control_version"

rl_log "make installcheck against the installed package (PostgreSQL $major's own pg_config)"
t0=$SECONDS
rm -f "$src/regression.diffs" "$src/output_iso/regression.diffs"
if ! make -C "$src" -s PG_CONFIG="$RL_SYS_PG_CONFIG" installcheck \
	EXTRA_REGRESS_OPTS="--host=$RL_SOCK --port=$RL_PORT --user=postgres"; then
	cat "$src/regression.diffs" "$src/output_iso/regression.diffs" 2>/dev/null || true
	fail "installcheck"
fi
t_check=$((SECONDS - t0))
rl_stop_quietly

rl_log "apt-get purge $pkg"
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 purge -y -qq "$pkg" >>"$work/install.log" 2>&1 ||
	{ cat "$work/install.log" >&2; fail "apt-get purge"; }
rl_system_check_clean "apt-get purge $pkg" || exit 1
rl_log "package: $pkg $version built, lintian-clean, installed, tested and purged in $SECONDS s (build $t_build s, lintian $t_lintian s, installcheck $t_check s)"
