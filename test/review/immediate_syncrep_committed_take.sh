#!/bin/bash
# Over-admission across an immediate shutdown: a transaction whose commit
# record is already flushed (here: waiting for a synchronous standby that
# never answers, in SyncRepWaitForLSN, before XACT_EVENT_COMMIT) counts as
# "open" for the memory store: the postmaster's shutdown writes its entry
# with pending = 0.  Recovery does not abort it (its commit is in the WAL):
# after the restart its row is there, yet its 10 tokens are back.
# Expected: value 0 (the committed take kept).  Observed: value 10.
# Run as root from the repository, cluster of test/lib.sh on RL_PORT.
source "$(dirname "$0")/lib.sh"
DATA=$RL_REPO/tmp/data
psql -X -At -d r -c "CREATE TABLE IF NOT EXISTS orders (id int)" -c "TRUNCATE orders" -c "SELECT rl_reset('sr', 'k') FROM rl_definitions WHERE name = 'sr'" \
	-c "SELECT rl_define('sr', 'token bucket', 10, '1 day', storage => 'memory')" >/dev/null
psql -X -At -d r -c "ALTER SYSTEM SET synchronous_standby_names = 'nosuchstandby'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
open_session A
# 10 granted and an order written; COMMIT hangs waiting for the standby
send A "BEGIN; INSERT INTO orders SELECT 1 WHERE (rl_limit('sr', 'k', 10)).ok; COMMIT;"
sleep 2
psql -X -At -d r -c "SELECT 'before: value', value FROM rl_value('sr', 'k')"
runuser -u postgres -- pg_ctl -D "$DATA" -m immediate -w stop >/dev/null
kill "${SPID[A]}" 2>/dev/null || true
runuser -u postgres -- pg_ctl -D "$DATA" -l "$RL_REPO/tmp/log/postgresql.log" -w start >/dev/null
psql -X -At -d r -c "ALTER SYSTEM RESET synchronous_standby_names" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -At -d r -c "SELECT 'orders committed', count(*) FROM orders"
psql -X -At -d r -c "SELECT 'after restart: value (0 expected)', value FROM rl_value('sr', 'k')"
