-- The same policy written differently is the same policy: an inline config
-- is stored under its canonical form, so respelling it (another name of
-- the same time zone, a start whole periods away, a token bucket's rate
-- over another period) cannot open a second state.  Both stores; make
-- test runs this file on the direct path and again on the SQL path.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-07-01 12:00:00+00';
CREATE FUNCTION shown(n text) RETURNS text LANGUAGE sql AS $$ SELECT replace(n, E'\x1f', '|') $$;

-- Grants of one key of one name, once per config, in order.
CREATE FUNCTION grants(lim text, configs rl_policy[]) RETURNS bigint
LANGUAGE sql AS $$
	SELECT count(*) FILTER (WHERE (rl_limit(lim, 'k', 1, config => configs[i])).ok)
	FROM generate_subscripts(configs, 1) AS i
$$;

-------------------------------------------------------- time zone spellings
-- Every spelling of UTC (links, and zones whose offset is always zero):
-- one day window, one grant in total, per store.  The legacy names at the
-- top level come only where the system's tz database has them (Debian 13
-- moved them to tzdata-legacy).
CREATE TABLE utc(zone text);
INSERT INTO utc VALUES ('UTC'), ('Etc/UTC'), ('Etc/UCT'), ('Etc/Zulu'),
	('Etc/Universal'), ('GMT'), ('Etc/GMT'), ('Etc/GMT0'), ('Etc/GMT+0'),
	('Etc/GMT-0'), ('Etc/Greenwich'), ('utc'), ('etc/zulu');
INSERT INTO utc SELECT zone FROM (VALUES ('UCT'), ('Zulu'), ('Universal'),
	('GMT0'), ('GMT+0'), ('GMT-0'), ('Greenwich')) AS legacy(zone)
WHERE EXISTS (SELECT FROM pg_timezone_names WHERE name = zone);
SELECT grants('cn_day_t', array_agg(rl_fixed_window(1, '1 day', time_zone => zone))) FROM utc;
SELECT grants('cn_day_m', array_agg(rl_fixed_window(1, '1 day', time_zone => zone, storage => 'memory'))) FROM utc;
SELECT DISTINCT shown(name) FROM rate_limits WHERE name LIKE 'cn_day%';
SELECT DISTINCT rl_inline_policy(name) FROM rate_limits WHERE name LIKE 'cn_day%';
-- Links of a zone with daylight saving time are one zone too (US/Eastern
-- where the tz database has it).
CREATE TABLE ny(zone text);
INSERT INTO ny VALUES ('America/New_York'), ('America/NEW_YORK');
INSERT INTO ny SELECT name FROM pg_timezone_names WHERE name = 'US/Eastern';
SELECT grants('cn_ny_t', array_agg(rl_fixed_window(1, '1 day', time_zone => zone))) FROM ny;
SELECT grants('cn_ny_m', array_agg(rl_fixed_window(1, '1 day', time_zone => zone, storage => 'memory'))) FROM ny;
SELECT DISTINCT shown(name) FROM rate_limits WHERE name LIKE 'cn_ny%';
-- Zones that differ stay apart.
SELECT grants('cn_apart', ARRAY[rl_fixed_window(1, '1 day', time_zone => 'UTC'),
	rl_fixed_window(1, '1 day', time_zone => 'Europe/London'),
	rl_fixed_window(1, '1 day', time_zone => 'Etc/GMT-1')]);

-- Refused, 22023, changing nothing: POSIX TZ strings are not zones of the
-- tz database.
\set VERBOSITY sqlstate
SELECT rl_fixed_window(1, '1 day', time_zone => 'UTC0');
SELECT rl_fixed_window(1, '1 day', time_zone => '<A>0');
SELECT rl_fixed_window(1, '1 day', time_zone => 'XYZ0');
SELECT rl_fixed_window(1, '1 day', time_zone => 'EST5');
SELECT rl_fixed_window(1, '1 day', time_zone => 'XYZ0', storage => 'memory');
SELECT rl_define('cn_posix_d', 'fixed window', 1, '1 day', time_zone => 'UTC0');
SELECT rl_limit('cn_posix', 'k', 1, config => ROW('fixed window', 1, '1 day', 1, NULL, 1, NULL, 'table', 'UTC0')::rl_policy);
SELECT rl_limit('cn_posix', 'k', 1, config => ROW('fixed window', 1, '1 day', 1, NULL, 1, NULL, 'memory', '<A>0')::rl_policy);
\set VERBOSITY default
SELECT count(*) FROM rate_limits WHERE name LIKE 'cn_posix%';
SELECT count(*) FROM rl_definitions WHERE name = 'cn_posix_d';

-- A definition that only respells its zone keeps its state.
SELECT rl_define('cn_dz', 'fixed window', 1, '1 day', time_zone => 'Etc/Zulu');
SELECT time_zone FROM rl_definitions WHERE name = 'cn_dz';
SELECT ok FROM rl_limit('cn_dz', 'k');
SELECT rl_define('cn_dz', 'fixed window', 1, '1 day', time_zone => 'Etc/GMT');
SELECT ok FROM rl_limit('cn_dz', 'k');

------------------------------------------------------------- window starts
-- A start is a phase: starts whole periods apart are the same windows.
SELECT grants('cn_start_t', ARRAY[rl_fixed_window(1, '1 hour', start => '2026-01-01 00:10+00'),
	rl_fixed_window(1, '1 hour', start => '2020-05-03 07:10+00'),
	rl_fixed_window(1, '1 hour', start => '2030-01-01 23:10+00')]);
SELECT grants('cn_start_m', ARRAY[rl_fixed_window(1, '1 hour', start => '2026-01-01 00:10+00', storage => 'memory'),
	rl_fixed_window(1, '1 hour', start => '2020-05-03 07:10+00', storage => 'memory'),
	rl_fixed_window(1, '1 hour', start => '2030-01-01 23:10+00', storage => 'memory')]);
SELECT grants('cn_slide_t', ARRAY[rl_sliding_window(1, '1 hour', start => '2026-01-01 00:10+00'),
	rl_sliding_window(1, '1 hour', start => '1999-12-31 01:10+00')]);
SELECT grants('cn_slide_m', ARRAY[rl_sliding_window(1, '1 hour', start => '2026-01-01 00:10+00', storage => 'memory'),
	rl_sliding_window(1, '1 hour', start => '1999-12-31 01:10+00', storage => 'memory')]);
-- another phase is another policy
SELECT grants('cn_phase', ARRAY[rl_fixed_window(1, '1 hour', start => '2026-01-01 00:10+00'),
	rl_fixed_window(1, '1 hour', start => '2026-01-01 00:20+00')]);
SELECT DISTINCT shown(name) FROM rate_limits WHERE name LIKE 'cn_start%' OR name LIKE 'cn_slide%' ORDER BY 1;

------------------------------------------------------ token bucket rates
-- Only rate / period matters to a token bucket: 1/s, 60/min and 3600/h
-- with capacity 1 are one bucket.
SELECT grants('cn_tb_t', ARRAY[rl_token_bucket(1, '1 second', capacity => 1),
	rl_token_bucket(60, '1 minute', capacity => 1),
	rl_token_bucket(3600, '1 hour', capacity => 1),
	rl_token_bucket(0.5, '500 milliseconds', capacity => 1)]);
SELECT grants('cn_tb_m', ARRAY[rl_token_bucket(1, '1 second', capacity => 1, storage => 'memory'),
	rl_token_bucket(60, '1 minute', capacity => 1, storage => 'memory'),
	rl_token_bucket(3600, '1 hour', capacity => 1, storage => 'memory')]);
SELECT DISTINCT shown(name) FROM rate_limits WHERE name LIKE 'cn_tb%';
SELECT DISTINCT (rl_inline_policy(name)).* FROM rate_limits WHERE name LIKE 'cn_tb%';
-- another capacity, or a window's period, is another policy
SELECT grants('cn_tb_cap', ARRAY[rl_token_bucket(1, '1 second', capacity => 1),
	rl_token_bucket(60, '1 minute', capacity => 2)]);
SELECT grants('cn_fw_period', ARRAY[rl_fixed_window(1, '1 second'),
	rl_fixed_window(60, '1 minute', capacity => 1)]);

-- The stored rate and period are friendly: the rate per second, minute,
-- hour or day, the first of these that is exact; each spelling of one
-- ratio is stored the same way.  100/h is exact per hour only, 10/min per
-- minute first, 1/day per day only; 1 per 7 s per none of them, so it
-- keeps the reduced fraction.
SELECT grants('cn_tbh_t', ARRAY[rl_token_bucket(100, '1 hour', capacity => 1),
	rl_token_bucket(200, '2 hours', capacity => 1),
	rl_token_bucket(50, '30 minutes', capacity => 1)]);
SELECT grants('cn_tbh_m', ARRAY[rl_token_bucket(100, '1 hour', capacity => 1, storage => 'memory'),
	rl_token_bucket(200, '2 hours', capacity => 1, storage => 'memory')]);
SELECT grants('cn_tbmin_t', ARRAY[rl_token_bucket(10, '1 minute', capacity => 1),
	rl_token_bucket(20, '2 minutes', capacity => 1),
	rl_token_bucket(600, '1 hour', capacity => 1)]);
SELECT grants('cn_tbday_t', ARRAY[rl_token_bucket(1, '1 day', capacity => 1),
	rl_token_bucket(7, '7 days', capacity => 1)]);
SELECT grants('cn_tb7_t', ARRAY[rl_token_bucket(1, '7 seconds', capacity => 1),
	rl_token_bucket(2, '14 seconds', capacity => 1)]);
SELECT DISTINCT shown(name) FROM rate_limits WHERE name ~ '^cn_tb(h|min|day|7)' ORDER BY 1;
SELECT DISTINCT name, kind, rate, period, capacity FROM rl_status
WHERE name ~ '^cn_tb' ORDER BY 1;
-- What the caller sees comes from the caller's policy: the HTTP fields
-- name its own window, and a refusal's wait is exact (36 s for one token
-- at 100/h, however written).
SELECT rl_headers('cn_tbh_t', rl_check('cn_tbh_t', 'k', config => c), c)
FROM (VALUES (rl_token_bucket(100, '1 hour', capacity => 1)),
	(rl_token_bucket(200, '2 hours', capacity => 1))) AS v(c);
SELECT ok, retry_after FROM (VALUES (rl_token_bucket(100, '1 hour', capacity => 1)),
	(rl_token_bucket(200, '2 hours', capacity => 1)),
	(rl_token_bucket(50, '30 minutes', capacity => 1))) AS v(c),
	LATERAL rl_limit('cn_tbh_t', 'k', config => c);
SELECT (rl_limit('cn_tbh_t', 'k', config => rl_token_bucket(200, '2 hours', capacity => 1), jitter => true)).retry_after
	BETWEEN '36 seconds' AND '2 hours 36 seconds' AS jitter_in_callers_period;

-------------------------------------------------- time zone representatives
-- A group of equal zones is shown by a name of a continent or ocean area:
-- Europe/Berlin as itself, US/Eastern (where there is one) as
-- America/New_York, and every zone always at UTC as UTC.
SELECT ok FROM rl_limit('cn_rep_berlin', 'k', config => rl_fixed_window(1, '1 day', time_zone => 'Europe/Berlin'));
SELECT ok FROM rl_limit('cn_rep_ny', 'k', config => rl_fixed_window(1, '1 day',
	time_zone => (SELECT coalesce(max(name), 'America/New_York') FROM pg_timezone_names WHERE name = 'US/Eastern')));
SELECT ok FROM rl_limit('cn_rep_utc', 'k', config => rl_fixed_window(1, '1 day', time_zone => 'Etc/Zulu'));
SELECT ok FROM rl_limit('cn_rep_utc', 'k', config => rl_fixed_window(1, '1 day', time_zone => 'Etc/UTC'));
SELECT ok FROM rl_limit('cn_rep_utc', 'k', config => rl_fixed_window(1, '1 day', time_zone => 'Etc/GMT0'));
SELECT name, time_zone FROM rl_status WHERE name LIKE 'cn_rep%' ORDER BY 1;
