-- The algebra's edges, through the SQL functions, each at an exact
-- instant:
--  1. a capacity lowered by a redefinition clamps a fuller key on its next
--     call, with no time passed (token bucket) and mid-window (fixed);
--  2. a fixed window refills only for whole windows started since the
--     stored window start: half a window adds nothing, the next boundary
--     adds exactly rate (capacity above rate, so the cap hides nothing);
--  3. a refused call's retry_after comes from the stored fractional state,
--     not from a rounded intermediate: one microsecond before now +
--     retry_after the call is refused, at it granted;
--  4. a sharded limit splits max_reserved like rate and capacity: however
--     the calls spread, no shard reserves past its share and the shards
--     together never past max_reserved.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

-- 1. lowered capacity, token bucket: same instant as the last write
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('low', 'token bucket', 1, '1 hour', capacity => 10);
SELECT ok, remaining FROM rl_limit('low', 'k', 1);		-- 9 left
SELECT rl_define('low', 'token bucket', 1, '1 hour', capacity => 5);
SELECT ok, remaining FROM rl_check('low', 'k', 1);
SELECT value FROM rl_value('low', 'k');
SELECT ok, remaining FROM rl_limit('low', 'k', 1);		-- 5 - 1, not 9 - 1
SELECT value FROM rate_limits WHERE name = 'low';
SELECT rl_undefine('low');

-- 1. lowered capacity, fixed window: in the middle of a window
SELECT rl_define('lowfw', 'fixed window', 10, '1 hour', start => '2026-01-01 00:00:00+00');
SET ratelimit.now_override = '2026-01-01 00:10:00+00';
SELECT ok, remaining FROM rl_limit('lowfw', 'k', 2);	-- 8 left
SET ratelimit.now_override = '2026-01-01 00:30:00+00';
SELECT rl_define('lowfw', 'fixed window', 10, '1 hour', capacity => 5, start => '2026-01-01 00:00:00+00');
SELECT ok, remaining FROM rl_limit('lowfw', 'k', 1);	-- 5 - 1
SELECT ok, remaining FROM rl_limit('lowfw', 'k', 5);	-- refused
SELECT rl_undefine('lowfw');

-- 2. partial windows: rate 3, capacity 10, emptied at 00:00
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('win', 'fixed window', 3, '1 hour', capacity => 10, start => '2026-01-01 00:00:00+00');
SELECT ok, remaining FROM rl_limit('win', 'k', 10);
SET ratelimit.now_override = '2026-01-01 00:59:59.999999+00';
SELECT value FROM rl_value('win', 'k');				-- 0: no window started
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT value FROM rl_value('win', 'k');				-- one window: 3
SET ratelimit.now_override = '2026-01-01 01:30:00+00';
SELECT value FROM rl_value('win', 'k');				-- half a window more: 3
SET ratelimit.now_override = '2026-01-01 01:59:59.999999+00';
SELECT ok, remaining FROM rl_limit('win', 'k', 4);	-- refused
SET ratelimit.now_override = '2026-01-01 02:00:00+00';
SELECT ok, remaining FROM rl_limit('win', 'k', 6);	-- two windows: exactly 6
SELECT rl_undefine('win');

-- 3. retry_after from 0.3 tokens: capacity 1, one token per 10 seconds
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('frac', 'token bucket', 1, '10 seconds');
SELECT ok, remaining FROM rl_limit('frac', 'k', 0.7);
SELECT ok, retry_after FROM rl_limit('frac', 'k', 1) \gset
SELECT :'ok' AS ok, :'retry_after' AS retry_after;
SELECT set_config('ratelimit.now_override',
  ('2026-01-01 00:00:00+00'::timestamptz + :'retry_after'::interval - '1 microsecond'::interval)::text, false) IS NOT NULL AS just_before;
-- (remaining counts whole tokens: 0; rl_value has the exact amount)
SELECT ok, remaining FROM rl_check('frac', 'k', 1);
SELECT value > 0.99 AS nearly_one FROM rl_value('frac', 'k');
SELECT ok FROM rl_limit('frac', 'k', 1);
SELECT set_config('ratelimit.now_override',
  ('2026-01-01 00:00:00+00'::timestamptz + :'retry_after'::interval)::text, false) IS NOT NULL AS at_retry;
SELECT ok FROM rl_limit('frac', 'k', 1);
SELECT rl_undefine('frac');
-- the same from a stored 0.3 called 13.349313 s later, where the state
-- brought forward to the call is rounded: the wait still comes from the
-- stored state (from the rounded one it would be a microsecond longer)
SELECT rl_define('frac', 'token bucket', 1, '29 seconds');
INSERT INTO rate_limits VALUES ('frac', 'k', 0, 0.3, '2026-01-01 00:00:00+00');
SET ratelimit.now_override = '2026-01-01 00:00:13.349313+00';
SELECT ok, retry_after FROM rl_limit('frac', 'k', 1);
SET ratelimit.now_override = '2026-01-01 00:00:20.299999+00';
SELECT ok FROM rl_limit('frac', 'k', 1);
SET ratelimit.now_override = '2026-01-01 00:00:20.3+00';
SELECT ok FROM rl_limit('frac', 'k', 1);
SELECT rl_undefine('frac');

-- 4. shards and reservations: 4 shards of capacity 10 with 2 reservable each
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('sres', 'token bucket', 40, '1 hour', max_reserved => 8, shards => 4);
SELECT count(*) FILTER (WHERE ok) <= 48 AS at_most_capacity_and_max_reserved
FROM generate_series(1, 200) AS i, LATERAL rl_limit('sres', 'k', 1 + 0 * i, reserve => true);
SELECT min(value) >= -2 AS each_within_its_share,
       sum(least(value, 0)) >= -8 AS all_within_max_reserved,
       sum(least(value, 0)) < -2 AS spread_over_shards,
       count(*) AS shards
FROM rate_limits WHERE name = 'sres';
SELECT rl_undefine('sres');
-- a call one shard can serve exactly takes from that shard alone
SELECT rl_define('sexact', 'token bucket', 10, '1 hour', shards => 2);
SELECT ok, remaining FROM rl_limit('sexact', 'k', 5);
SELECT count(*) AS shards_written, min(value) AS emptied FROM rate_limits
WHERE name = 'sexact' AND value < 5;
SELECT rl_undefine('sexact');
