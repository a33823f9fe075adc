-- The per-backend definition cache stays coherent:
--  - past its size bound (10,000 names; any caller can fill it with
--    inline-config names), it still hears of a change to rl_definitions;
--  - a change made under session_replication_role = replica (as a
--    logical-replication worker applies changes, and as pg_restore
--    --disable-triggers loads data) reaches it too;
--  - so does one that fires row triggers only, as a logical-replication
--    worker's insert, update or delete does (test/t/011_logical_replication.pl
--    runs a real subscription).
-- Each change here is made by this same session, whose own changes reach
-- its cache at its next command, exactly as other sessions' reach theirs at
-- commit (test/specs/definition_cache.spec).
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- fill the cache past its bound; the last name used has no definition
SELECT count(*) FILTER (WHERE ok) AS granted
FROM generate_series(1, 10001) AS i,
     LATERAL rl_limit('inline' || i, 'k', config => rl_token_bucket(1, '1 hour'));
SELECT ok FROM rl_limit('inline10001', 'k', config => rl_token_bucket(1, '1 hour'));
-- defining that name must be seen at once: its inline config is refused now
SELECT rl_define('inline10001', 'token bucket', 5, '1 hour');
SELECT ok FROM rl_limit('inline10001', 'k', config => rl_token_bucket(5, '1 hour'));
SELECT ok, remaining FROM rl_limit('inline10001', 'k');	-- its own state, full
DELETE FROM rate_limits WHERE name LIKE 'inline%';
SELECT rl_undefine('inline10001');

-- a change made with replica triggers only
SELECT rl_define('replicated', 'token bucket', 1, '1 hour', capacity => 10);
SELECT ok, remaining FROM rl_limit('replicated', 'k');
SET session_replication_role = replica;
UPDATE rl_definitions SET capacity = 2 WHERE name = 'replicated';
RESET session_replication_role;
SELECT ok, remaining FROM rl_limit('replicated', 'k');	-- 9 clamped to 2
SET session_replication_role = replica;
DELETE FROM rl_definitions WHERE name = 'replicated';
RESET session_replication_role;
SELECT ok FROM rl_limit('replicated', 'k');	-- no longer defined
DELETE FROM rate_limits WHERE name = 'replicated';

-- Two triggers, both enabled always: one per statement (it is the one a
-- TRUNCATE fires) and one per row (the one a logical-replication worker
-- fires for an insert, update or delete).
SELECT tgname, tgenabled, pg_get_triggerdef(oid) AS definition
FROM pg_trigger WHERE tgrelid = 'rl_definitions'::regclass ORDER BY tgname;

-- the row trigger alone: with the statement trigger off, as for the
-- changes an apply worker makes
SELECT rl_define('rows', 'token bucket', 1, '1 hour', capacity => 10);
ALTER TABLE rl_definitions DISABLE TRIGGER rl_definitions_changed;
SELECT ok, remaining FROM rl_limit('rows', 'k');
UPDATE rl_definitions SET capacity = 2 WHERE name = 'rows';
SELECT ok, remaining FROM rl_limit('rows', 'k');	-- 9 clamped to 2
DELETE FROM rl_definitions WHERE name = 'rows';
SELECT ok FROM rl_limit('rows', 'k');	-- no longer defined
INSERT INTO rl_definitions (name, kind, rate, period, capacity)
VALUES ('rows', 'token bucket', 1, '1 hour', 5);
SELECT ok, remaining FROM rl_limit('rows', 'k2');	-- defined again, capacity 5
ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_changed;
SELECT rl_undefine('rows');

-- pg_restore --data-only --disable-triggers wraps the data in DISABLE and
-- ENABLE TRIGGER ALL, which leaves both triggers plain ENABLE: they no
-- longer fire under session_replication_role = replica, as apply workers
-- run.  Then nothing is cached, and such a change still reaches the call.
ALTER TABLE rl_definitions DISABLE TRIGGER ALL;
ALTER TABLE rl_definitions ENABLE TRIGGER ALL;
SELECT tgname, tgenabled FROM pg_trigger
WHERE tgrelid = 'rl_definitions'::regclass ORDER BY tgname;
SELECT rl_define('restored', 'token bucket', 1, '1 hour', capacity => 10);
SELECT ok, remaining FROM rl_limit('restored', 'k');
SET session_replication_role = replica;
UPDATE rl_definitions SET capacity = 2 WHERE name = 'restored';
RESET session_replication_role;
SELECT ok, remaining FROM rl_limit('restored', 'k');	-- 8 clamped to 2, less 1
ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_changed;
ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_row_changed;
ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_guard;
ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_guard_truncate;
SELECT rl_undefine('restored');
