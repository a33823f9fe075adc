#!/bin/bash
# ratelimit.memory_after_crash = 'empty': after a crash every key with no
# entry counts as emptied at the restart and refills from there (fails
# closed for up to one refill period).  A clean shutdown soon after (fast
# or immediate) writes the entries, but not empty_since: at the next start
# every key with no entry (and every untouched entry, dropped on sight)
# is full again, within the period the crash's 'empty' promised.
# Limit: 10 a day.  Allowed after the second restart: about 0 (minutes
# after the crash).  Observed: 10 granted.
# Run as root from the repository, cluster of test/lib.sh on RL_PORT.
source "$(dirname "$0")/lib.sh"
C="config => rl_token_bucket(10, '1 day', storage => 'memory')"
K=k$$
psql -X -At -d postgres -c "ALTER SYSTEM SET ratelimit.memory_after_crash = 'empty'" >/dev/null
psql -X -At -d postgres -c "SELECT pg_reload_conf()" >/dev/null
restart_cluster kill
psql -X -At -d r -c "SELECT 'after the crash: remaining (about 0 allowed)', remaining FROM rl_check('emp', '$K', 1, $C)"
psql -X -At -d r -c "SELECT 'empty_since', memory_empty_since IS NOT NULL FROM rl_stats_info"
restart_cluster ${1:-fast}
psql -X -At -d r -c "SELECT 'after a clean restart: empty_since', memory_empty_since IS NOT NULL FROM rl_stats_info"
psql -X -At -d r -c "SELECT 'take 10: ok (false allowed)', ok FROM rl_limit('emp', '$K', 10, $C)"
psql -X -At -d postgres -c "ALTER SYSTEM RESET ratelimit.memory_after_crash" >/dev/null
psql -X -At -d postgres -c "SELECT pg_reload_conf()" >/dev/null
