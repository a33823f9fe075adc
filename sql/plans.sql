-- Plans: named classes of a defined limit ("free 100 a day, pro 10,000"),
-- and keys assigned to them.  Moving a key to another plan keeps what it
-- consumed: never a fresh bucket, never a lost debt.  Exact vectors with a
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
-- upgrade to pro: 9,910 left in the window (rl_check's remaining leaves
-- out the one it asks for), not a fresh 10,000
SELECT rl_assign('api', 'cust', 'pro');
SELECT rl_assign('api_m', 'cust', 'pro');
SELECT remaining FROM rl_check('api', 'cust');
SELECT remaining FROM rl_check('api_m', 'cust');
SELECT ok, remaining FROM rl_limit('api', 'cust', 9910);
SELECT ok, remaining FROM rl_limit('api_m', 'cust', 9910);
SELECT ok FROM rl_limit('api', 'cust');
SELECT ok FROM rl_limit('api_m', 'cust');
-- rl_status and rl_headers show the plan's numbers
SELECT name, key, plan, rate, capacity, value FROM rl_status
WHERE name = 'api' ORDER BY key;
SELECT rl_headers('api', rl_check('api', 'cust'), key => 'cust');
-- downgrade to free with 10,000 used: refused until the window ends, then
-- free's 100 (not a debt of 9,900 carried into the next windows)
SELECT rl_assign('api', 'cust', 'free');
SELECT rl_assign('api_m', 'cust', 'free');
SELECT ok, remaining, retry_after FROM rl_limit('api', 'cust');
SELECT ok, remaining, retry_after FROM rl_limit('api_m', 'cust');
SET ratelimit.now_override = '2026-01-02 00:00:00+00';
SELECT ok, remaining FROM rl_limit('api', 'cust');
SELECT ok, remaining FROM rl_limit('api_m', 'cust');
-- a downgrade that leaves something: pro with 50 used, to free: 50 left
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

-- the memory store gives tokens at commit: a key given tokens in the
-- transaction (rl_refund, or a move up) is not moved down in it, or the
-- tokens would land after the move's take.  Free with 90 used, up and
-- down again: still 10 left, not a fresh 100
SELECT rl_assign('api_m', 'late', 'free');
SELECT ok FROM rl_limit('api_m', 'late', 90);
BEGIN;
SELECT rl_assign('api_m', 'late', 'pro');
SELECT rl_assign('api_m', 'late', 'free');
COMMIT;
SELECT remaining FROM rl_check('api_m', 'late');
-- pro with 9,080 used, 500 refunded, then free: refused too (free's 100
-- would be given back at commit); the key stays on pro with 920 left
SELECT rl_assign('api_m', 'late', 'pro');
SELECT ok FROM rl_limit('api_m', 'late', 8990);
BEGIN;
SELECT value FROM rl_refund('api_m', 'late', 500);
SELECT rl_assign('api_m', 'late', 'free');
COMMIT;
SELECT remaining FROM rl_check('api_m', 'late');
-- a move up after a refund is fine: both land at commit.  Down to free
-- (nothing left), then 50 refunded and up to pro: 9,950
SELECT rl_assign('api_m', 'late', 'free');
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
-- pro: 10,000 less the 125 consumed (the six hours refill at free's rate,
-- not pro's)
SELECT rl_assign('tb', 'k', 'pro');
SELECT rl_assign('tb_m', 'k', 'pro');
SELECT value FROM rl_value('tb', 'k');
SELECT value FROM rl_value('tb_m', 'k');
SELECT ok FROM rl_limit('tb', 'k', 9900, reserve => true);
SELECT ok FROM rl_limit('tb_m', 'k', 9900, reserve => true);
SELECT value FROM rl_value('tb', 'k');
-- back to free: the debt of 25 stays, refilling at free's rate
SELECT rl_assign('tb', 'k', 'free');
SELECT rl_assign('tb_m', 'k', 'free');
SELECT value FROM rl_value('tb', 'k');
SELECT value FROM rl_value('tb_m', 'k');
SELECT ok, retry_after FROM rl_limit('tb', 'k');
SELECT ok, retry_after FROM rl_limit('tb_m', 'k');
-- a full key moved down holds free's capacity, not pro's
SELECT rl_assign('tb', 'full', 'pro');
SELECT rl_assign('tb', 'full', 'free');
SELECT value FROM rl_value('tb', 'full');

-- a change of a plan's numbers reaches its keys (the cache is dropped),
-- and keeps what each has left, as a change of an override does
SELECT rl_plan('tb', 'free', 200, max_reserved => 100);
SELECT rate, capacity, plan FROM rl_status WHERE name = 'tb' AND key = 'k';
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT value FROM rl_value('tb', 'k');

-- an override and a plan: a key has one or the other.  rl_override on an
-- assigned key replaces the assignment (keeping what is left, as any
-- override change); rl_assign replaces an override (keeping what was
-- consumed); rl_unoverride leaves an assignment alone, and rl_unassign an
-- override
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
