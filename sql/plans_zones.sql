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

-- Tokyo's day began at 15:00 UTC yesterday and ends at 15:00 UTC today,
-- 9 hours before UTC's.  40 used today in UTC, moved to Tokyo: the move
-- pays for the midnight it brings forward, 9/24 of the old day's 100 (37.5), so
-- 22.5 of the 60 left now, and Tokyo's 100 from its midnight
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT n, (rl_limit(n, 'c2', 40)).ok FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_assign(n, 'c2', 'tokyo') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, value, ok, retry_after FROM unnest(ARRAY['day', 'day_m']) n,
	rl_value(n, 'c2'), rl_check(n, 'c2');
SET ratelimit.now_override = '2026-01-01 15:00:00+00';
SELECT n, ok FROM unnest(ARRAY['day', 'day_m']) n, rl_limit(n, 'c2', 61);
SELECT n, ok, remaining, reset_after FROM unnest(ARRAY['day', 'day_m']) n,
	rl_limit(n, 'c2', 60);
SET ratelimit.now_override = '2026-01-02 15:00:00+00';
SELECT n, ok, remaining FROM unnest(ARRAY['day', 'day_m']) n,
	rl_limit(n, 'c2', 100);

-- the other way, after Tokyo's midnight: Tokyo's day (from 15:00 UTC)
-- ends after UTC's, so a key moved there keeps what it has; 30 used
-- there, then back to the definition's UTC (rl_unassign), whose day ends
-- 15 hours sooner: 62.5 of the 70 left are paid (7.5 left), then UTC's
-- 100 from its midnight
SET ratelimit.now_override = '2026-01-01 16:00:00+00';
SELECT n, rl_assign(n, 'c3', 'tokyo') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, (rl_limit(n, 'c3', 30)).ok FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_unassign(n, 'c3') FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, ok, retry_after FROM unnest(ARRAY['day', 'day_m']) n,
	rl_check(n, 'c3');
SET ratelimit.now_override = '2026-01-02 00:00:00+00';
SELECT n, ok FROM unnest(ARRAY['day', 'day_m']) n, rl_limit(n, 'c3', 71);
SELECT n, ok, remaining FROM unnest(ARRAY['day', 'day_m']) n,
	rl_limit(n, 'c3', 70);

-- hopping gains nothing: every hour from 12:00 on, to the zone where it
-- is then 23:00 (Etc/GMT-11 is UTC+11), so a midnight comes every hour.
-- 100 used at 11:00 in UTC; the hops of the next day give less than
-- staying in UTC would (100 at its midnight), where a fresh day per hop
-- would give 100 each: each move pays for the midnight it brings forward
SET ratelimit.now_override = '2026-01-01 11:00:00+00';
SELECT n, (rl_limit(n, 'c8', 100)).ok FROM unnest(ARRAY['day', 'day_m']) n;
CREATE TEMP TABLE hop_grants (n text, granted float8);
CREATE TEMP TABLE hop_moves (n text, zone text);
-- each hour's move and calls in transactions of their own
SELECT format($s$SET ratelimit.now_override = %L$s$, t),
	format($s$INSERT INTO hop_moves SELECT n, %L FROM unnest(ARRAY['day', 'day_m']) n, rl_assign(n, 'c8', 'utc', time_zone => %1$L)$s$,
		CASE WHEN h = 0 THEN 'UTC' WHEN h > 0 THEN 'Etc/GMT-' || h
			ELSE 'Etc/GMT+' || -h END),
	$s$INSERT INTO hop_grants SELECT n, (rl_limit(n, 'c8', 100, partial => true)).granted FROM unnest(ARRAY['day', 'day_m']) n$s$,
	format($s$SET ratelimit.now_override = %L$s$, t + interval '59 minutes 59 seconds'),
	$s$INSERT INTO hop_grants SELECT n, (rl_limit(n, 'c8', 100, partial => true)).granted FROM unnest(ARRAY['day', 'day_m']) n$s$
FROM generate_series(0, 23) i,
	LATERAL (SELECT '2026-01-01 12:00:00+00'::timestamptz + make_interval(hours => i) AS t) a,
	-- the zone where it is then 23:00 (Etc/GMT-11 is UTC+11)
	LATERAL (SELECT CASE WHEN 11 - i < -9 THEN 35 - i ELSE 11 - i END AS h) b
ORDER BY i
\gexec
SELECT n, count(*) AS moves, count(DISTINCT zone) AS zones
FROM hop_moves GROUP BY n ORDER BY n;
SELECT n, sum(granted) AS granted_in_a_day FROM hop_grants GROUP BY n
ORDER BY n;

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
-- York (rl_override again), whose day ends after UTC's: the 30 left, not
-- a fresh 50.  Another key's override in Tokyo before Tokyo's midnight
-- (15:00 UTC), which refills it there, 20 used after, then none
-- (rl_unoverride: the definition's UTC, whose day ends 15 hours sooner):
-- its 30 less 15/24 of the override's 50 (-1.25).  A third key's override
-- in Tokyo after Tokyo's midnight has had no refill there, only UTC's,
-- paid for until UTC's midnight: back in UTC, it keeps its 30
SET ratelimit.now_override = '2026-01-01 14:00:00+00';
SELECT n, rl_override(n, 'c7', 50, time_zone => 'Asia/Tokyo')
FROM unnest(ARRAY['day', 'day_m']) n;
SET ratelimit.now_override = '2026-01-01 16:00:00+00';
SELECT n, rl_override(n, 'c5', 50, time_zone => 'UTC'),
	rl_override(n, 'c9', 50, time_zone => 'Asia/Tokyo')
FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, (rl_limit(n, 'c5', 20)).ok, (rl_limit(n, 'c7', 20)).ok,
	(rl_limit(n, 'c9', 20)).ok
FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, rl_override(n, 'c5', 50, time_zone => 'America/New_York'),
	rl_unoverride(n, 'c7'), rl_unoverride(n, 'c9')
FROM unnest(ARRAY['day', 'day_m']) n;
SELECT n, c5.value, c7.value, c9.value FROM unnest(ARRAY['day', 'day_m']) n,
	rl_value(n, 'c5') c5, rl_value(n, 'c7') c7, rl_value(n, 'c9') c9;
-- another number, same zone: a key with an override moves too (it keeps
-- the 30 it has, at most the new capacity)
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

-- a move pays for a refill it brings forward at the rate of the refills
-- the key had, remembered across moves (rl_moves): 'pro' 100 a day in
-- UTC, drained at 12:00, then 'tiny' (1 a day) in UTC, whose midnight is
-- the same, then 'pro' in the zone of UTC+11, whose midnight is at 13:00
-- UTC: the 11 hours to UTC's midnight cost 100 * 11/24 (45.83), not a
-- tiny's 1 * 11/24, so 13:00 brings 54.17.  (Staying on 'tiny' first
-- changes nothing.)
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT rl_define(n, 'fixed window', 100, '1 day', time_zone => 'UTC', storage => s)
FROM (VALUES ('mv', 'table'), ('mv_m', 'memory')) v(n, s);
SELECT rl_plan(n, 'pro', 100), rl_plan(n, 'tiny', 1), rl_plan(n, 'big', 1000)
FROM unnest(ARRAY['mv', 'mv_m']) n;
SELECT n, rl_assign(n, 'through', 'pro'), rl_assign(n, 'back', 'pro'),
	rl_assign(n, 'unused', 'big')
FROM unnest(ARRAY['mv', 'mv_m']) n;
SELECT n, (rl_limit(n, 'through', 100)).ok, (rl_limit(n, 'back', 100)).ok
FROM unnest(ARRAY['mv', 'mv_m']) n;
SELECT n, rl_assign(n, 'through', 'tiny') FROM unnest(ARRAY['mv', 'mv_m']) n;
SELECT n, rl_assign(n, 'through', 'pro', time_zone => 'Etc/GMT-11')
FROM unnest(ARRAY['mv', 'mv_m']) n;
SELECT n, round(value::numeric, 2) AS now_value FROM unnest(ARRAY['mv', 'mv_m']) n,
	rl_value(n, 'through');
SET ratelimit.now_override = '2026-01-01 13:00:00+00';
SELECT n, round(value::numeric, 2) AS at_13 FROM unnest(ARRAY['mv', 'mv_m']) n,
	rl_value(n, 'through');
-- a move and back before the refill it paid for: the payment comes back
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT n, rl_assign(n, 'back', 'pro', time_zone => 'Etc/GMT-11')
FROM unnest(ARRAY['mv', 'mv_m']) n;
SELECT n, round(value::numeric, 2) AS moved FROM unnest(ARRAY['mv', 'mv_m']) n,
	rl_value(n, 'back');
SET ratelimit.now_override = '2026-01-01 12:30:00+00';
SELECT n, rl_assign(n, 'back', 'pro') FROM unnest(ARRAY['mv', 'mv_m']) n;
SELECT n, round(value::numeric, 2) AS back FROM unnest(ARRAY['mv', 'mv_m']) n,
	rl_value(n, 'back');
-- a key that used nothing of 'big' (1000 a day) moved down to 'tiny' in a
-- zone whose midnight comes first: the 999 it gives up pay for that
-- midnight, so it keeps tiny's 1 and is not refused
SELECT n, rl_assign(n, 'unused', 'tiny', time_zone => 'Etc/GMT-11')
FROM unnest(ARRAY['mv', 'mv_m']) n;
SELECT n, (rl_limit(n, 'unused')).ok FROM unnest(ARRAY['mv', 'mv_m']) n;
-- what the moves remember, until UTC's midnight; rl_gc forgets it after
SELECT name, key, moved_at, covered_until, round((covered_per_us * 86400e6)::numeric, 2)
	AS covered_per_day, round(debt::numeric, 2) AS debt
FROM rl_moves WHERE name IN ('mv', 'mv_m') ORDER BY name, key;
SET ratelimit.now_override = '2026-01-02 00:00:00+00';
SELECT rl_gc() >= 6 AS collected;
SELECT count(*) FROM rl_moves WHERE name IN ('mv', 'mv_m');
SELECT rl_undefine('mv'), rl_undefine('mv_m');

-- a sharded key pays from the shards that hold the most first, so a
-- shard already empty does not carry its part below zero while calls
-- take from the others: 100 a day over 4 shards, 40 used at 12:00, then
-- Tokyo: 60 less 37.5 is 22.5, and 22 calls of one are granted, as with
-- one shard (a table limit: the memory store has no shards)
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT rl_define(n, 'fixed window', 100, '1 day', time_zone => 'UTC', shards => sh)
FROM (VALUES ('sz1', 1), ('sz4', 4)) v(n, sh);
SELECT n, (rl_limit(n, 'k', 40)).ok FROM unnest(ARRAY['sz1', 'sz4']) n;
SELECT n, rl_override(n, 'k', 100, NULL, time_zone => 'Asia/Tokyo')
FROM unnest(ARRAY['sz1', 'sz4']) n;
SELECT n, value FROM unnest(ARRAY['sz1', 'sz4']) n, rl_value(n, 'k');
SELECT n, sum(((rl_limit(n, 'k', 1)).ok)::int) AS granted
FROM unnest(ARRAY['sz1', 'sz4']) n, generate_series(1, 200) GROUP BY n ORDER BY n;
SELECT rl_undefine('sz1'), rl_undefine('sz4');

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
