-- Sliding window: at most rate calls in any period, estimated from the
-- current window's count and the previous window's, weighted by the part
-- of it still inside the period that ends now.  Each call runs on both
-- stores (sw: table, swm: memory); their answers must agree.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:30+00';
SELECT rl_define('sw', 'sliding window', 6, '1 minute', start => '2026-01-01 00:00:00+00');
SELECT rl_define('swm', 'sliding window', 6, '1 minute', start => '2026-01-01 00:00:00+00', storage => 'memory');
SELECT name, kind, rate, period, capacity, max_reserved, shards, start, storage
FROM rl_definitions WHERE name IN ('sw', 'swm') ORDER BY name;
CREATE TEMP VIEW stores AS SELECT * FROM (VALUES ('sw'), ('swm')) v(s);

-- 4 of 6 in [0:00, 0:01); full again once they leave the sliding window
SELECT s, r.* FROM stores, LATERAL rl_limit(s, 'k', 4) r;
-- 3 more: not before 3 of the 4 weigh less than 1, at 0:01:15
SELECT s, r.* FROM stores, LATERAL rl_limit(s, 'k', 3) r;
SELECT value, ts, prev FROM rate_limits WHERE name = 'sw';
SET ratelimit.now_override = '2026-01-01 00:01:14.999999+00';
SELECT s, r.* FROM stores, LATERAL rl_check(s, 'k', 3) r;
SET ratelimit.now_override = '2026-01-01 00:01:15+00';
SELECT s, r.* FROM stores, LATERAL rl_limit(s, 'k', 3) r;
-- the window is 0:01; prev is what 0:00 counted
SELECT value, ts, prev FROM rate_limits WHERE name = 'sw';
SET ratelimit.now_override = '2026-01-01 00:01:30+00';
-- what a call could take now: 6 - 3 - 4 * 1/2
SELECT s, r.* FROM stores, LATERAL rl_value(s, 'k') r;
SELECT name, key, kind, rate, capacity, value, ts, remaining, reset_after, idle,
       stored_value, stored_ts, stored_prev, start
FROM rl_status WHERE name = 'sw';
SELECT s, r.* FROM stores, LATERAL rl_check(s, 'k', 2) r;
-- the next window: prev = 3, nothing counted yet
SET ratelimit.now_override = '2026-01-01 00:02:00+00';
SELECT s, r.* FROM stores, LATERAL rl_check(s, 'k', 3) r;
SELECT s, r.* FROM stores, LATERAL rl_check(s, 'k', 4) r;
SELECT idle FROM rl_status WHERE name = 'sw';
-- a window passed with no call: prev is 0, the key is idle and rl_gc drops it
SET ratelimit.now_override = '2026-01-01 00:03:00+00';
SELECT idle, remaining FROM rl_status WHERE name = 'sw';
SELECT rl_gc();
SELECT count(*) FROM rate_limits WHERE name = 'sw';
SELECT s, r.* FROM stores, LATERAL rl_limit(s, 'k', 6) r;

-- HTTP fields: q the rate, w the period, t until full again
SELECT s, rl_headers(s, r) FROM stores, LATERAL rl_check(s, 'k') r;

-- refunds give back to the current window; penalties weigh on the next
SELECT s, r.* FROM stores, LATERAL rl_refund(s, 'k', 2) r;
SELECT s, r.* FROM stores, LATERAL rl_penalize(s, 'k', 10) r;
SELECT value, ts, prev FROM rate_limits WHERE name = 'sw';
SET ratelimit.now_override = '2026-01-01 00:04:30+00';
-- prev = 14, half of it counts: 6 - 7 < 1
SELECT s, r.* FROM stores, LATERAL rl_limit(s, 'k') r;

-- a block refuses until the window that holds its end is over, then refills
SELECT s, r.* FROM stores, LATERAL rl_block(s, 'b', '90 seconds') r;
SELECT s, r.* FROM stores, LATERAL rl_limit(s, 'b') r;
SET ratelimit.now_override = '2026-01-01 00:07:10+00';
SELECT s, r.* FROM stores, LATERAL rl_limit(s, 'b') r;

-- block_for and shadow mode work as with the other kinds
SELECT rl_define('swb', 'sliding window', 1, '1 minute', start => '2026-01-01 00:00:00+00', block_for => '5 minutes');
SELECT ok, retry_after FROM rl_limit('swb', 'k');
SELECT ok, retry_after FROM rl_limit('swb', 'k');
SELECT value, ts, prev FROM rate_limits WHERE name = 'swb';

-- inline configs: rate, period, start, storage
SELECT * FROM rl_sliding_window(10, '1 hour');
SELECT * FROM rl_limit('inl', 'k', 10, config => rl_sliding_window(10, '1 hour', '2026-01-01'));
SELECT * FROM rl_limit('inl', 'k', config => rl_sliding_window(10, '1 hour', '2026-01-01'));
SELECT * FROM rl_limit('inlm', 'k', 10, config => rl_sliding_window(10, '1 hour', '2026-01-01', 'memory'));
SELECT * FROM rl_limit('inlm', 'k', config => rl_sliding_window(10, '1 hour', '2026-01-01', 'memory'));
SELECT name, kind, rate, period, capacity, start, stored_prev FROM rl_status WHERE name = 'inl';

-- without start, each key's windows have a phase of their own
SELECT rl_define('swh', 'sliding window', 2, '1 hour');
SELECT ok FROM rl_limit('swh', 'a', 2);
SELECT ts <= '2026-01-01 00:07:10+00' AND ts > '2026-01-01 00:07:10+00'::timestamptz - interval '1 hour'
   AND ts <> '2026-01-01 00:00:00+00' AS phase_ok
FROM rate_limits WHERE name = 'swh' AND key = 'a';

-- what a sliding window refuses (22023)
SELECT rl_limit('sw', 'k', reserve => true);
SELECT rl_define('bad', 'sliding window', 6, '1 minute', capacity => 10);
SELECT rl_define('bad', 'sliding window', 6, '1 minute', max_reserved => 1);
SELECT rl_define('bad', 'sliding window', 6, '1 minute', shards => 2);
SELECT rl_define('bad', 'sliding window', 6, '1 day', time_zone => 'UTC');
SELECT rl_limit('sw', 'k', 7);
SELECT rl_define('bad', 'sliding', 6, '1 minute');

-- the other kinds store no third number
SELECT rl_define('tb', 'token bucket', 5, '1 minute');
SELECT ok FROM rl_limit('tb', 'k');
SELECT prev IS NULL AS no_prev FROM rate_limits WHERE name = 'tb';
-- redefined from a sliding window, a key keeps its value and ts; prev goes
SELECT rl_define('sw', 'fixed window', 6, '1 minute', start => '2026-01-01 00:00:00+00');
SELECT ok FROM rl_limit('sw', 'k');
SELECT value, ts, prev FROM rate_limits WHERE name = 'sw' AND key = 'k';

SELECT rl_reset('swm', k) FROM unnest(ARRAY['k', 'b']) k;
SELECT rl_undefine(n) FROM unnest(ARRAY['sw', 'swm', 'swb', 'swh', 'tb']) n;
DELETE FROM rate_limits;
SELECT rl_reset('inlm', 'k', config => rl_sliding_window(10, '1 hour', '2026-01-01', 'memory'));
RESET ratelimit.now_override;

-- a fixed window redefined as a sliding window in the middle of a window:
-- its count before the current window is unknown, and taken as a full
-- window (N), never as none
SET ratelimit.now_override = '2026-05-01 00:00:50+00';
SELECT rl_define('kind_change', 'fixed window', 10, '1 minute',
	start => '2026-05-01 00:00:00+00');
SELECT ok FROM rl_limit('kind_change', 'k', 10);
SET ratelimit.now_override = '2026-05-01 00:01:10+00';
SELECT ok FROM rl_limit('kind_change', 'k', 2);
SET ratelimit.now_override = '2026-05-01 00:01:20+00';
SELECT rl_define('kind_change', 'sliding window', 10, '1 minute',
	start => '2026-05-01 00:00:00+00');
-- 12 taken since 00:00:50.  Counting the window before as 10 calls spread
-- over it: 8 - 10 * 40/60 = 1.33 may be taken (taking it as empty would
-- allow 8, 20 within a minute)
-- (rl_check's remaining counts whole tokens: 0 after this call; rl_value
-- has the exact amount a call could take, 1.33)
SELECT ok, remaining FROM rl_check('kind_change', 'k');
SELECT round(value::numeric, 2) AS available FROM rl_value('kind_change', 'k');
SELECT ok FROM rl_check('kind_change', 'k', 2);
