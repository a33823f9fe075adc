#!/usr/bin/env bash
# The SQL examples of the docs pages that carry them (docs/cookbook.md,
# docs/migrating.md, docs/policies.md, or the pages named), each run top
# to bottom in a fresh database against the cluster run-suites.sh started
# (or make run KEEP=1's), every block's output compared with the output
# the page shows (test/docs/examples.pl says how).
source "$(dirname "$0")/lib.sh"
rl_choose_tmp
cd "$RL_REPO"
pages=("$@")
[ ${#pages[@]} -gt 0 ] || pages=(docs/cookbook.md docs/migrating.md docs/policies.md)
RL_BIN=$RL_BIN perl test/docs/examples.pl "${pages[@]}" || {
	rl_log "docs examples: FAILED"
	exit 1
}
rl_log "docs examples: every block printed what its page shows"
