#!/usr/bin/env bash
# The examples in examples/, each played in a fresh database against the
# cluster run-tests.sh started, and compared with examples/expected/.
source "$(dirname "$0")/lib.sh"
rl_choose_tmp
out=$RL_TMP/examples
mkdir -p "$out"
status=0
for sql in "$RL_REPO"/examples/*.sql; do
	name=$(basename "$sql" .sql)
	[ "$name" = demo ] && continue		# make run's script, not a checked example
	db=ratelimit_example
	"$RL_BIN/dropdb" --if-exists "$db" 2>/dev/null
	"$RL_BIN/createdb" "$db"
	"$RL_BIN/psql" -X -q -d "$db" -c 'CREATE EXTENSION ratelimit'
	(cd "$RL_REPO/examples" && "$RL_BIN/psql" -X -a -d "$db" -f "$name.sql") >"$out/$name.out" 2>&1
	"$RL_BIN/dropdb" "$db"
	if ! diff -u "$RL_REPO/examples/expected/$name.out" "$out/$name.out"; then
		rl_log "example $name: FAILED"
		status=1
	fi
done
[ $status = 0 ] && rl_log "examples: every example printed what examples/expected/ says"
exit $status
