-- Run: psql -X -d <db> -f test/review/delete_reinsert_same_definition.sql
-- Last line should print 0; it prints 10.
-- A transaction that deletes a memory limit's definition and inserts the
-- same definition again (a config sync that replaces rl_definitions:
-- DELETE + INSERT, TRUNCATE + COPY, pg_restore --data-only --clean) never
-- leaves the name undefined for anyone, and the policy in force never
-- changes; yet finish_names() drops every entry of the name at commit, as
-- for rl_undefine, because one of its changes said "dropped".  A drained
-- key starts full again: 10 more grants in the same day.  (A table limit's
-- rows survive the same edit.)
\set ON_ERROR_STOP 1
DROP EXTENSION IF EXISTS ratelimit;
CREATE EXTENSION ratelimit;
SET ratelimit.now_override = '2030-01-01 00:00:00+00';
SELECT rl_define('daily', 'token bucket', 10, '1 day', storage => 'memory');
SELECT rl_define('tdaily', 'token bucket', 10, '1 day');
SELECT count(*) FILTER (WHERE (rl_limit('daily', 'k')).ok) AS granted_10 FROM generate_series(1, 11);
SELECT count(*) FILTER (WHERE (rl_limit('tdaily', 'k')).ok) AS table_granted_10 FROM generate_series(1, 11);
BEGIN;
CREATE TEMP TABLE saved AS SELECT * FROM rl_definitions;
DELETE FROM rl_definitions;
INSERT INTO rl_definitions SELECT * FROM saved;
COMMIT;
SELECT name, kind, rate, period, storage FROM rl_definitions ORDER BY name;
SELECT count(*) FILTER (WHERE (rl_limit('tdaily', 'k')).ok) AS table_granted_should_be_0 FROM generate_series(1, 10);
SELECT count(*) FILTER (WHERE (rl_limit('daily', 'k')).ok) AS memory_granted_should_be_0 FROM generate_series(1, 10);
-- the same with TRUNCATE
SELECT count(*) FILTER (WHERE (rl_limit('daily', 'k')).ok) AS drain FROM generate_series(1, 10);
BEGIN;
TRUNCATE rl_definitions;
INSERT INTO rl_definitions SELECT * FROM saved;
COMMIT;
SELECT count(*) FILTER (WHERE (rl_limit('daily', 'k')).ok) AS after_truncate_should_be_0 FROM generate_series(1, 10);
