-- Calendar windows: a fixed window with a time_zone has the days, ISO
-- weeks, months or years of that zone as windows, each from local
-- midnight.  Both stores (the table, and memory); make test runs this file
-- on the direct path and again on the SQL path.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- A call at a pinned time, with when its retry and its reset fall, in
-- the limit's zone.
CREATE FUNCTION at(lim text, t timestamptz, zone text, n float8 DEFAULT 1,
	k text DEFAULT 'k')
RETURNS TABLE (ok boolean, remaining float8, retry_at timestamp,
	reset_at timestamp)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_catalog.set_config('ratelimit.now_override', t::text, false);
	RETURN QUERY SELECT r.ok, r.remaining,
		(t + r.retry_after) AT TIME ZONE zone,
		(t + r.reset_after) AT TIME ZONE zone
	FROM rl_limit(lim, k, n) r;
END
$$;

-- The same call on the table store (_t) and the memory store (_m).
CREATE FUNCTION on_both(lim text, t timestamptz, zone text, n float8 DEFAULT 1,
	k text DEFAULT 'k')
RETURNS TABLE (store text, ok boolean, remaining float8, retry_at timestamp,
	reset_at timestamp)
LANGUAGE sql AS $$
	SELECT 't', * FROM at(lim || '_t', t, zone, n, k)
	UNION ALL
	SELECT 'm', * FROM at(lim || '_m', t, zone, n, k)
$$;

-- The interface: time_zone => on rl_define and rl_fixed_window; the zone
-- is stored as the tz database spells it.
SELECT rl_define('month_t', 'fixed window', 3, '1 month', time_zone => 'america/new_york');
SELECT rl_define('month_m', 'fixed window', 3, '1 month', time_zone => 'America/New_York',
	storage => 'memory');
SELECT name, kind, period, capacity, start, time_zone FROM rl_definitions
WHERE name LIKE 'month%' ORDER BY name;
SELECT rl_fixed_window(10, '1 day', time_zone => 'europe/berlin');
SELECT rl_fixed_window(10, '1 week', time_zone => 'UTC');
SELECT rl_fixed_window(10, '7 days', time_zone => 'UTC');
SELECT rl_fixed_window(10, '1 year', time_zone => 'UTC');

-- Refused, 22023: a period that is not one calendar unit (a length is not
-- a unit), a start, a token bucket, an unknown zone.
\set VERBOSITY sqlstate
SELECT rl_define('bad', 'fixed window', 3, '30 days', time_zone => 'UTC');
SELECT rl_define('bad', 'fixed window', 3, '24 hours', time_zone => 'UTC');
SELECT rl_define('bad', 'fixed window', 3, '2 months', time_zone => 'UTC');
SELECT rl_define('bad', 'fixed window', 3, '1 day 1 hour', time_zone => 'UTC');
SELECT rl_define('bad', 'fixed window', 3, '1 day', time_zone => 'UTC',
	start => '2026-01-01');
SELECT rl_define('bad', 'token bucket', 3, '1 day', time_zone => 'UTC');
SELECT rl_define('bad', 'fixed window', 3, '1 day', time_zone => 'Mars/Olympus_Mons');
SELECT rl_define('bad', 'fixed window', 3, '1 day', time_zone => '');
SELECT rl_fixed_window(3, '1 hour', time_zone => 'UTC');
SELECT * FROM rl_limit('bad', 'k', config => rl_fixed_window(3, '1 day', time_zone => 'Nowhere'));
\set VERBOSITY default
SELECT rl_define('bad', 'fixed window', 3, '30 days', time_zone => 'UTC');
SELECT count(*) FROM rl_definitions WHERE name = 'bad';

-- Month ends in New York: the last microsecond of January, then February
-- 1st at local midnight (05:00 UTC), which refills to the full 3.
SELECT * FROM on_both('month', '2026-01-31 23:59:59.999999-05', 'America/New_York', 3);
SELECT * FROM on_both('month', '2026-01-31 23:59:59.999999-05', 'America/New_York');
SELECT * FROM on_both('month', '2026-02-01 00:00:00-05', 'America/New_York');
-- February 2026 has 28 days: the window ends on March 1st
SELECT * FROM on_both('month', '2026-02-14 12:00:00-05', 'America/New_York', 2);
SELECT * FROM on_both('month', '2026-02-28 23:00:00-05', 'America/New_York');
-- the window that holds March 8th's change to EDT starts at EST midnight
-- and ends at EDT midnight on April 1st (04:00 UTC)
SELECT * FROM on_both('month', '2026-03-01 00:00:00-05', 'America/New_York', 3);
SELECT * FROM on_both('month', '2026-03-31 23:59:59-04', 'America/New_York');
SELECT * FROM on_both('month', '2026-04-01 00:00:00-04', 'America/New_York');
SELECT name, key, value, ts, remaining, reset_after, idle, period, time_zone
FROM rl_status WHERE name LIKE 'month%' ORDER BY name;
-- year end: December 31st, then January 1st 2027
SELECT * FROM on_both('month', '2026-12-31 23:30:00-05', 'America/New_York', 3);
SELECT * FROM on_both('month', '2026-12-31 23:59:00-05', 'America/New_York');
SELECT * FROM on_both('month', '2027-01-01 00:00:00-05', 'America/New_York');
-- leap year: February 2028 has 29 days
SELECT * FROM on_both('month', '2028-02-01 00:00:00-05', 'America/New_York', 3);
SELECT * FROM on_both('month', '2028-02-29 23:00:00-05', 'America/New_York');
SELECT * FROM on_both('month', '2028-03-01 00:00:00-05', 'America/New_York');

-- rl_check and rl_value read the same windows
SET ratelimit.now_override = '2028-03-31 23:59:00-04';
SELECT ok, retry_after, remaining, reset_after FROM rl_check('month_t', 'k', 3);
SELECT ok, retry_after, remaining, reset_after FROM rl_check('month_m', 'k', 3);
SELECT * FROM rl_value('month_t', 'k');
SELECT * FROM rl_value('month_m', 'k');
-- RateLimit-Policy w: the length of the current window, in seconds
-- (March 2028 in New York: 31 days less the hour the change took)
SELECT rl_headers('month_t', rl_check('month_t', 'k'));
SET ratelimit.now_override = '2028-02-10 00:00:00-05';
SELECT rl_headers('month_m', rl_check('month_m', 'k'));

-- Days across daylight-saving changes: New York's 23-hour March 8th and
-- 25-hour November 1st 2026, Berlin's March 29th and October 25th.
SELECT rl_define('day_t', 'fixed window', 1, '1 day', time_zone => 'America/New_York');
SELECT rl_define('day_m', 'fixed window', 1, '1 day', time_zone => 'America/New_York',
	storage => 'memory');
SELECT * FROM on_both('day', '2026-03-08 00:30:00-05', 'America/New_York');
SELECT * FROM on_both('day', '2026-03-08 23:59:00-04', 'America/New_York');
SELECT * FROM on_both('day', '2026-03-09 00:00:00-04', 'America/New_York');
SELECT * FROM on_both('day', '2026-11-01 00:30:00-04', 'America/New_York');
SELECT * FROM on_both('day', '2026-11-01 01:30:00-05', 'America/New_York');
-- w: November 1st lasts 25 hours; Retry-After: to local midnight
SET ratelimit.now_override = '2026-11-01 12:00:00-05';
SELECT rl_headers('day_t', rl_check('day_t', 'k'));
SELECT * FROM on_both('day', '2026-11-01 23:59:59-05', 'America/New_York');
SELECT * FROM on_both('day', '2026-11-02 00:00:00-05', 'America/New_York');
SELECT rl_define('berlin_t', 'fixed window', 1, '1 day', time_zone => 'Europe/Berlin');
SELECT rl_define('berlin_m', 'fixed window', 1, '1 day', time_zone => 'Europe/Berlin',
	storage => 'memory');
SELECT * FROM on_both('berlin', '2026-03-29 00:00:00+01', 'Europe/Berlin');
SELECT * FROM on_both('berlin', '2026-03-29 03:00:00+02', 'Europe/Berlin');
SELECT * FROM on_both('berlin', '2026-10-25 02:30:00+02', 'Europe/Berlin');
SELECT * FROM on_both('berlin', '2026-10-25 02:30:00+01', 'Europe/Berlin');

-- ISO weeks start on Monday: Sunday March 29th 2026 in Berlin (the change
-- to CEST) is the last day of its week, a week of 167 hours.
SELECT rl_define('week_t', 'fixed window', 2, '1 week', time_zone => 'Europe/Berlin');
SELECT rl_define('week_m', 'fixed window', 2, '1 week', time_zone => 'Europe/Berlin',
	storage => 'memory');
SELECT * FROM on_both('week', '2026-03-23 00:00:00+01', 'Europe/Berlin', 2);
SELECT * FROM on_both('week', '2026-03-29 23:59:59+02', 'Europe/Berlin');
SELECT rl_headers('week_t', rl_check('week_t', 'k'));
SELECT * FROM on_both('week', '2026-03-30 00:00:00+02', 'Europe/Berlin');
-- a year end within a week: Monday December 28th 2026 to January 4th 2027
SELECT * FROM on_both('week', '2026-12-31 12:00:00+01', 'Europe/Berlin', 2);
SELECT * FROM on_both('week', '2027-01-01 00:00:00+01', 'Europe/Berlin');

-- Years: in Tokyo, 2027 starts at 15:00 UTC on December 31st 2026.
SELECT rl_define('year_t', 'fixed window', 5, '1 year', time_zone => 'Asia/Tokyo');
SELECT rl_define('year_m', 'fixed window', 5, '1 year', time_zone => 'Asia/Tokyo',
	storage => 'memory');
SELECT * FROM on_both('year', '2026-12-31 14:59:59+00', 'Asia/Tokyo', 5);
SELECT * FROM on_both('year', '2026-12-31 14:59:59+00', 'Asia/Tokyo');
SELECT * FROM on_both('year', '2026-12-31 15:00:00+00', 'Asia/Tokyo');

-- A capacity above the rate carries over: 10 a month, up to 25.  20 taken
-- in January leave 5; February adds 10, and 15 taken leave 0; March and
-- April add 20, and 25 wait for May (20 + 10, capped at 25).
SELECT rl_define('carry_t', 'fixed window', 10, '1 month', capacity => 25,
	time_zone => 'UTC');
SELECT rl_define('carry_m', 'fixed window', 10, '1 month', capacity => 25,
	time_zone => 'UTC', storage => 'memory');
SELECT * FROM on_both('carry', '2026-01-10 00:00:00+00', 'UTC', 20);
SELECT * FROM on_both('carry', '2026-02-10 00:00:00+00', 'UTC', 15);
SELECT * FROM on_both('carry', '2026-04-10 00:00:00+00', 'UTC', 25);
-- a reservation of 30 with 20 held: -10, paid back on May 1st
SELECT rl_define('carry_t', 'fixed window', 10, '1 month', capacity => 25,
	max_reserved => 30, time_zone => 'UTC');
SELECT rl_define('carry_m', 'fixed window', 10, '1 month', capacity => 25,
	max_reserved => 30, time_zone => 'UTC', storage => 'memory');
SET ratelimit.now_override = '2026-04-20 00:00:00+00';
SELECT ok, retry_after, remaining FROM rl_limit('carry_t', 'k', 30, reserve => true);
SELECT ok, retry_after, remaining FROM rl_limit('carry_m', 'k', 30, reserve => true);

-- Refunds, penalties and blocks.  A block of a day from January 31st noon
-- ends in February: the key is refused until March 1st.
SELECT rl_define('adj_t', 'fixed window', 10, '1 month', time_zone => 'America/New_York');
SELECT rl_define('adj_m', 'fixed window', 10, '1 month', time_zone => 'America/New_York',
	storage => 'memory');
SET ratelimit.now_override = '2026-01-31 12:00:00-05';
SELECT * FROM rl_block('adj_t', 'k', '1 day');
SELECT * FROM rl_block('adj_m', 'k', '1 day');
SELECT * FROM on_both('adj', '2026-02-15 00:00:00-05', 'America/New_York');
SELECT * FROM on_both('adj', '2026-03-01 00:00:00-05', 'America/New_York');
-- a penalty of 24 after the 1 taken: -15; April adds 10 (-5), May 10
-- more: refused until May 1st
SET ratelimit.now_override = '2026-03-01 00:00:00-05';
SELECT * FROM rl_penalize('adj_t', 'k', 24);
SELECT * FROM rl_penalize('adj_m', 'k', 24);
SELECT * FROM on_both('adj', '2026-03-31 23:00:00-04', 'America/New_York');
SELECT * FROM on_both('adj', '2026-04-01 00:00:00-04', 'America/New_York');
-- a refund gives back within the window, never above capacity
SET ratelimit.now_override = '2026-04-01 00:00:00-04';
SELECT * FROM rl_refund('adj_t', 'k', 100);
SELECT * FROM rl_refund('adj_m', 'k', 100);

-- An inline calendar config keeps a state of its own; rl_status shows its
-- policy, zone included.
SET ratelimit.now_override = '2026-03-29 01:30:00+01';
SELECT ok, retry_after, remaining, reset_after
FROM rl_limit('inline', 'k', 2, config => rl_fixed_window(2, '1 day', time_zone => 'Europe/Berlin'));
SELECT ok, retry_after, remaining, reset_after
FROM rl_limit('inline', 'k', config => rl_fixed_window(2, '1 day', time_zone => 'Europe/Berlin'));
SELECT name, kind, period, value, ts, reset_after, time_zone FROM rl_status
WHERE name = 'inline';

-- rl_gc, on both stores: a key is idle once a later window has refilled
-- it, not before.  The first rl_gc collects what else is idle by then.
SELECT rl_define('gc_t', 'fixed window', 2, '1 day', time_zone => 'Europe/Berlin');
SELECT rl_define('gc_m', 'fixed window', 2, '1 day', time_zone => 'Europe/Berlin',
	storage => 'memory');
SELECT * FROM on_both('gc', '2026-03-29 01:30:00+01', 'Europe/Berlin');
SET ratelimit.now_override = '2026-03-29 23:59:59+02';
SELECT name, idle FROM rl_status WHERE name IN ('inline', 'gc_t') ORDER BY name;
SELECT rl_gc(1000) >= 0 AS collected;
SELECT rl_gc(1000) >= 0 AS collected;
SET ratelimit.now_override = '2026-03-30 00:00:00+02';
SELECT name, idle FROM rl_status WHERE name IN ('inline', 'gc_t') ORDER BY name;
-- the inline row, gc_t's row and gc_m's entry
SELECT rl_gc(1000);
SELECT name FROM rl_status WHERE name IN ('inline', 'gc_t') ORDER BY name;

-- Without a time_zone nothing changes: a '1 month' window is 30 days from
-- its origin (here January 31st to March 2nd).
SELECT rl_define('plain', 'fixed window', 1, '1 month', start => '2026-01-01 00:00:00+00');
SET ratelimit.now_override = '2026-01-31 00:00:00+00';
SELECT ok, retry_after FROM rl_limit('plain', 'k');
SELECT ok, retry_after FROM rl_limit('plain', 'k');

SELECT count(rl_undefine(name)) FROM rl_definitions
WHERE name ~ '^(month|day|berlin|week|year|carry|adj|gc)_[tm]$' OR name = 'plain';
RESET ratelimit.now_override;
