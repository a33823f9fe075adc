-- jitter => true spreads a denied call's retry_after over [0, period);
-- granted calls never get any.  The bounds are tested, not the randomness.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:10:00+00';
SELECT rl_define('hourly', 'fixed window', 1, '1 hour', start => '2026-01-01 00:00:00+00');
SELECT rl_define('llm', 'token bucket', 1, '1 minute', max_reserved => 10);

-- granted: no retry, jitter or not
SELECT * FROM rl_limit('hourly', 'k', jitter => true);
-- denied: the plain retry is 50 minutes; with jitter it lies in [50 min, 110 min)
SELECT * FROM rl_limit('hourly', 'k');
CREATE TEMP TABLE retries AS
SELECT (rl_limit('hourly', 'k', jitter => true)).retry_after AS r
FROM generate_series(1, 300);
SELECT min(r) >= interval '50 minutes' AS not_before,
       max(r) < interval '110 minutes' AS within_a_period,
       count(DISTINCT r) > 1 AS jittered
FROM retries;
-- rl_check and rl_limit_all take it too
SELECT (rl_check('hourly', 'k', jitter => true)).retry_after
       BETWEEN interval '50 minutes' AND interval '110 minutes' AS check_jitter;
SELECT retry_after BETWEEN interval '50 minutes' AND interval '110 minutes' AS all_jitter
FROM rl_limit_all(ARRAY['hourly'], ARRAY['k'], ARRAY[1], jitter => true);
-- a granted reservation's retry_after is when to run the work: never jittered
SELECT * FROM rl_limit('llm', 'k', 3, reserve => true, jitter => true);
SELECT * FROM rl_limit('llm', 'k', jitter => NULL);

SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
