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

-- fixed windows shard too; every shard shares the key's phase
SELECT rl_define('w2', 'fixed window', 10, '1 hour', shards => 2, start => '2026-01-01 00:00:00+00');
SELECT * FROM rl_limit('w2', 'k', 7);
SELECT count(DISTINCT ts) AS one_window FROM rate_limits WHERE name = 'w2';

SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
