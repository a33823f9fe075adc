#!/usr/bin/env bash
# The layout of src/ that docs/layout.md describes, checked so that it
# cannot silently come back undone:
# - the decision (limit.c, target.c) reaches a limit's state only through
#   the stores' table of operations (store.h): it calls no store's
#   functions and never asks which store a policy uses;
# - nothing below the decision includes limit.h;
# - no C file over 1,500 lines, no function over 150.
# Exits non-zero, naming each breach.
set -euo pipefail
cd "$(dirname "$0")/../../src"
failures=0
fail() {
	echo "layout: $*" >&2
	failures=$((failures + 1))
}

# The decision's files, and what only a store may name.
decision="limit.c target.c"
store_only='rl_memory_|rl_storage_|rl_held_|RL_STORE_|policy\.store|policy->store|rl_table_store|rl_memory_store|#include "(memory|storage|held|direct|store_table|store_memory)\.h"'
for f in $decision; do
	# code, not comments
	if grep -nE "$store_only" "$f" | grep -vE '^[0-9]+:[[:space:]]*(/?\*)'; then
		fail "$f reaches a store other than through store.h's operations (lines above)"
	fi
done

# Who may include limit.h: the decision and what calls it (SQL functions,
# the trigger, waiting, rl_gc, HTTP fields, concurrency limits, plans).
above="limit.c functions.c plans.c trigger.c wait.c wait.h gc.c http.c concurrency.c"
for f in *.c *.h; do
	grep -q '#include "limit.h"' "$f" || continue
	case " $above " in
	*" $f "*) ;;
	*) fail "$f includes limit.h, which lies above it" ;;
	esac
done

for f in *.c; do
	lines=$(wc -l <"$f")
	if [ "$lines" -gt 1500 ]; then
		fail "$f has $lines lines (at most 1500)"
	fi
	# a function: from a '{' alone at column 0 to the next '}' at column 0
	awk -v f="$f" '
		/^[A-Za-z_][A-Za-z0-9_]*\(/ { name = $0; sub(/\(.*/, "", name) }
		/^\{$/ { start = NR }
		/^\}/ && start { if (NR - start + 1 > 150) print f ": " name "() has " NR - start + 1 " lines (at most 150)"; start = 0 }
	' "$f" | while read -r line; do
		echo "$line"
	done >"${TMPDIR:-/tmp}/rl-layout.$$"
	while read -r line; do
		fail "$line"
	done <"${TMPDIR:-/tmp}/rl-layout.$$"
	rm -f "${TMPDIR:-/tmp}/rl-layout.$$"
done

if [ "$failures" -gt 0 ]; then
	echo "layout: $failures breaches" >&2
	exit 1
fi
echo "layout: the decision reaches stores only through store.h; no file over 1500 lines, no function over 150"
