#!/bin/bash
# Over-admission after an immediate shutdown (2d5eb11): an inline entry
# whose take was cut off is saved with the take kept (value -= pending,
# judged = never), but with the idle_at of its last release, computed
# before that take.  droppable() lets an inline entry go on idle_at alone
# (judged is not read for inline policies), so after the restart rl_gc (or
# a sweep of a full store) drops it at once, and the drained key starts
# full again.
# Allowed: the key drained (about 0 tokens, 10 an hour refill from the
# shutdown).  Observed: rl_gc_memory removes it; 10 more are granted.
# Run as root from the repository, cluster of test/lib.sh on RL_PORT.
source "$(dirname "$0")/lib.sh"
C="config => rl_token_bucket(10, '1 hour', storage => 'memory')"
K=k$$
# a committed take long ago: idle_at of the entry is in 2020
psql -X -At -d r -c "SET ratelimit.now_override = '2020-01-01'" \
	-c "SELECT 'take 1 in 2020', ok FROM rl_limit('inl', '$K', 1, $C)" | grep -v SET
open_session A
q A "BEGIN; SELECT 'open: take 10', ok FROM rl_limit('inl', '$K', 10, $C);"
restart_cluster immediate
close_session A 2>/dev/null
psql -X -At -d r -c "SELECT 'after restart: remaining (about 0 allowed)', remaining FROM rl_check('inl', '$K', 1, $C)"
psql -X -At -d r -c "SELECT 'rl_gc_memory removed', rl_gc_memory()"
psql -X -At -d r -c "SELECT 'take 10 again: ok (false allowed)', ok FROM rl_limit('inl', '$K', 10, $C)"
