-- ratelimit.now_override is parsed by a check hook that hands its result to
-- the GUC machinery, which frees it on every later change: set, reset,
-- rolled back, set in a function, RESET ALL.  The server must survive each
-- (from PostgreSQL 16 on, memory from anything but guc_malloc crashes it
-- here), and every change must take effect.
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('pinned', 'token bucket', 1, '1 hour');
SELECT ok FROM rl_limit('pinned', 'k');
SELECT ok FROM rl_limit('pinned', 'k');
RESET ratelimit.now_override;
SHOW ratelimit.now_override;
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT ok FROM rl_limit('pinned', 'k');
-- set in a transaction that aborts: the previous value comes back
BEGIN;
SET ratelimit.now_override = '2026-01-01 03:00:00+00';
SET LOCAL ratelimit.now_override = '2026-01-01 04:00:00+00';
SELECT 1 / 0;
ROLLBACK;
SHOW ratelimit.now_override;
SELECT ok FROM rl_limit('pinned', 'k');
-- a savepoint rolled back, then a commit
BEGIN;
SAVEPOINT s;
SET ratelimit.now_override = '2026-01-01 05:00:00+00';
ROLLBACK TO SAVEPOINT s;
SET LOCAL ratelimit.now_override = '2026-01-01 06:00:00+00';
COMMIT;
SHOW ratelimit.now_override;
-- as a function's setting
CREATE FUNCTION pinned_later() RETURNS boolean LANGUAGE sql
  SET ratelimit.now_override = '2026-01-01 02:00:00+00'
  AS $$ SELECT ok FROM rl_limit('pinned', 'k') $$;
SELECT pinned_later();
SHOW ratelimit.now_override;
-- an invalid value changes nothing
SET ratelimit.now_override = 'not a time';
SHOW ratelimit.now_override;
RESET ALL;
SHOW ratelimit.now_override;
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
RESET ALL;
DISCARD ALL;
-- still the same server process and session
SELECT 'alive' AS server;
DROP FUNCTION pinned_later();
SELECT rl_undefine('pinned');
-- a parallel worker restores a pinned clock written in ISO form with 'Z'
-- (it used to crash the worker, and with it the server)
SET ratelimit.now_override = '2026-01-01T00:00:00Z';
SELECT set_config(name, 'on', false) AS forced_parallel
FROM pg_settings WHERE name IN ('force_parallel_mode', 'debug_parallel_query');
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SELECT count(*) > 0 AS counted_in_a_worker FROM pg_class;
SELECT rl_now();
RESET ALL;
SELECT 'alive' AS server;
