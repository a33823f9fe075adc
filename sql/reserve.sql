-- Reservations: take tokens now, run the work at retry_after.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('llm', 'token bucket', 10, '1 minute', max_reserved => 30);

-- 10 available, 15 asked: granted with a deficit of 5, run in 30 s
SELECT * FROM rl_limit('llm', 'u', 15, reserve => true);
SELECT value, ts FROM rate_limits WHERE name = 'llm';
-- without reserve the same limit says no
SELECT * FROM rl_limit('llm', 'u', 1);
-- down to -30 is allowed; past it is denied, and nothing is written
SELECT * FROM rl_limit('llm', 'u', 25, reserve => true);
SELECT * FROM rl_limit('llm', 'u', 1, reserve => true);
SELECT value FROM rate_limits WHERE name = 'llm';
-- the deficit is paid back over time: 1 token per 6 s
SET ratelimit.now_override = '2026-01-01 00:00:06+00';
SELECT * FROM rl_limit('llm', 'u', 1, reserve => true);
-- a count larger than capacity + max_reserved can never be granted
SELECT * FROM rl_limit('llm', 'u', 41, reserve => true);
SELECT * FROM rl_limit('llm', 'u', 40, reserve => true);

-- without max_reserved, reservations go as deep as the capacity: 17 of 5
-- is an error that writes nothing, 10 leaves -5, paid back in one window
SELECT rl_define('default_depth', 'fixed window', 5, '1 hour', start => '2026-01-01 00:00:00+00');
SELECT * FROM rl_limit('default_depth', 'u', 17, reserve => true);
SELECT count(*) FROM rate_limits WHERE name = 'default_depth';
SELECT * FROM rl_limit('default_depth', 'u', 10, reserve => true);
SELECT value, ts FROM rate_limits WHERE name = 'default_depth';
SELECT * FROM rl_check('default_depth', 'u', 1, reserve => true);

-- capacity 0 and a max_reserved: every call is a reservation, spaced
-- perfectly, up to 10 ahead
SELECT rl_define('paced', 'token bucket', 1, '1 second', capacity => 0, max_reserved => 10);
SELECT * FROM rl_limit('paced', 'u', 1, reserve => true);
SELECT * FROM rl_limit('paced', 'u', 1, reserve => true);
SELECT * FROM rl_limit('paced', 'u', 1);

-- a reservation past the default depth (the capacity, 1) is an error,
-- and writes nothing
SELECT rl_define('glacial', 'token bucket', 1, '100 years');
SELECT * FROM rl_limit('glacial', 'u', 1e6, reserve => true);
SELECT count(*) FROM rate_limits WHERE name = 'glacial';

-- a policy that takes over 1000 years to fill is refused when defined, so
-- no call on an accepted policy can fail for its waits (the stress test
-- found this: 500 tokens at 1 per 100 years made every denial an error)
SELECT rl_define('slow', 'token bucket', 1, '100 years', capacity => 500);
SELECT rl_define('slow', 'token bucket', 1, '100 years', capacity => 5, max_reserved => 6);
SELECT rl_define('slow', 'token bucket', 1, '1 year', capacity => 500);
SELECT ok FROM rl_limit('slow', 'u', 500);
SELECT * FROM rl_limit('slow', 'u');

SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
