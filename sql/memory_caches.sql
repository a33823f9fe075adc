-- What a backend keeps between calls, and what must reach its next call:
-- a limit's definition (redefined, or undefined and defined again with
-- other numbers), the install of the extension whose rl_definitions
-- addresses memory keys (dropped and created again, or a rollback of
-- that), and each function's result row (a function kept by ALTER
-- EXTENSION UPDATE whose result type gained columns).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- a redefinition between two calls of the session: the next call decides
-- under the new numbers
SELECT rl_define('mcache', 'token bucket', 2, '1 hour', storage => 'memory');
SELECT ok, remaining, capacity FROM rl_limit('mcache', 'k');
SELECT rl_define('mcache', 'token bucket', 5, '1 hour', storage => 'memory');
SELECT ok, remaining, capacity FROM rl_limit('mcache', 'k');
-- undefined, then defined again with other numbers: a fresh key
SELECT rl_undefine('mcache');
SELECT rl_define('mcache', 'fixed window', 1, '1 hour',
                 start => '2026-01-01 00:00:00+00', storage => 'memory');
SELECT ok, remaining, capacity FROM rl_limit('mcache', 'k');
SELECT ok, remaining, capacity FROM rl_limit('mcache', 'k');
SELECT rl_undefine('mcache');

-- the extension dropped and created again in one transaction: the new
-- install's key is its own, full; after the rollback the old install's
-- drained key is back
SELECT rl_define('mcache_space', 'token bucket', 1, '1 day', storage => 'memory');
SELECT ok FROM rl_limit('mcache_space', 'k');
BEGIN;
SET LOCAL client_min_messages = warning;
DROP EXTENSION ratelimit CASCADE;
CREATE EXTENSION ratelimit;
SELECT rl_define('mcache_space', 'token bucket', 1, '1 day', storage => 'memory');
SELECT ok AS new_install_granted FROM rl_limit('mcache_space', 'k');
ROLLBACK;
SELECT ok AS old_install_granted FROM rl_limit('mcache_space', 'k');
SELECT rl_undefine('mcache_space');

-- rl_check of 1.2 is kept by the update, and rl_result gains columns: the
-- same session's next call returns the new row
BEGIN;
SET LOCAL client_min_messages = warning;
DROP EXTENSION ratelimit CASCADE;
CREATE EXTENSION ratelimit VERSION '1.2';
SELECT rl_define('mcache_type', 'token bucket', 4, '1 hour');
SELECT * FROM rl_check('mcache_type', 'k');
ALTER EXTENSION ratelimit UPDATE TO '1.3';
SELECT * FROM rl_check('mcache_type', 'k');
ROLLBACK;
SELECT ok, remaining, capacity FROM rl_check('mcache_type', 'k',
  config => rl_token_bucket(4, '1 hour'));
RESET ratelimit.now_override;
