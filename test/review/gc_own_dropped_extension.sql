-- Run: psql -X -d <fresh db> -f test/review/gc_own_dropped_extension.sql
-- Last line should print 0 (the key is drained under 10/day); it prints 10.
-- rl_gc_memory (or rl_gc) in a transaction that dropped the extension and
-- installed it again (here in another schema) treats the old install's
-- entries as those of a dropped extension: spaces_gone() asks the syscache,
-- which sees the transaction's own uncommitted DROP.  The entries go at
-- once; a ROLLBACK brings the old install back with its drained keys full.
\set ON_ERROR_STOP 1
DROP EXTENSION IF EXISTS ratelimit;
DROP SCHEMA IF EXISTS other CASCADE;
CREATE EXTENSION ratelimit;
SET ratelimit.now_override = '2030-01-01 00:00:00+00';
SELECT rl_define('slow', 'token bucket', 10, '1 day', storage => 'memory');
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted_10 FROM generate_series(1, 11);
BEGIN;
DROP EXTENSION ratelimit;
CREATE SCHEMA other;
CREATE EXTENSION ratelimit SCHEMA other;
SELECT other.rl_gc_memory() AS dropped;
ROLLBACK;
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted_after_rollback_should_be_0
FROM generate_series(1, 10);
