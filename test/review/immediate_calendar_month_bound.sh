#!/bin/bash
# Over-admission after an immediate shutdown: a cut-off take on a calendar
# month limit is saved with idle_at = ts + refill_bound, and refill_bound
# counts a calendar month as its nominal 30 days ((windows + 1) * 30 days).
# Real months average 30.44 days, so past about 68 windows of deficit the
# bound ends before the key is full again; droppable() lets an inline (or
# overridden) entry go on idle_at alone, so rl_gc drops it early and the
# key starts full.
# Limit: 1 a month, capacity 100 (UTC months).  A take of 100 at
# 2030-01-01 00:00:01 is cut off; the key refills 1 per month start:
# 100 again only on 2038-05-01.  Bound: 101 * 30 days = 2038-04-19.
# On 2038-04-25: allowed 99 (99 month starts since), observed: rl_gc
# drops the entry and a take of 100 is granted.
# Run as root from the repository, cluster of test/lib.sh on RL_PORT.
source "$(dirname "$0")/lib.sh"
C="config => rl_fixed_window(1, '1 month', 100, storage => 'memory', time_zone => 'UTC')"
K=k$$
open_session A
q A "SET ratelimit.now_override = '2030-01-01 00:00:01+00'; BEGIN; SELECT 'open: take 100', ok FROM rl_limit('cal', '$K', 100, $C);"
restart_cluster immediate
close_session A 2>/dev/null
T="SET ratelimit.now_override = '2038-04-25 00:00:00+00';"
psql -X -At -d r -c "$T" -c "SELECT 'after restart, 2038-04-25: remaining after a check of 1 (98 allowed: 99 less 1)', remaining FROM rl_check('cal', '$K', 1, $C)" | grep -v SET
psql -X -At -d r -c "$T" -c "SELECT 'rl_gc_memory removed (0 allowed)', rl_gc_memory()" | grep -v SET
psql -X -At -d r -c "$T" -c "SELECT 'take 100: ok (false allowed)', ok FROM rl_limit('cal', '$K', 100, $C)" | grep -v SET
