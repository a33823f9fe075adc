-- The per-backend definition cache stays coherent:
--  - past its size bound (10,000 names; any caller can fill it with
--    inline-config names), it still hears of a change to rl_definitions;
--  - a change made under session_replication_role = replica (as a
--    logical-replication worker applies changes, and as pg_restore
--    --disable-triggers loads data) reaches it too.
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
