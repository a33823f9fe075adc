-- Review (policies): a call shadow mode granted took nothing, yet rl_stats
-- counted its count in tokens and, since it has a retry_after, counted it
-- as a reservation (deepest_reservation too).
-- Before the fix: tokens 3, reservations 2 for 's' (1 token taken, no
-- reserve); tokens 4, reservations 3 for 'sr' (3 taken, 2 reservations).
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_stats_reset();
SELECT rl_define('s', 'token bucket', 1, '1 hour', shadow => true);
SELECT ok, retry_after FROM rl_limit('s', 'k');
SELECT ok, retry_after FROM rl_limit('s', 'k');
SELECT ok, retry_after FROM rl_limit('s', 'k');
SELECT rl_define('sr', 'token bucket', 1, '1 hour', max_reserved => 2, shadow => true);
SELECT ok, retry_after, remaining FROM generate_series(1, 4), LATERAL rl_limit('sr', 'k' || repeat('', generate_series), reserve => true);
SELECT name, calls, granted, shadow_refused, tokens, reservations, deepest_reservation
FROM rl_stats WHERE name IN ('s', 'sr') ORDER BY name;
SELECT rl_undefine('s'); SELECT rl_undefine('sr');
