#!/usr/bin/env bash
# test/majors/root.sh MAJOR: print the path of a Debian root that has
# PostgreSQL MAJOR, its server headers and what the test suites need,
# building it with mmdebstrap first when it is missing.
#
# Roots live outside the checkout (RL_ROOTS, default /var/tmp/ratelimit-roots)
# so that a fresh clone reuses them.  A root is built under a temporary name
# and renamed only when complete, so a half-built root is never reused.
# Needs root (mmdebstrap and chroot).  Nothing is added to the host's own
# apt sources: each root carries its own.
set -euo pipefail

major=${1:?usage: root.sh MAJOR}
roots=${RL_ROOTS:-/var/tmp/ratelimit-roots}
mirror=${RL_MIRROR:-http://deb.debian.org/debian}
root=$roots/pg$major
# Bump when the package list below changes, so that old roots are rebuilt.
recipe=2

log() { printf '%s\n' "== $*" >&2; }

if [ -f "$root/.ratelimit-root" ] && [ "$(cat "$root/.ratelimit-root")" = "$recipe" ]; then
	echo "$root"
	exit 0
fi

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

mkdir -p "$roots"
partial=$root.partial.$$
trap 'rm -rf "$partial"' EXIT
log "building a Debian $suite root for PostgreSQL $major in $root"
mmdebstrap --quiet --variant=apt --mode=root --include="$packages" \
	"${aptopts[@]}" "${hooks[@]}" "$suite" "$partial" "${sources[@]}" >&2
echo "$recipe" >"$partial/.ratelimit-root"
rm -rf "$root"
mv "$partial" "$root"
trap - EXIT
echo "$root"
