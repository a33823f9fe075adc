-- Shards: rate, capacity and max_reserved split evenly over N rows; a call
-- takes from the fuller of two random shards, or from both.  Shard picks
-- are random, so every assertion here holds for any pick.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- 2 shards of 5 tokens (5 a minute each)
SELECT rl_define('g2', 'token bucket', 10, '1 minute', shards => 2);
-- 6 is more than one shard holds: both serve, left balanced at 2 each
SELECT * FROM rl_limit('g2', NULL, 6);
SELECT shard, value FROM rate_limits WHERE name = 'g2' ORDER BY shard;
SELECT * FROM rl_value('g2');
-- 5 asked, 4 held: one shard alone needs 3 more (36 s), both together 1 more (6 s)
SELECT * FROM rl_limit('g2', NULL, 5);
SELECT * FROM rl_check('g2', NULL, 5);
-- with 2 shards the whole capacity is grantable (two shards' worth)
SELECT rl_reset('g2', NULL::text);
SELECT ok, remaining FROM rl_limit('g2', NULL, 10);
SELECT ok FROM rl_limit('g2', NULL, 10.5);

-- 4 shards of 2: a call can take at most two shards' worth, 4
SELECT rl_define('g4', 'token bucket', 8, '1 minute', shards => 4);
SELECT ok FROM rl_limit('g4', 'k', 4);
SELECT ok FROM rl_limit('g4', 'k', 4.5);
SELECT rl_reset('g4', 'k');
SELECT count(*) AS rows_after_reset FROM rate_limits WHERE name = 'g4';

-- draining with the clock pinned: never more than the capacity, and the
-- value is what is left
CREATE TEMP TABLE drain AS
SELECT n, (rl_limit('g4', 'k')).ok FROM generate_series(1, 200) AS n;
SELECT count(*) FILTER (WHERE ok) BETWEEN 6 AND 8 AS granted_at_most_capacity,
       (SELECT value FROM rl_value('g4', 'k')) = 8 - count(*) FILTER (WHERE ok) AS value_is_the_rest
FROM drain;
SELECT ok FROM rl_check('g4', 'k', 3);

-- over ten minutes of calls, the shards grant no more than one unsharded
-- limit would: capacity + rate * elapsed (8 + 80), with at most one
-- shard's capacity (2) of rounding
SELECT rl_reset('g4', 'k');
DO $$
DECLARE
  granted float8 := 0;
BEGIN
  FOR s IN 0..599 LOOP
    PERFORM set_config('ratelimit.now_override',
                       (timestamptz '2026-01-01 00:00:00+00' + s * interval '1 second')::text, false);
    FOR c IN 1..3 LOOP
      IF (rl_limit('g4', 'over time')).ok THEN
        granted := granted + 1;
      END IF;
    END LOOP;
  END LOOP;
  RAISE NOTICE 'granted within the bound: %, and close to it: %',
    granted <= 8 + 80 + 2, granted >= 80;
END
$$;
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- sharded reservations split max_reserved too: 2 shards of 5 with 3 each
SELECT rl_define('r2', 'token bucket', 10, '1 minute', max_reserved => 6, shards => 2);
SELECT ok, retry_after, remaining FROM rl_limit('r2', 'k', 14, reserve => true);
SELECT shard, value FROM rate_limits WHERE name = 'r2' ORDER BY shard;
SELECT ok FROM rl_limit('r2', 'k', 16, reserve => true);
SELECT ok FROM rl_limit('r2', 'k', 17, reserve => true);

-- a call two shards must share takes the two fullest, the pair rl_check
-- decides on: 4 shards of 10, two full and two at 2, and a call of 15,
-- which only the full pair serves, is granted every time (a random pair
-- is refused five times in six)
SELECT rl_define('p4', 'token bucket', 40, '1 hour', shards => 4);
DO $$
DECLARE
  granted int := 0;
  checked int := 0;
BEGIN
  FOR i IN 1..30 LOOP
    DELETE FROM rate_limits WHERE name = 'p4';
    INSERT INTO rate_limits
    SELECT 'p4', 'k', s, CASE WHEN s IN (1, 3) THEN 10 ELSE 2 END, '2026-01-01 00:00:00+00'
    FROM generate_series(0, 3) AS s;
    IF (rl_check('p4', 'k', 15)).ok THEN
      checked := checked + 1;
    END IF;
    IF (rl_limit('p4', 'k', 15)).ok THEN
      granted := granted + 1;
    END IF;
  END LOOP;
  RAISE NOTICE 'rl_check granted % of 30, rl_limit granted % of 30', checked, granted;
END
$$;
SELECT shard, value FROM rate_limits WHERE name = 'p4' ORDER BY shard;

-- a call one shard serves alone is granted on both paths, by rl_limit and
-- rl_limit_all alike, whichever shards it probes: 4 shards of 1 (a token a
-- year each), shard 0 full and the others empty.  (The SQL path stopped at
-- the first shard that could serve and locked a random pair, refusing
-- about half the calls with a retry of half a year; rl_limit_all always
-- locked a random pair.)
SELECT rl_define('one', 'token bucket', 4, '1 year', shards => 4);
CREATE FUNCTION one_state(v0 float8, rest float8) RETURNS void
LANGUAGE sql AS $$
  DELETE FROM rate_limits WHERE name = 'one';
  INSERT INTO rate_limits
  SELECT 'one', '', s, CASE WHEN s = 0 THEN v0 ELSE rest END,
         '2026-01-01 00:00:00+00'
  FROM generate_series(0, 3) AS s;
$$;
DO $$
DECLARE
  checked int := 0;
  granted int := 0;
  granted_all int := 0;
BEGIN
  FOR i IN 1..30 LOOP
    PERFORM one_state(1, 0);
    IF (rl_check('one', NULL, 1)).ok THEN
      checked := checked + 1;
    END IF;
    IF (rl_limit('one', NULL, 1)).ok THEN
      granted := granted + 1;
    END IF;
    PERFORM one_state(1, 0);
    IF (rl_limit_all(ARRAY['one'], ARRAY[NULL::text], ARRAY[1::float8])).ok THEN
      granted_all := granted_all + 1;
    END IF;
  END LOOP;
  RAISE NOTICE 'rl_check % of 30, rl_limit % of 30, rl_limit_all % of 30',
    checked, granted, granted_all;
END
$$;

-- retry_after is exact when a single shard will serve first: shard 0 at a
-- half token, the others owing a token each, so shard 0 alone serves after
-- half a year (4383 hours) and any pair only after three quarters.  Every
-- call answers what rl_check answers; one microsecond before the retry
-- time every call is refused, at it every call is granted, 30 times each.
SELECT one_state(0.5, -1);
SELECT ok, retry_after FROM rl_check('one', NULL, 1);
SELECT ok, retry_after FROM rl_limit('one', NULL, 1);
SELECT ok, retry_after FROM rl_limit_all(ARRAY['one'], ARRAY[NULL::text], ARRAY[1::float8]);
DO $$
DECLARE
  at_retry timestamptz := timestamptz '2026-01-01 00:00:00+00' + interval '4383 hours';
  early int := 0;
  on_time int := 0;
BEGIN
  FOR i IN 1..30 LOOP
    PERFORM set_config('ratelimit.now_override',
                       (at_retry - interval '1 microsecond')::text, false);
    PERFORM one_state(0.5, -1);
    IF (rl_check('one', NULL, 1)).ok OR (rl_limit('one', NULL, 1)).ok OR
       (rl_limit_all(ARRAY['one'], ARRAY[NULL::text], ARRAY[1::float8])).ok THEN
      early := early + 1;
    END IF;
    PERFORM set_config('ratelimit.now_override', at_retry::text, false);
    IF (rl_check('one', NULL, 1)).ok THEN
      on_time := on_time + 1;
    END IF;
    IF (rl_limit('one', NULL, 1)).ok THEN
      on_time := on_time + 1;
    END IF;
    PERFORM one_state(0.5, -1);
    IF (rl_limit_all(ARRAY['one'], ARRAY[NULL::text], ARRAY[1::float8])).ok THEN
      on_time := on_time + 1;
    END IF;
  END LOOP;
  RAISE NOTICE 'granted a microsecond early: % of 90; granted on time: % of 90',
    early, on_time;
END
$$;
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
DROP FUNCTION one_state(float8, float8);

-- fixed windows shard too; every shard shares the key's phase
SELECT rl_define('w2', 'fixed window', 10, '1 hour', shards => 2, start => '2026-01-01 00:00:00+00');
SELECT * FROM rl_limit('w2', 'k', 7);
SELECT count(DISTINCT ts) AS one_window FROM rate_limits WHERE name = 'w2';

SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
