-- A time zone per plan or per key (a customer's midnight) on a calendar
-- limit.  A key that changes zone (rl_assign, rl_unassign, rl_override,
-- rl_unoverride) keeps what it has left in the new zone's current day,
-- never a fresh day; a plan's zone cannot change under keys it would move.
-- Exact vectors with a pinned clock, on both stores (each call names
-- both: day on the table store, day_m on the memory store).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 12:00:00+00';

SELECT rl_define('day', 'fixed window', 100, '1 day', time_zone => 'UTC');
SELECT rl_define('day_m', 'fixed window', 100, '1 day', time_zone => 'UTC',
	storage => 'memory');
SELECT n, rl_plan(n, 'ny', 100, time_zone => 'america/new_york'),
	rl_plan(n, 'tokyo', 100, time_zone => 'Asia/Tokyo'),
	rl_plan(n, 'utc', 100)
FROM unnest(ARRAY['day', 'day_m']) n;
-- the zone as the tz database spells it; NULL: the definition's
SELECT * FROM rl_plans WHERE name IN ('day', 'day_m') ORDER BY name, plan;

-- UTC's day began at 00:00, New York's at 05:00 UTC.  A key that used its
-- 100 today moves to New York: nothing left until New York's next
-- midnight (05:00 UTC tomorrow, 17 hours on), not a fresh 100
SELECT n, (rl_limit(n, 'c1', 100)).ok FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_assign(n, 'c1', 'ny') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, ok, remaining, retry_after FROM unnest(ARRAY['day', 'day_m']) n,
	rl_limit(n, 'c1');
SET ratelimit.now_override = '2026-01-02 04:59:59.999999+00';
SELECT n, ok FROM unnest(ARRAY['day', 'day_m']) n, rl_limit(n, 'c1');
SET ratelimit.now_override = '2026-01-02 05:00:00+00';
SELECT n, ok, remaining FROM unnest(ARRAY['day', 'day_m']) n,
	rl_limit(n, 'c1');

-- Tokyo's day began at 15:00 UTC yesterday and ends at 15:00 UTC today.
-- 40 used today in UTC, moved to Tokyo: the 60 left until Tokyo's
-- midnight, then Tokyo's 100
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT n, (rl_limit(n, 'c2', 40)).ok FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_assign(n, 'c2', 'tokyo') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, ok, remaining FROM unnest(ARRAY['day', 'day_m']) n,
	rl_check(n, 'c2');
SELECT n, ok FROM unnest(ARRAY['day', 'day_m']) n, rl_limit(n, 'c2', 61);
SELECT n, ok, remaining, reset_after FROM unnest(ARRAY['day', 'day_m']) n,
	rl_limit(n, 'c2', 60);
SET ratelimit.now_override = '2026-01-01 15:00:00+00';
SELECT n, ok, remaining FROM unnest(ARRAY['day', 'day_m']) n,
	rl_limit(n, 'c2', 100);

-- back to the definition's zone (rl_unassign): 30 used in Tokyo's day,
-- which began at 15:00 UTC yesterday; UTC's day began later, at 00:00,
-- yet the key keeps the 70 it has left until UTC's midnight, not a fresh
-- 100
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT n, rl_unassign(n, 'c3') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_assign(n, 'c3', 'tokyo') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, (rl_limit(n, 'c3', 30)).ok FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_unassign(n, 'c3') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, ok, remaining, reset_after FROM unnest(ARRAY['day', 'day_m']) n,
	rl_check(n, 'c3');

-- a key's own zone on a plan (rl_assign's time_zone) and on an override
-- of its own: the same rule.  The utc plan, 100 used, then the plan with
-- New York's midnight for this key alone: nothing left
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT n, rl_assign(n, 'c4', 'utc') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, (rl_limit(n, 'c4', 100)).ok FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_assign(n, 'c4', 'utc', time_zone => 'America/New_York')
FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, ok, retry_after FROM unnest(ARRAY['day', 'day_m']) n,
	rl_limit(n, 'c4');
SELECT name, key, plan, time_zone FROM rl_overrides
WHERE name IN ('day', 'day_m') AND key = 'c4' ORDER BY name;
SELECT name, key, plan, time_zone, remaining FROM rl_status
WHERE name = 'day' AND key = 'c4';
-- an override of 50 a day in UTC, 20 used, then the same numbers in New
-- York (rl_override again): the 30 left, not a fresh 50.  Another key's
-- override in Tokyo, 20 used, then none (rl_unoverride: the definition's
-- UTC): the 30 left, not a fresh 100
SELECT n, rl_override(n, 'c5', 50, time_zone => 'UTC'),
	rl_override(n, 'c7', 50, time_zone => 'Asia/Tokyo')
FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, (rl_limit(n, 'c5', 20)).ok, (rl_limit(n, 'c7', 20)).ok
FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_override(n, 'c5', 50, time_zone => 'America/New_York'),
	rl_unoverride(n, 'c7')
FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, c5.remaining, c7.remaining FROM unnest(ARRAY['day', 'day_m']) n,
	rl_check(n, 'c5') c5, rl_check(n, 'c7') c7;
-- another number, same zone: no move, the state is read under the new
-- numbers (as any override change)
SELECT n, rl_override(n, 'c5', 200, time_zone => 'America/New_York')
FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, remaining FROM unnest(ARRAY['day', 'day_m']) n, rl_check(n, 'c5');

-- a plan's zone cannot change while keys without a zone of their own are
-- assigned (55000); its numbers can, and so can the zone of a plan whose
-- keys all have their own
SELECT rl_plan('day', 'ny', 100, time_zone => 'UTC');
SELECT rl_plan('day', 'ny', 100);
SELECT rl_plan('day', 'ny', 200, time_zone => 'America/New_York');
SELECT rl_plan('day', 'utc', 100, time_zone => 'Europe/Paris');
SELECT plan, rate, time_zone FROM rl_plans WHERE name = 'day' ORDER BY plan;
SELECT rl_assign('day', 'c6', 'tokyo', time_zone => 'Asia/Tokyo');
SELECT rl_assign('day', 'c2', 'ny');
SELECT rl_plan('day', 'tokyo', 100, time_zone => 'UTC');
SELECT plan, time_zone FROM rl_plans WHERE name = 'day' AND plan = 'tokyo';

-- bad input gets an error and changes nothing
SELECT rl_define('hourly', 'fixed window', 100, '1 hour');
SELECT rl_plan('hourly', 'p', 100, time_zone => 'UTC');
SELECT rl_override('hourly', 'k', 100, time_zone => 'UTC');
SELECT rl_plan('hourly', 'p', 100);
SELECT rl_assign('hourly', 'k', 'p', time_zone => 'UTC');
SELECT rl_plan('day', 'x', 100, time_zone => 'Mars/Olympus_Mons');
SELECT rl_override('day', 'k', 100, time_zone => 'Mars/Olympus_Mons');
SELECT rl_assign('day', 'k', 'ny', time_zone => 'Mars/Olympus_Mons');
SELECT count(*) FROM rl_overrides WHERE name IN ('day', 'hourly') AND key = 'k';
SELECT count(*) FROM rl_plans WHERE name = 'day' AND plan = 'x';
-- a limit redefined without a time_zone: its keys' zones are refused at
-- their next call, as an override's period is after a change to calendar
SELECT rl_define('day', 'fixed window', 100, '1 day');
SELECT ok FROM rl_limit('day', 'c6');
SELECT ok FROM rl_limit('day', 'c1');

SELECT rl_undefine('day'), rl_undefine('day_m'), rl_undefine('hourly');
RESET ratelimit.now_override;
