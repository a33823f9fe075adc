-- Plans: named classes of a defined limit ("free 100 a day, pro 10,000"),
-- and keys assigned to them.  Moving a key to another plan keeps what it
-- has left, at most the new capacity: it never adds tokens, and a debt
-- stays.  Exact vectors with a
-- pinned clock, on both stores (make test runs this file on the direct
-- path and again on the SQL path).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 12:00:00+00';

SELECT rl_define('api', 'fixed window', 100, '1 day', start => '2026-01-01');
SELECT rl_define('api_m', 'fixed window', 100, '1 day', start => '2026-01-01',
	storage => 'memory');
SELECT rl_plan('api', 'free', 100);
SELECT rl_plan('api', 'pro', 10000);
SELECT rl_plan('api_m', 'free', 100);
SELECT rl_plan('api_m', 'pro', 10000);
SELECT * FROM rl_plans WHERE name IN ('api', 'api_m') ORDER BY name, plan;

-- free: 90 used of 100
SELECT rl_assign('api', 'cust', 'free');
SELECT rl_assign('api_m', 'cust', 'free');
SELECT name, key, plan, rate, capacity FROM rl_overrides
WHERE name IN ('api', 'api_m') ORDER BY name, key;
SELECT ok, remaining FROM rl_limit('api', 'cust', 90);
SELECT ok, remaining FROM rl_limit('api_m', 'cust', 90);
-- upgrade to pro: the 10 left in the window (rl_check's remaining leaves
-- out the one it asks for), not a fresh 10,000; pro's from the next
SELECT rl_assign('api', 'cust', 'pro');
SELECT rl_assign('api_m', 'cust', 'pro');
SELECT remaining FROM rl_check('api', 'cust');
SELECT remaining FROM rl_check('api_m', 'cust');
SELECT ok, remaining FROM rl_limit('api', 'cust', 11);
SELECT ok, remaining FROM rl_limit('api_m', 'cust', 11);
SELECT ok, remaining FROM rl_limit('api', 'cust', 10);
SELECT ok, remaining FROM rl_limit('api_m', 'cust', 10);
SELECT ok FROM rl_limit('api', 'cust');
SELECT ok FROM rl_limit('api_m', 'cust');
-- rl_status and rl_headers show the plan's numbers
SELECT name, key, plan, rate, capacity, value FROM rl_status
WHERE name = 'api' ORDER BY key;
SELECT rl_headers('api', rl_check('api', 'cust'), key => 'cust');
-- downgrade to free with nothing left: refused until the window ends, then
-- free's 100
SELECT rl_assign('api', 'cust', 'free');
SELECT rl_assign('api_m', 'cust', 'free');
SELECT ok, remaining, retry_after FROM rl_limit('api', 'cust');
SELECT ok, remaining, retry_after FROM rl_limit('api_m', 'cust');
SET ratelimit.now_override = '2026-01-02 00:00:00+00';
SELECT ok, remaining FROM rl_limit('api', 'cust');
SELECT ok, remaining FROM rl_limit('api_m', 'cust');
-- up to pro with free's 99 left: 99; 49 used, then down to free: 50 left
SELECT rl_assign('api', 'cust', 'pro');
SELECT rl_assign('api_m', 'cust', 'pro');
SELECT remaining FROM rl_check('api', 'cust');
SELECT ok, remaining FROM rl_limit('api', 'cust', 49);
SELECT ok, remaining FROM rl_limit('api_m', 'cust', 49);
SELECT rl_assign('api', 'cust', 'free');
SELECT rl_assign('api_m', 'cust', 'free');
SELECT remaining FROM rl_check('api', 'cust');
SELECT remaining FROM rl_check('api_m', 'cust');
-- unassigned: the definition (100), with the same 50 used
SELECT rl_unassign('api', 'cust');
SELECT rl_unassign('api', 'cust');
SELECT rl_unassign('api_m', 'cust');
-- a key with no plan: false, and its state is not touched (no row made)
SELECT rl_unassign('api', 'never');
SELECT count(*) FROM rate_limits WHERE name = 'api' AND key = 'never';
SELECT remaining FROM rl_check('api', 'cust');
SELECT remaining FROM rl_check('api_m', 'cust');

-- the memory store gives tokens at commit (rl_refund): a move in the same
-- transaction leaves room for them, so the key ends as if they came
-- first.  Free with 90 used, up and down again: still 10 left
SELECT rl_assign('api_m', 'late', 'free');
SELECT ok FROM rl_limit('api_m', 'late', 90);
BEGIN;
SELECT rl_assign('api_m', 'late', 'pro');
SELECT rl_assign('api_m', 'late', 'free');
COMMIT;
SELECT remaining FROM rl_check('api_m', 'late');
-- on pro with 10 left, 500 refunded, then free: 510 capped at free's 100
SELECT rl_assign('api_m', 'late', 'pro');
BEGIN;
SELECT value FROM rl_refund('api_m', 'late', 500);
SELECT rl_assign('api_m', 'late', 'free');
COMMIT;
SELECT value FROM rl_value('api_m', 'late');
-- free and full, 50 refunded (free keeps 100), then up to pro: 100, not
-- 150
BEGIN;
SELECT value FROM rl_refund('api_m', 'late', 50);
SELECT rl_assign('api_m', 'late', 'pro');
COMMIT;
SELECT value FROM rl_value('api_m', 'late');

-- token bucket: free 100 a day, pro 10,000 a day; a reservation's debt
-- is kept across an upgrade and a downgrade
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('tb', 'token bucket', 100, '1 day', max_reserved => 100);
SELECT rl_define('tb_m', 'token bucket', 100, '1 day', max_reserved => 100,
	storage => 'memory');
SELECT rl_plan('tb', 'free', 100, max_reserved => 100);
SELECT rl_plan('tb', 'pro', 10000, max_reserved => 100);
SELECT rl_plan('tb_m', 'free', 100, max_reserved => 100);
SELECT rl_plan('tb_m', 'pro', 10000, max_reserved => 100);
SELECT rl_assign('tb', 'k', 'free');
SELECT rl_assign('tb_m', 'k', 'free');
-- 150 taken: 50 reserved below zero; six hours on, free's refill has
-- brought it to -25 (125 consumed)
SELECT ok FROM rl_limit('tb', 'k', 150, reserve => true);
SELECT ok FROM rl_limit('tb_m', 'k', 150, reserve => true);
SELECT value FROM rl_value('tb', 'k');
SELECT value FROM rl_value('tb_m', 'k');
SET ratelimit.now_override = '2026-01-01 06:00:00+00';
-- pro: the debt of 25 stays (the six hours refilled at free's rate), then
-- six hours at pro's rate (2,500) bring it to 2,475
SELECT rl_assign('tb', 'k', 'pro');
SELECT rl_assign('tb_m', 'k', 'pro');
SELECT value FROM rl_value('tb', 'k');
SELECT value FROM rl_value('tb_m', 'k');
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT value FROM rl_value('tb', 'k');
SELECT value FROM rl_value('tb_m', 'k');
SELECT ok FROM rl_limit('tb', 'k', 2500, reserve => true);
SELECT ok FROM rl_limit('tb_m', 'k', 2500, reserve => true);
SELECT value FROM rl_value('tb', 'k');
-- back to free: the debt of 25 stays, refilling at free's rate
SELECT rl_assign('tb', 'k', 'free');
SELECT rl_assign('tb_m', 'k', 'free');
SELECT value FROM rl_value('tb', 'k');
SELECT value FROM rl_value('tb_m', 'k');
SELECT ok, retry_after FROM rl_limit('tb', 'k');
SELECT ok, retry_after FROM rl_limit('tb_m', 'k');
-- a full pro key moved down holds free's capacity, not pro's
SELECT rl_assign('tb', 'full', 'pro');
SELECT value FROM rl_refund('tb', 'full', 9900);
SELECT rl_assign('tb', 'full', 'free');
SELECT value FROM rl_value('tb', 'full');

-- a change of a plan's numbers reaches its keys (the cache is dropped),
-- and keeps what each has left, as a change of an override does
SELECT rl_plan('tb', 'free', 200, max_reserved => 100);
SELECT rate, capacity, plan FROM rl_status WHERE name = 'tb' AND key = 'k';
SET ratelimit.now_override = '2026-01-01 18:00:00+00';
SELECT value FROM rl_value('tb', 'k');

-- an override and a plan: a key has one or the other.  rl_override on an
-- assigned key replaces the assignment (keeping what is left, as any
-- override change); rl_assign replaces an override (keeping what is left,
-- at most the plan's capacity); rl_unoverride leaves an assignment alone,
-- and rl_unassign an override
SELECT rl_override('tb', 'k', 5);
SELECT key, plan, rate, capacity FROM rl_overrides WHERE name = 'tb'
ORDER BY key;
SELECT rl_unassign('tb', 'k');
SELECT rl_assign('tb', 'k', 'free');
SELECT rl_unoverride('tb', 'k');
SELECT key, plan, rate, capacity FROM rl_overrides WHERE name = 'tb'
ORDER BY key;

-- rl_unplan is refused while keys are assigned to the plan
SELECT rl_unplan('tb', 'free');
SELECT rl_unplan('tb', 'nope');
SELECT rl_unassign('tb', 'k'), rl_unassign('tb', 'full');
SELECT rl_unplan('tb', 'free');
SELECT plan FROM rl_plans WHERE name = 'tb' ORDER BY plan;
-- a hand delete of an assigned plan is refused too
SELECT rl_assign('api', 'other', 'free');
DELETE FROM rl_plans WHERE name = 'api' AND plan = 'free';
-- rl_undefine drops the name's plans and assignments
SELECT rl_undefine('api_m');
SELECT count(*) FROM rl_plans WHERE name = 'api_m';
SELECT count(*) FROM rl_overrides WHERE name = 'api_m';

-- a move never adds tokens: down then up in one window.  Pro with 9,950
-- used (50 left) to free keeps 50, and back to pro still 50, not 9,900
SET ratelimit.now_override = '2026-01-15 12:00:00+00';
SELECT rl_define('du', 'fixed window', 100, '1 day', start => '2026-01-01');
SELECT rl_plan('du', 'free', 100);
SELECT rl_plan('du', 'pro', 10000);
SELECT rl_define('du_m', 'fixed window', 100, '1 day', start => '2026-01-01',
	storage => 'memory');
SELECT rl_plan('du_m', 'free', 100);
SELECT rl_plan('du_m', 'pro', 10000);
-- a key not seen yet holds the definition's 100: moved to pro it keeps
-- them, and the application gives pro's at once with rl_refund
SELECT rl_assign('du', 'k', 'pro');
SELECT rl_assign('du_m', 'k', 'pro');
SELECT value FROM rl_value('du', 'k');
SELECT value FROM rl_value('du_m', 'k');
SELECT value FROM rl_refund('du', 'k', 9900);
SELECT value FROM rl_refund('du_m', 'k', 9900);
SELECT ok FROM rl_limit('du', 'k', 9950);
SELECT ok FROM rl_limit('du_m', 'k', 9950);
SELECT rl_assign('du', 'k', 'free');
SELECT rl_assign('du_m', 'k', 'free');
SELECT remaining FROM rl_check('du', 'k');
SELECT rl_assign('du', 'k', 'pro');
SELECT rl_assign('du_m', 'k', 'pro');
SELECT ok FROM rl_limit('du', 'k', 100);
SELECT ok FROM rl_limit('du_m', 'k', 100);
-- to the definition (100) and back; in one transaction to free and back
SELECT rl_unassign('du', 'k');
SELECT rl_assign('du', 'k', 'pro');
BEGIN;
SELECT rl_assign('du', 'k', 'free');
SELECT rl_assign('du', 'k', 'pro');
SELECT rl_assign('du_m', 'k', 'free');
SELECT rl_assign('du_m', 'k', 'pro');
COMMIT;
SELECT ok FROM rl_limit('du', 'k', 100);
SELECT ok FROM rl_limit('du_m', 'k', 100);
SELECT value FROM rl_value('du', 'k');
SELECT value FROM rl_value('du_m', 'k');
-- pro from the next window on
SET ratelimit.now_override = '2026-01-16 00:00:00+00';
SELECT ok FROM rl_limit('du', 'k', 10000);
SELECT ok FROM rl_limit('du_m', 'k', 10000);
SELECT rl_undefine('du'), rl_undefine('du_m');

-- plans that refill at different speeds: a move to a plan whose window
-- ends sooner pays for the refill it brings forward, in the old plan's
-- units.  The day's 1000 used at 01:00; hourly (100 an hour) ends at
-- 02:00, 22 hours before the day: 1000 * 22/24 paid (-916.67), and 02:00
-- brings 100; back to daily at 02:00: no second 1000, no hourly 100
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT rl_define('hop', 'fixed window', 1000, '1 day', start => '2026-01-01');
SELECT rl_plan('hop', 'daily', 1000);
SELECT rl_plan('hop', 'hourly', 100, '1 hour');
SELECT rl_define('hop_m', 'fixed window', 1000, '1 day', start => '2026-01-01',
	storage => 'memory');
SELECT rl_plan('hop_m', 'daily', 1000);
SELECT rl_plan('hop_m', 'hourly', 100, '1 hour');
SELECT rl_assign('hop', 'k', 'daily');
SELECT rl_assign('hop_m', 'k', 'daily');
SELECT ok FROM rl_limit('hop', 'k', 1000);
SELECT ok FROM rl_limit('hop_m', 'k', 1000);
-- hourly: -916.67 now
SELECT rl_assign('hop', 'k', 'hourly');
SELECT rl_assign('hop_m', 'k', 'hourly');
SELECT value FROM rl_value('hop', 'k');
SELECT value FROM rl_value('hop_m', 'k');
SET ratelimit.now_override = '2026-01-01 02:00:00+00';
SELECT rl_assign('hop', 'k', 'daily');
SELECT rl_assign('hop_m', 'k', 'daily');
SELECT ok FROM rl_limit('hop', 'k', 1000);
SELECT ok FROM rl_limit('hop_m', 'k', 1000);
SELECT ok, remaining FROM rl_limit('hop', 'k', 100);
SELECT ok, remaining FROM rl_limit('hop_m', 'k', 100);
SELECT rl_undefine('hop'), rl_undefine('hop_m');

-- a token bucket whose plan has a burst: pro refills 100 a day into
-- 10,000.  Emptied, a day on free (100 a day), back to pro: 100, not the
-- burst again
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('burst', 'token bucket', 100, '1 day');
SELECT rl_plan('burst', 'free', 100);
SELECT rl_plan('burst', 'pro', 100, capacity => 10000);
SELECT rl_define('burst_m', 'token bucket', 100, '1 day', storage => 'memory');
SELECT rl_plan('burst_m', 'free', 100);
SELECT rl_plan('burst_m', 'pro', 100, capacity => 10000);
SELECT rl_assign('burst', 'k', 'pro');
SELECT rl_assign('burst_m', 'k', 'pro');
SELECT value FROM rl_refund('burst', 'k', 9900);
SELECT value FROM rl_refund('burst_m', 'k', 9900);
SELECT ok FROM rl_limit('burst', 'k', 10000);
SELECT ok FROM rl_limit('burst_m', 'k', 10000);
SELECT rl_assign('burst', 'k', 'free');
SELECT rl_assign('burst_m', 'k', 'free');
SET ratelimit.now_override = '2026-01-02 00:00:00+00';
SELECT rl_assign('burst', 'k', 'pro');
SELECT rl_assign('burst_m', 'k', 'pro');
SELECT ok FROM rl_limit('burst', 'k', 9000);
SELECT ok FROM rl_limit('burst_m', 'k', 9000);
SELECT value FROM rl_value('burst', 'k');
SELECT value FROM rl_value('burst_m', 'k');
SELECT rl_undefine('burst'), rl_undefine('burst_m');

-- a sharded key (table store only): each shard keeps what it holds, at
-- most its share of the new capacity.  90 of 100 used drains the shards
-- one by one; to small (40, 10 a shard) the key holds what the shards
-- hold, capped at 10 each, and no call takes more
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT rl_define('sh', 'token bucket', 100, '1 day', shards => 4);
SELECT rl_plan('sh', 'small', 40);
SELECT rl_plan('sh', 'big', 10000);
SELECT count(*) FILTER (WHERE (rl_limit('sh', 'k', 1 + 0 * g)).ok)
FROM generate_series(1, 90) g;
SELECT shard, value FROM rl_status WHERE name = 'sh' AND key = 'k'
ORDER BY shard;
SELECT rl_assign('sh', 'k', 'small');
SELECT shard, value FROM rl_status WHERE name = 'sh' AND key = 'k'
ORDER BY shard;
SELECT count(*) FILTER (WHERE (rl_limit('sh', 'k', 1 + 0 * g)).ok) AS granted
FROM generate_series(1, 50) g;
-- to big: nothing more now
SELECT rl_assign('sh', 'k', 'big');
SELECT count(*) FILTER (WHERE (rl_limit('sh', 'k', 1 + 0 * g)).ok) AS granted
FROM generate_series(1, 50) g;
-- a blocked sharded key stays blocked when moved up
SELECT rl_assign('sh', 'b', 'small');
SELECT rl_block('sh', 'b', '1 hour');
SELECT ok FROM rl_limit('sh', 'b', 1);
SELECT rl_assign('sh', 'b', 'big');
SELECT ok FROM rl_limit('sh', 'b', 1);
SELECT shard, value FROM rl_status WHERE name = 'sh' AND key = 'b'
ORDER BY shard;
SELECT rl_undefine('sh');

-- bad input gets an error and changes nothing
SELECT rl_plan('nope', 'free', 1);
SELECT rl_plan('api', NULL, 1);
SELECT rl_plan('api', '', 1);
SELECT rl_plan('api', 'x', NULL);
SELECT rl_plan('api', 'x', 0);
SELECT rl_plan('api', 'x', 1, capacity => -1);
SELECT rl_define_concurrency('slots', 2);
SELECT rl_plan('slots', 'free', 1);
SELECT rl_define('cal', 'fixed window', 100, '1 month', time_zone => 'UTC');
SELECT rl_plan('cal', 'daily', 1000, '1 day');
SELECT rl_plan('cal', 'big', 1000);
SELECT rl_assign('api', 'cust', 'nope');
SELECT rl_assign('nope', 'cust', 'free');
SELECT rl_assign('api', NULL, 'pro');
SELECT rl_assign('api', 'cust', NULL);
SELECT rl_assign('cal', NULL, 'big');
SELECT name, plan, rate, period, capacity FROM rl_plans
WHERE name IN ('api', 'api_m', 'tb', 'tb_m', 'cal') ORDER BY name, plan;
SELECT name, key, plan FROM rl_overrides
WHERE name IN ('api', 'api_m', 'tb', 'tb_m', 'cal') ORDER BY name, key;
SELECT rl_undefine('api'), rl_undefine('tb'), rl_undefine('tb_m'),
	rl_undefine('cal'), rl_undefine('slots');

-- an override replacing a plan is a move too: a key on a slow plan (1 an
-- hour), emptied, idle an hour, then an override of 100 an hour and back
-- to the slow plan: the hour counts at the slow plan's rate (1), not the
-- override's (100)
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT rl_define(n, 'token bucket', 100, '1 hour', storage => s)
FROM (VALUES ('hop', 'table'), ('hop_m', 'memory')) v(n, s);
SELECT n, rl_plan(n, 'slow', 1, '1 hour', 100)
FROM unnest(ARRAY['hop', 'hop_m']) n;
SELECT n, rl_assign(n, 'k', 'slow') FROM unnest(ARRAY['hop', 'hop_m']) n;
SELECT n, (rl_limit(n, 'k', 100)).ok FROM unnest(ARRAY['hop', 'hop_m']) n;
SET ratelimit.now_override = '2026-01-01 13:00:00+00';
SELECT n, rl_override(n, 'k', 100, '1 hour'), rl_assign(n, 'k', 'slow')
FROM unnest(ARRAY['hop', 'hop_m']) n;
SELECT n, value FROM unnest(ARRAY['hop', 'hop_m']) n, rl_value(n, 'k');

-- a sliding window: what a call could take (the current window's value
-- less the previous window's weighted count) is what a move keeps, so a
-- plan of another period cannot forget the previous window.  100 an hour,
-- all used in the previous hour; at 12:01 a call could take 1.67; a hop
-- to 100 a minute and back at that instant leaves 1.67, not 100
SET ratelimit.now_override = '2026-01-01 11:30:00+00';
SELECT rl_define(n, 'sliding window', 100, '1 hour', start => '2026-01-01',
	storage => s)
FROM (VALUES ('sl', 'table'), ('sl_m', 'memory')) v(n, s);
SELECT n, rl_plan(n, 'minute', 100, '1 minute')
FROM unnest(ARRAY['sl', 'sl_m']) n;
SELECT n, (rl_limit(n, 'k', 100)).ok FROM unnest(ARRAY['sl', 'sl_m']) n;
SET ratelimit.now_override = '2026-01-01 12:01:00+00';
SELECT n, round(value::numeric, 2) FROM unnest(ARRAY['sl', 'sl_m']) n,
	rl_value(n, 'k');
SELECT n, rl_assign(n, 'k', 'minute'), rl_unassign(n, 'k')
FROM unnest(ARRAY['sl', 'sl_m']) n;
SELECT n, round(value::numeric, 2) FROM unnest(ARRAY['sl', 'sl_m']) n,
	rl_value(n, 'k');
SELECT n, ok FROM unnest(ARRAY['sl', 'sl_m']) n, rl_limit(n, 'k', 2);
-- and sliding windows of other periods keep what they counted: 200
-- each 2 hours, all taken at 00:00; an hour on 100 an hour (the 200 stay
-- counted, below its capacity) and back at 01:30: 0, as for a key that
-- stayed
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define(n, 'sliding window', 200, '2 hours', start => '2026-01-01',
	storage => s)
FROM (VALUES ('slp', 'table'), ('slp_m', 'memory')) v(n, s);
SELECT n, rl_plan(n, 'hourly', 100, '1 hour'), (rl_limit(n, 'k', 200)).ok,
	(rl_limit(n, 'stay', 200)).ok
FROM unnest(ARRAY['slp', 'slp_m']) n;
SELECT n, rl_assign(n, 'k', 'hourly') FROM unnest(ARRAY['slp', 'slp_m']) n;
SET ratelimit.now_override = '2026-01-01 01:30:00+00';
SELECT n, rl_unassign(n, 'k') FROM unnest(ARRAY['slp', 'slp_m']) n;
SELECT n, k, (rl_limit(n, k, 200, partial => true)).granted
FROM unnest(ARRAY['slp', 'slp_m']) n, unnest(ARRAY['k', 'stay']) k
ORDER BY 1, 2;
SELECT n, rl_undefine(n)
FROM unnest(ARRAY['hop', 'hop_m', 'sl', 'sl_m', 'slp', 'slp_m']) n;
