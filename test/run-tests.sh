#!/usr/bin/env bash
# make test: every suite on every PostgreSQL major this machine can test.
#
# The host's major (15) runs directly (test/run-suites.sh); every other
# major runs the same suites in a Debian root of its own (test/majors/),
# which needs root.  RL_TEST_MAJORS (make test PG=18) picks the majors.
# One summary line per major, then "N passed, N failed, N skipped", where
# each suite on each major counts once (a major that cannot run at all
# counts one skip, and so does a suite that cannot run, such as the
# package suite as an ordinary user); exits non-zero when any failed.
source "$(dirname "$0")/lib.sh"

majors=${RL_TEST_MAJORS:-"$RL_HOST_MAJOR 17 18 19"}
passed=0
failed=0
skipped=0
summary=()

for major in $majors; do
	start=$SECONDS
	if [ "$major" = "$RL_HOST_MAJOR" ]; then
		rl_log "PostgreSQL $major (the host's)"
		RL_PG_MAJOR=$major "$RL_REPO/test/run-suites.sh" || true
		RL_PG_MAJOR=$major rl_choose_tmp
		result=$RL_TMP/suites.result
	elif ! rl_is_root; then
		rl_log "PostgreSQL $major: skipped (a Debian root for it needs root; run make test as root)"
		summary+=("PostgreSQL $major: skipped, needs root to build and enter its Debian root")
		skipped=$((skipped + 1))
		continue
	else
		rl_log "PostgreSQL $major (in a Debian root)"
		result=
		if root=$("$RL_REPO/test/majors/root.sh" "$major"); then
			"$RL_REPO/test/majors/run.sh" "$major" || true
			result=$root$(rl_root_copy)/tmp/suites.result
		fi
	fi
	ok=$(grep -c ' passed$' "$result" 2>/dev/null || true)
	bad=$(grep ' failed$' "$result" 2>/dev/null | cut -d' ' -f1 | tr '\n' ' ' || true)
	skip=$(grep ' skipped$' "$result" 2>/dev/null | cut -d' ' -f1 | tr '\n' ' ' || true)
	# no result at all (the root could not be built): one failure; a run
	# that stopped before its last suite (the cluster did not start): one
	[ -n "$result" ] && [ -s "$result" ] || bad="setup "
	if [ -z "$bad" ] && ! grep -qx complete "$result"; then
		bad="${bad}incomplete "
	fi
	passed=$((passed + ok))
	nbad=$(wc -w <<<"$bad")
	nskip=$(wc -w <<<"$skip")
	failed=$((failed + nbad))
	skipped=$((skipped + nskip))
	line="PostgreSQL $major: $ok passed, $nbad failed"
	[ "$nskip" -gt 0 ] && line="$line, $nskip skipped"
	line="$line in $((SECONDS - start)) s"
	[ -n "$bad" ] && line="$line (${bad% })"
	[ "$nskip" -gt 0 ] && line="$line (skipped: ${skip% })"
	summary+=("$line")
done

rl_log "summary"
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
