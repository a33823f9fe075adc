#!/bin/bash
# Over-admission after an immediate shutdown (2d5eb11): the cut-off take
# is kept at ts = max(committed ts, the postmaster's real clock), never at
# the time of the take.  A take made on a clock ahead of the real one
# (ratelimit.now_override in postgresql.conf, as test/t/013 runs, or the
# system clock stepped back before the shutdown) is kept at the older
# committed ts, and the refill from there to the take's time gives back
# what the take took.
# Allowed: value 0 at 01:00 (10 taken at 01:00 from a full key).
# Observed: 10.
source "$(dirname "$0")/lib.sh"
N=ahead$$
psql -X -At -d r -c "SELECT rl_define('$N', 'token bucket', 10, '1 hour', storage => 'memory')" >/dev/null
psql -X -At -d r -c "SET ratelimit.now_override = '2030-01-01 00:00+00'" \
	-c "SELECT 'take 1 at 00:00', ok FROM rl_limit('$N', 'k', 1)" | grep -v SET
open_session A
q A "SET ratelimit.now_override = '2030-01-01 01:00+00'; BEGIN; SELECT 'open: take 10 at 01:00', ok, remaining FROM rl_limit('$N', 'k', 10);"
restart_cluster immediate
close_session A 2>/dev/null
psql -X -At -d r -c "SET ratelimit.now_override = '2030-01-01 01:00+00'" \
	-c "SELECT 'after restart at 01:00: value (0 allowed)', value FROM rl_value('$N', 'k')" | grep -v SET
