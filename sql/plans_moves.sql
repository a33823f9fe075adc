-- What a move remembers (rl_moves) and when it gives a payment back, on
-- both stores: a move that would leave a debt the new plan cannot repay
-- within 1000 years is refused; a plan redefined between two moves does
-- not make a refill the key had look like one to come; rl_reset forgets
-- the record, so a reset key gets back no payment.  100 a day, start
-- 2026-01-01 00:00 UTC; plans day (100 a day), half (60 per 12 hours) and
-- tiny (1 per 30 days).
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define(n, 'fixed window', 100, '1 day', start => '2026-01-01 00:00:00+00', storage => s)
FROM (VALUES ('pm', 'table'), ('pm_m', 'memory')) v(n, s);
SELECT n, rl_plan(n, 'day', 100), rl_plan(n, 'half', 60, '12 hours'),
	rl_plan(n, 'tiny', 1, '30 days')
FROM unnest(ARRAY['pm', 'pm_m']) n;

-- a debt of 20,000 (200 days on 'day') moved to 'tiny' would take 20,000
-- windows of 30 days there, 1,643 years: the move is refused (22003), and
-- the key stays on 'day' with its debt
SELECT n, rl_assign(n, 'debt', 'day') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, value FROM unnest(ARRAY['pm', 'pm_m']) n, rl_penalize(n, 'debt', 20100);
SELECT rl_assign('pm', 'debt', 'tiny');
SELECT rl_assign('pm_m', 'debt', 'tiny');
SELECT n, plan, value FROM unnest(ARRAY['pm', 'pm_m']) n,
	rl_value(n, 'debt') v, LATERAL (SELECT plan FROM rl_overrides o
		WHERE o.name = n AND o.key = 'debt') o;

-- two keys drained at 00:00 and moved to 'half' (its window ends at
-- 12:00, the day's at 24:00: each pays 100 * 12/24 = 50)
SELECT n, (rl_limit(n, k, 100)).ok FROM unnest(ARRAY['pm', 'pm_m']) n,
	unnest(ARRAY['redef', 'reset']) k, rl_assign(n, k, 'day');
SELECT n, rl_assign(n, 'redef', 'half') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, rl_assign(n, 'reset', 'half') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, k, value FROM unnest(ARRAY['pm', 'pm_m']) n,
	unnest(ARRAY['redef', 'reset']) k, rl_value(n, k) ORDER BY 1, 2;

-- one is reset at 01:00 (a fresh key: half's 60), then moved back to
-- 'day': it keeps its 60 and gets no payment back (the reset forgave it,
-- and forgot the record)
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT n, rl_reset(n, 'reset') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT count(*) AS records_after_reset FROM rl_moves WHERE key = 'reset';
SELECT n, rl_assign(n, 'reset', 'day') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, value FROM unnest(ARRAY['pm', 'pm_m']) n, rl_value(n, 'reset');

-- the other is refilled at 12:00 (60 - 50) and takes 10 at 12:15.  The
-- operator makes 'half' 120 a day at 12:30, and the key moves back to
-- 'day': the refill at 12:00 happened, so the payment does not come
-- back: 0 left, not 50
SET ratelimit.now_override = '2026-01-01 12:15:00+00';
SELECT n, (rl_limit(n, 'redef', 100, partial => true)).granted
FROM unnest(ARRAY['pm', 'pm_m']) n;
SET ratelimit.now_override = '2026-01-01 12:30:00+00';
SELECT n, rl_plan(n, 'half', 120, '1 day') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, rl_assign(n, 'redef', 'day') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, value FROM unnest(ARRAY['pm', 'pm_m']) n, rl_value(n, 'redef');

-- rl_moves keeps the refills' time as steps, each at its own rate: a key
-- on 'month' (300 per 30 days, to Jan 31; moved there at the window's
-- start, it has the definition's 100) drained, moved to 'day' on Jan
-- 20 (day's Jan 21 comes 10 days early: 10 days at month's 10 a day,
-- -100), refilled there, moves on Jan 22 06:00, unused that day, to
-- 'twelve' (60 per 12 hours: its window ends at 12:00).  It pays 12
-- hours at day's 100 a day (50), then 8 days to Jan 31 at month's 10 a
-- day (80), less the 40 it gives up above twelve's 60: 90.  Of that, its
-- last move's charge still owed (100 less the 2 days day's refills have
-- repaid: 80, for the same 8 days) counts: 10 more, so it holds 50.  (One span at the
-- latest end and the highest rate would charge 8.5 days at 100 a day.)
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT n, rl_plan(n, 'month', 300, '30 days'), rl_plan(n, 'twelve', 60, '12 hours')
FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, rl_assign(n, 'stair', 'month') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, (rl_limit(n, 'stair', 100)).ok FROM unnest(ARRAY['pm', 'pm_m']) n;
SET ratelimit.now_override = '2026-01-20 00:00:00+00';
SELECT n, rl_assign(n, 'stair', 'day') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, value FROM unnest(ARRAY['pm', 'pm_m']) n, rl_value(n, 'stair');
SET ratelimit.now_override = '2026-01-22 06:00:00+00';
SELECT n, value FROM unnest(ARRAY['pm', 'pm_m']) n, rl_value(n, 'stair');
SELECT n, rl_assign(n, 'stair', 'twelve') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, round(value::numeric, 2) AS value FROM unnest(ARRAY['pm', 'pm_m']) n,
	rl_value(n, 'stair');
SELECT name, covered_until, round((covered_per_us * 86400e6)::numeric, 2) AS per_day,
	near_until, round((near_per_us * 86400e6)::numeric, 2) AS near_per_day
FROM rl_moves WHERE key = 'stair' ORDER BY name;

-- a move pays once for the refill it brings forward: a key drained on
-- 'day' at 00:00 moves to 'hourly' (100/24 an hour: 23 hours of the day
-- early, -95.83), is refilled at 01:00 (-91.67), and at 01:30 moves to
-- 'two_hourly' (100/12 per 2 hours; its window ends at 02:00 too).  The
-- charge it still owes (22 hours, 91.67) pays for that move: nothing
-- more.  (Counted again, it would hold -183.33.)
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT n, rl_plan(n, 'hourly', 100.0 / 24, '1 hour'),
	rl_plan(n, 'two_hourly', 100.0 / 12, '2 hours')
FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, rl_assign(n, 'twice', 'day') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, (rl_limit(n, 'twice', 100)).ok FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, rl_assign(n, 'twice', 'hourly') FROM unnest(ARRAY['pm', 'pm_m']) n;
SET ratelimit.now_override = '2026-01-01 01:30:00+00';
SELECT n, round(value::numeric, 2) AS value FROM unnest(ARRAY['pm', 'pm_m']) n,
	rl_value(n, 'twice');
SELECT n, rl_assign(n, 'twice', 'two_hourly') FROM unnest(ARRAY['pm', 'pm_m']) n;
SELECT n, round(value::numeric, 2) AS value FROM unnest(ARRAY['pm', 'pm_m']) n,
	rl_value(n, 'twice');

-- a limit redefined in the other store starts its keys afresh, and
-- rl_memory_forget drops every memory key: the records of their moves go
-- with them, so no payment comes back to a fresh key
SELECT name, count(*) AS records FROM rl_moves WHERE name IN ('pm', 'pm_m')
GROUP BY name ORDER BY name;
SELECT rl_define('pm', 'fixed window', 100, '1 day', start => '2026-01-01 00:00:00+00',
	storage => 'memory');
SELECT name, count(*) AS records FROM rl_moves WHERE name IN ('pm', 'pm_m')
GROUP BY name ORDER BY name;
SELECT rl_memory_forget(false) >= 0 AS forgot;
SELECT count(*) AS records FROM rl_moves WHERE name IN ('pm', 'pm_m');

SELECT rl_undefine('pm'), rl_undefine('pm_m');
RESET ratelimit.now_override;
