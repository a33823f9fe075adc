-- Near both ends of the timestamptz range (4714-11-24 BC, 294276-12-31),
-- which only a superuser reaches (ratelimit.now_override, or a window
-- start): a call either answers or fails with 22008 and writes nothing,
-- and no state outside the range is ever stored or returned.  The pinned
-- clock itself must be an absolute time.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

CREATE FUNCTION fingerprint() RETURNS text LANGUAGE sql AS $$
  SELECT md5(coalesce((SELECT string_agg(format('%s|%s|%s|%s|%s', name, key, shard, value, ts), ',' ORDER BY name, key, shard) FROM rate_limits), ''))
$$;
-- run each statement in its own subtransaction; say whether rate_limits changed
CREATE FUNCTION try_all(stmts text[])
RETURNS TABLE (stmt text, code text, message text) LANGUAGE plpgsql AS $$
DECLARE
  before text := fingerprint();
BEGIN
  FOR i IN 1 .. array_length(stmts, 1) LOOP
    stmt := stmts[i];
    SELECT t.code, t.message INTO code, message FROM code_of(stmts[i]) t;
    RETURN NEXT;
  END LOOP;
  stmt := 'rate_limits unchanged';
  code := NULL;
  message := (fingerprint() = before)::text;
  RETURN NEXT;
END
$$;

SELECT rl_define('tb', 'token bucket', 10, '1 minute');
SELECT rl_define('tb2', 'token bucket', 10, '1 minute', shards => 2);
SELECT rl_define('slow', 'token bucket', 1, '30 days');
SELECT rl_define('fw', 'fixed window', 5, '1 hour', start => '2000-01-01 00:00:00+00');
SELECT rl_define('fw30', 'fixed window', 1, '30 days', start => '2000-01-01 00:00:00+00');
SELECT rl_define('fw100', 'fixed window', 1, '100 years', start => '2000-01-01 00:00:00+00');
-- starts at either end of the range; both put windows at half past the hour
SELECT rl_define('fw_min', 'fixed window', 5, '1 hour', start => '4714-11-24 00:30:00+00 BC');
SELECT rl_define('fw_min2', 'fixed window', 10, '1 hour', shards => 2, start => '4714-11-24 00:30:00+00 BC');
SELECT rl_define('fw_end', 'fixed window', 5, '1 hour', start => '294276-12-31 23:30:00+00');
SELECT name, start FROM rl_definitions WHERE name LIKE 'fw%' ORDER BY name;

-- The start: 00:10 on 4714-11-24 BC, the first day a timestamptz holds.
SET ratelimit.now_override = '4714-11-24 00:10:00+00 BC';
-- a bucket counts from now: 10 - 1, full again in 6 s
SELECT * FROM rl_limit('tb', 'k');
-- windows on the hour: this one began at 00:00, the first microsecond
SELECT * FROM rl_limit('fw', 'k');
SELECT * FROM rl_value('tb', 'k');
SELECT * FROM rl_value('fw', 'k');
-- windows at half past began at 23:30 the day before: out of range
SELECT * FROM rl_limit('fw_min', 'k');
SELECT * FROM try_all(ARRAY[
  $$SELECT rl_limit('fw_min', 'k')$$,
  $$SELECT rl_limit('fw_min', 'k', 9, reserve => true)$$,
  $$SELECT rl_check('fw_min', 'k')$$,
  $$SELECT rl_value('fw_min', 'k')$$,
  $$SELECT rl_limit('fw_min2', 'k')$$,
  $$SELECT rl_check('fw_min2', 'k')$$,
  $$SELECT rl_value('fw_min2', 'k')$$,
  $$SELECT rl_limit('inline', NULL, config => rl_fixed_window(5, '1 hour', start => '2000-01-01 00:30:00+00'))$$,
  $$SELECT rl_limit_all(ARRAY['tb', 'fw_min'], ARRAY['k', 'k'], ARRAY[1, 1])$$]);
-- at 00:40 that window began at 00:30, within the range
SET ratelimit.now_override = '4714-11-24 00:40:00+00 BC';
SELECT * FROM rl_limit('fw_min', 'k');
SELECT * FROM rl_limit('fw_min2', 'k');
SELECT * FROM rl_value('fw_min', 'k');
SELECT * FROM rl_value('fw_min2', 'k');
-- a year on, 4713-11-24 BC: 100-year windows from 2000 began 32521 days
-- earlier, still before the range
SET ratelimit.now_override = '4713-11-24 00:00:00+00 BC';
SELECT * FROM try_all(ARRAY[
  $$SELECT rl_limit('fw100', 'k')$$,
  $$SELECT rl_check('fw100', 'k')$$,
  $$SELECT rl_value('fw100', 'k')$$]);
-- a bucket is full again a year on: 10 - 1
SELECT * FROM rl_limit('tb', 'k');

-- The end: 294276-12-31, the last day a timestamptz holds.
SET ratelimit.now_override = '294276-12-31 22:30:00+00';
-- the window row left at 4714-11-24 BC, further back than a bigint
-- spans: full again (5 - 1), counted from 22:00, next window in 30 min
SELECT * FROM rl_limit('fw', 'k');
-- windows at half past: [22:30, 23:30)
SELECT * FROM rl_limit('fw_end', 'k');
SET ratelimit.now_override = '294276-12-31 23:00:00+00';
-- the bucket from 4714 BC is full: 10 - 1, full again in 6 s
SELECT * FROM rl_limit('tb', 'k');
-- two shards: the search for when they are full must stop at the end
SELECT * FROM rl_limit('tb2', 'k');
SELECT * FROM rl_check('tb2', 'k', 10);
SELECT * FROM rl_value('tb', 'k');
SELECT * FROM rl_value('tb2', 'k');
-- the hour window [23:00, end) starts its next at the end itself; a
-- 30-day window began 13 days before the end and the next starts 17 days
-- after it, past what a bigint holds; a 30-day refill too
SELECT * FROM rl_limit('fw', 'k');
SELECT * FROM try_all(ARRAY[
  $$SELECT rl_limit('fw', 'k')$$,
  $$SELECT rl_check('fw', 'k')$$,
  $$SELECT rl_limit('fw30', 'k')$$,
  $$SELECT rl_check('fw30', 'k')$$,
  $$SELECT rl_limit('slow', 'k')$$,
  $$SELECT rl_check('slow', 'k')$$,
  $$SELECT rl_limit_all(ARRAY['tb', 'fw'], ARRAY['k', 'k'], ARRAY[1, 1])$$]);
-- rl_value needs no later time: the window state is reported
SELECT * FROM rl_value('fw', 'k');
SELECT * FROM rl_value('fw30', 'k');
-- 30 s before the end: taking 1 refills in 6 s; taking all would take 60
SET ratelimit.now_override = '294276-12-31 23:59:30+00';
SELECT * FROM rl_limit('tb', 'k');
SELECT * FROM try_all(ARRAY[
  $$SELECT rl_limit('tb', 'k', 9)$$,
  $$SELECT rl_check('tb', 'k', 9)$$,
  $$SELECT rl_limit('tb2', 'k', 5)$$,
  $$SELECT rl_limit('fw_end', 'k')$$]);
SELECT * FROM rl_value('tb', 'k');
-- the status view answers, with no reset time past the end
SELECT name, key, shard, value, ts, reset_after FROM rl_status
WHERE name IN ('tb', 'fw', 'fw_end') ORDER BY name, key, shard;

-- every stored time is within the range, and prints (as pg_dump would;
-- which shard a sharded call took is left out, as it is drawn at random)
SELECT count(*) AS out_of_range FROM rate_limits
WHERE ts < '4714-11-24 00:00:00+00 BC' OR ts > '294276-12-31 23:59:59.999999+00';
SELECT name, key, value, ts FROM rate_limits ORDER BY name, key, ts;

-- The pinned clock must be an absolute time: a relative word is refused
-- and the setting keeps its value.
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SET ratelimit.now_override = 'now';
SET ratelimit.now_override = 'today';
SET ratelimit.now_override = 'tomorrow';
SET ratelimit.now_override = 'yesterday';
SET ratelimit.now_override = 'NOW';
SET ratelimit.now_override = 'Tomorrow 10:00';
SET ratelimit.now_override = 'yesterday 00:00:00+00';
SHOW ratelimit.now_override;
-- epoch and a Julian day name one instant
SET ratelimit.now_override = 'epoch';
SELECT ts FROM rl_value('tb', 'epoch');
SET ratelimit.now_override = 'J2451545';
SELECT ts FROM rl_value('tb', 'j2000');
SELECT count(*) AS written FROM rate_limits WHERE key IN ('epoch', 'j2000');

RESET ratelimit.now_override;
DROP FUNCTION try_all(text[]);
DROP FUNCTION fingerprint();
SELECT rl_undefine(name) FROM rl_definitions
WHERE name IN ('tb', 'tb2', 'slow', 'fw', 'fw30', 'fw100', 'fw_min', 'fw_min2', 'fw_end')
ORDER BY name;
SELECT count(*) AS left_over FROM rate_limits;
