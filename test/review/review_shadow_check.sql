-- Review (policies): rl_check is "what rl_limit would answer right now";
-- on a limit in shadow mode rl_limit grants every call, but rl_check
-- answered ok = false (and rl_headers of it sent a Retry-After), so an
-- application that asks rl_check first refuses in shadow mode.
-- Before the fix: rl_check f, rl_limit t.
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('sc', 'token bucket', 1, '1 hour', shadow => true);
SELECT ok FROM rl_limit('sc', 'k');
SELECT ok, retry_after FROM rl_check('sc', 'k');
SELECT rl_headers('sc', rl_check('sc', 'k'));
SELECT ok, retry_after FROM rl_limit('sc', 'k');
SELECT rl_undefine('sc');
