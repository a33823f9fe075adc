#!/usr/bin/env bash
# test/majors/root.sh MAJOR: print the path of a Debian root that has
# PostgreSQL MAJOR, its server headers and what the test suites need,
# building it with mmdebstrap first when it is missing.
#
# Roots live outside the checkout (RL_ROOTS, default /var/tmp/ratelimit-roots)
# so that a fresh clone reuses them.  A root is built under a temporary name
# and renamed only when complete, so a half-built root is never reused.
# A root records the packages it was given (.ratelimit-packages): when the
# list below has grown, the missing ones are installed into the existing
# root rather than rebuilding it.  Needs root (mmdebstrap and chroot).
# Nothing is added to the host's own apt sources: each root carries its own.
set -euo pipefail

major=${1:?usage: root.sh MAJOR}
roots=${RL_ROOTS:-/var/tmp/ratelimit-roots}
mirror=${RL_MIRROR:-http://deb.debian.org/debian}
root=$roots/pg$major
# Bump to rebuild old roots from scratch (a new suite, a new source); a
# longer package list alone does not need it.
recipe=2

log() { printf '%s\n' "== $*" >&2; }

# The suite that carries each major, and whether its TAP extras exist there.
sources=()
aptopts=()
hooks=()
extras="postgresql-$major-cron postgresql-$major-plproxy"
case $major in
17)
	suite=trixie
	;;
18)
	suite=sid
	aptopts=(--aptopt='Acquire::Check-Valid-Until "false"')
	;;
19)
	suite=sid
	sources=("deb $mirror sid main" "deb $mirror experimental main")
	aptopts=(--aptopt='Acquire::Check-Valid-Until "false"')
	# PostgreSQL 19 is only in experimental: prefer that one source package.
	hooks=(--setup-hook='mkdir -p "$1/etc/apt/preferences.d" && printf "Package: src:postgresql-19\nPin: release a=experimental\nPin-Priority: 990\n" >"$1/etc/apt/preferences.d/postgresql-19"')
	extras=""
	;;
*)
	echo "root.sh: no Debian suite known for PostgreSQL $major" >&2
	exit 2
	;;
esac
[ ${#sources[@]} -gt 0 ] || sources=("deb $mirror $suite main")

if ! command -v mmdebstrap >/dev/null; then
	log "installing mmdebstrap"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
fi

packages="make,gcc,perl,libipc-run-perl,sqlsmith,postgresql-$major,postgresql-server-dev-$major"
for p in $extras; do packages="$packages,$p"; done
# The package and pgxn suites (test/packaging/): building postgresql-NN-ratelimit
# with pg_buildext, lintian, and PGXN's client.
packages="$packages,build-essential,debhelper,dpkg-dev,fakeroot,postgresql-server-dev-all,lintian,pgxnclient"

mkdir -p "$roots"
if [ -f "$root/.ratelimit-root" ] && [ "$(cat "$root/.ratelimit-root")" = "$recipe" ]; then
	if [ "$(cat "$root/.ratelimit-packages" 2>/dev/null)" != "$packages" ]; then
		# One checkout at a time adds packages to a root.
		exec 8>"$root.lock"
		flock 8
	fi
	if [ "$(cat "$root/.ratelimit-packages" 2>/dev/null)" != "$packages" ]; then
		log "adding packages to the PostgreSQL $major root: ${packages//,/ }"
		unshare --mount --propagation private bash -c '
			set -e
			root=$1
			shift
			mount -t proc proc "$root/proc"
			mount --bind /dev "$root/dev"
			in_root() {
				chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
					HOME=/root DEBIAN_FRONTEND=noninteractive "$@"
			}
			in_root apt-get update -qq
			in_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
			in_root apt-get clean
			rm -rf "$root"/var/lib/apt/lists/*_*
		' add "$root" ${packages//,/ } >&2
		echo "$packages" >"$root/.ratelimit-packages"
	fi
	echo "$root"
	exit 0
fi
partial=$root.partial.$$
trap 'rm -rf "$partial"' EXIT
log "building a Debian $suite root for PostgreSQL $major in $root"
mmdebstrap --quiet --variant=apt --mode=root --include="$packages" \
	"${aptopts[@]}" "${hooks[@]}" "$suite" "$partial" "${sources[@]}" >&2
echo "$recipe" >"$partial/.ratelimit-root"
echo "$packages" >"$partial/.ratelimit-packages"
rm -rf "$root"
mv "$partial" "$root"
trap - EXIT
echo "$root"
