#!/usr/bin/env bash
# test/majors/run.sh MAJOR: every suite on PostgreSQL MAJOR, inside a Debian
# root that has it (test/majors/root.sh).  The source tree is copied into
# the root (objects of another major left behind), and the suites run there
# as root under chroot, in a private mount namespace, so that /proc, /dev
# and /dev/shm mounted for them vanish when the run ends.  The outcome of
# each suite is left in the copy's tmp/suites.result (see rl_root_copy).
source "$(dirname "$0")/../lib.sh"

major=${1:?usage: run.sh MAJOR}
repo=$RL_REPO
root=$("$repo/test/majors/root.sh" "$major")
src=$(rl_root_copy)

rm -rf "$root$src"
mkdir -p "$root$src"
tar -C "$repo" --exclude=./.git --exclude=./tmp --exclude=./results \
	--exclude=./output_iso --exclude=./tmp_check --exclude='*.o' \
	--exclude='*.so' --exclude='*.bc' --exclude='*.zip' --exclude=./test/unit/test_algebra \
	-cf - . | tar -C "$root$src" -xf -
# The copy has no .git: the pgxn suite installs the archive make dist makes
# here (of HEAD), left at the top of the copy.
if git -C "$repo" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	dist=$(make -s -C "$repo" print-dist)
	make -s -C "$repo" dist DIST="$root$src/$dist" >/dev/null 2>&1 ||
		rl_log "make dist failed: the pgxn suite will be skipped in the root"
fi

unshare --mount --propagation private bash -c '
	set -e
	root=$1 major=$2 src=$3
	mount -t proc proc "$root/proc"
	mount --bind /dev "$root/dev"
	mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
	exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 RL_IN_ROOT=1 RL_PG_MAJOR="$major" \
		${RL_FUZZ_QUERIES:+RL_FUZZ_QUERIES=$RL_FUZZ_QUERIES} \
		bash "$src/test/run-suites.sh"
' run "$root" "$major" "$src"
