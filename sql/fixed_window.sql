-- Fixed window: windows at start + k * period; a hash phase without start.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:10:00+00';
SELECT rl_define('api', 'fixed window', 5, '1 hour', start => '2026-01-01 00:00:00+00');

-- ts is the window start; reset_after is the time to the next window
SELECT * FROM rl_limit('api', 'k', 2);
SELECT value, ts FROM rate_limits WHERE name = 'api';
SELECT * FROM rl_limit('api', 'k', 3);
SELECT * FROM rl_limit('api', 'k');
SET ratelimit.now_override = '2026-01-01 00:59:59.999999+00';
SELECT * FROM rl_check('api', 'k');
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT * FROM rl_limit('api', 'k');
SELECT value, ts FROM rate_limits WHERE name = 'api';

-- unused windows accumulate only up to capacity
SELECT rl_define('burst', 'fixed window', 5, '1 hour', capacity => 12, start => '2026-01-01 00:00:00+00');
SELECT * FROM rl_limit('burst', 'k', 12);
SELECT * FROM rl_limit('burst', 'k', 12);
SET ratelimit.now_override = '2026-01-01 05:30:00+00';
SELECT * FROM rl_value('burst', 'k');

-- a start in the future still defines the phase of every window
SELECT rl_define('future', 'fixed window', 1, '1 day', start => '2030-06-01 12:00:00+00');
SELECT * FROM rl_limit('future', 'k');
SELECT ts FROM rate_limits WHERE name = 'future';

-- without start, each key's phase is a hash of (name, key): fixed, spread
SELECT rl_define('hourly', 'fixed window', 1, '1 hour');
SELECT * FROM rl_limit('hourly', 'a');
SELECT * FROM rl_limit('hourly', 'b');
SELECT * FROM rl_limit('hourly');
SELECT key, ts FROM rate_limits WHERE name = 'hourly' ORDER BY key;
-- the phase survives a reset
SELECT rl_reset('hourly', 'a');
SELECT * FROM rl_limit('hourly', 'a');
SELECT key, ts FROM rate_limits WHERE name = 'hourly' AND key = 'a';
-- over many keys the phases spread across the period
SELECT count(DISTINCT date_trunc('minute', (rl_value('hourly', k)).ts)) > 40 AS spread
FROM generate_series(1, 500) AS k;

SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
