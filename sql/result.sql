-- What rl_limit and rl_check answer, for an application: the limit's size
-- (capacity), whole tokens where the limit counts whole tokens, whether to
-- act now (allowed: a reservation that must wait is ok but not allowed),
-- and the times in whole milliseconds, rounded up.  Both stores; make test
-- runs this file on the direct path and again on the SQL path.
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('res_t', 'token bucket', 6, '1 minute');
SELECT rl_define('res_m', 'token bucket', 6, '1 minute', storage => 'memory');

-- 6 a minute: one token every 10 seconds
SELECT * FROM rl_limit('res_t', 'k', 6);
SELECT * FROM rl_limit('res_m', 'k', 6);
-- 4.5 seconds on, 0.45 of a token is back: 0 whole tokens; refused, and
-- the token is 5.5 seconds away (5500 ms)
SET ratelimit.now_override = '2026-01-01 00:00:04.5+00';
SELECT * FROM rl_limit('res_t', 'k');
SELECT * FROM rl_check('res_m', 'k');
-- a count that is not whole: remaining is exact
SELECT ok, remaining FROM rl_check('res_t', 'k', 0.25);
-- retry_after_ms is rounded up: 1 microsecond is 1 ms
SET ratelimit.now_override = '2026-01-01 00:00:09.999999+00';
SELECT ok, retry_after, retry_after_ms FROM rl_check('res_t', 'k');
SET ratelimit.now_override = '2026-01-01 00:00:10+00';
SELECT ok, retry_after, retry_after_ms, allowed FROM rl_check('res_t', 'k');

-- a reservation that must wait: ok (its tokens are taken), not allowed;
-- one that need not wait is allowed
SELECT rl_define('res_r', 'token bucket', 1, '1 minute', max_reserved => 2);
SELECT ok, allowed, retry_after, retry_after_ms, remaining
FROM rl_limit('res_r', 'k', reserve => true);
SELECT ok, allowed, retry_after, retry_after_ms, remaining
FROM rl_limit('res_r', 'k', reserve => true);
-- shadow mode lets a refused call through: ok and allowed, with the
-- retry_after an enforcing limit would give
SELECT rl_define('res_s', 'token bucket', 1, '1 minute', shadow => true);
SELECT ok, allowed, retry_after_ms FROM rl_limit('res_s', 'k', 1);
SELECT ok, allowed, retry_after_ms FROM rl_limit('res_s', 'k', 1);

-- a sharded limit reports the whole limit's capacity; an inline config its
-- own
SELECT rl_define('res_sh', 'token bucket', 100, '1 second', shards => 4);
SELECT ok, capacity FROM rl_limit('res_sh', 'k');
SELECT ok, capacity, remaining
FROM rl_limit('res_inline', 'k', config => rl_fixed_window(3, '1 hour'));

-- rl_limit_all: the shape of rl_result; remaining, reset_after and capacity
-- are the refusing limit's, or, all granted, the one with the fewest tokens
-- left (here res_t, 2 of 6 left, not res_sh, 99 of 100)
SELECT * FROM rl_limit_all(ARRAY['res_t', 'res_m'], ARRAY['a', 'a'], ARRAY[1, 1]);
SELECT * FROM rl_limit_all(ARRAY['res_t', 'res_m'], ARRAY['a', 'a'], ARRAY[6, 1]);
SELECT * FROM rl_limit_all(ARRAY['res_r'], ARRAY['b'], ARRAY[2], reserve => true);
SELECT * FROM rl_limit_all(ARRAY['res_sh', 'res_t'], ARRAY['c', 'c'], ARRAY[1, 4]);

SELECT rl_undefine(n) FROM unnest(ARRAY['res_t', 'res_m', 'res_r', 'res_s', 'res_sh']) n;
RESET ratelimit.now_override;
RESET intervalstyle;
