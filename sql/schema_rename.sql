-- ALTER SCHEMA ... RENAME of the extension's schema: every call in a live
-- session keeps working, on the direct path and through the SQL
-- statements, whose saved plans named the old schema.
DROP EXTENSION ratelimit;
CREATE SCHEMA limits_a;
CREATE EXTENSION ratelimit SCHEMA limits_a;
SET search_path = public, limits_a;
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('sr', 'token bucket', 1, '1 hour', capacity => 3);
SELECT ok, remaining FROM rl_limit('sr', 'old key');
ALTER SCHEMA limits_a RENAME TO limits_b;
SET search_path = public, limits_b;
-- an existing key, a new key (an INSERT), a read, a reset, a redefinition
SELECT ok, remaining FROM rl_limit('sr', 'old key');
SELECT ok, remaining FROM rl_limit('sr', 'new key');
SELECT ok, remaining FROM rl_check('sr', 'new key');
SELECT value FROM rl_value('sr', 'old key');
SELECT rl_reset('sr', 'old key');
SELECT rl_define('sr', 'token bucket', 1, '1 hour', capacity => 4);
SELECT ok, remaining FROM rl_limit('sr', 'old key');
SELECT key, value FROM limits_b.rate_limits ORDER BY key;
-- the grant sets find the renamed schema: USAGE on it, and every function
CREATE ROLE regress_ratelimit_sr;
SELECT rl_grant_app('regress_ratelimit_sr');
SELECT has_schema_privilege('regress_ratelimit_sr', 'limits_b', 'USAGE') AS usage,
       has_function_privilege('regress_ratelimit_sr',
         'limits_b.rl_refund(text, text, float8, limits_b.rl_policy)', 'EXECUTE') AS refund;
SELECT rl_revoke_app('regress_ratelimit_sr');
SELECT has_function_privilege('regress_ratelimit_sr',
         'limits_b.rl_refund(text, text, float8, limits_b.rl_policy)', 'EXECUTE') AS refund;
REVOKE USAGE ON SCHEMA limits_b FROM regress_ratelimit_sr;
DROP ROLE regress_ratelimit_sr;
-- and back, in the same session
ALTER SCHEMA limits_b RENAME TO limits_a;
SET search_path = public, limits_a;
SELECT ok, remaining FROM rl_limit('sr', 'third key');
DROP EXTENSION ratelimit;
DROP SCHEMA limits_a;
RESET search_path;
CREATE EXTENSION ratelimit;
