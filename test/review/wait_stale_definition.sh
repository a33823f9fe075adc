#!/bin/bash
# Over-admission: rl_limit(..., wait => interval) on a memory limit decides
# with the policy it read before sleeping.  A table limit rechecks its
# definition once its row is held (consume_one -> recheck_definition); the
# memory path (consume_memory) never does, and rl_consume_waiting resolves
# the target once.  A limit tightened while a call sleeps (rate lowered,
# capacity lowered, shadow switched off) grants under the old one.
# Allowed: refused (1 an hour, drained a few seconds ago).  Observed: granted.
source "$(dirname "$0")/lib.sh"
N=wait$$
psql -X -At -d r -c "SELECT rl_define('$N', 'token bucket', 1, '3 seconds', storage => 'memory')" \
	-c "SELECT 'drain', ok FROM rl_limit('$N', 'k')"
open_session A
send A "SELECT 'waiting call: ok (false allowed)', ok FROM rl_limit('$N', 'k', wait => '20 seconds');"
sleep 1
psql -X -At -d r -c "SELECT rl_define('$N', 'token bucket', 1, '1 hour', storage => 'memory')" >/dev/null
echo "redefined: 1 an hour"
sleep 4
q A "SELECT 1;" >/dev/null; grep -v "^1$" "${SOUT[A]}" | grep -v __done
close_session A
