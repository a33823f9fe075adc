-- The rl_status view: every stored row with its definition and its state
-- brought forward to now.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-06-01 00:00:00+00';
SELECT rl_define('st_bucket', 'token bucket', 10, '1 minute', capacity => 20);
SELECT rl_define('st_window', 'fixed window', 100, '1 hour', start => '2026-01-01 00:00:00+00');
SELECT rl_define('st_sharded', 'token bucket', 8, '1 minute', shards => 2);
SELECT ok FROM rl_limit('st_bucket', 'alice', 15);
SELECT ok FROM rl_limit('st_bucket', NULL, 25, reserve => true);
SELECT ok FROM rl_limit('st_window', 42, 30);
SELECT ok FROM rl_limit('st_sharded', 'k', 8);
SELECT ok FROM rl_limit('st_inline', 'k', 1, config => rl_token_bucket(1, '1 hour'));

\x on
SELECT * FROM rl_status ORDER BY name, key, shard;
\x off

-- 30 s later: alice has 5 + 5 = 10 tokens, 60 s from full; the NULL key
-- has paid its reservation of 5 back (0, 2 min from full); the window is
-- unchanged until 01:00; the two shards (4 tokens each, 4 a minute) were
-- both emptied by one call of 8 and hold 2 each.
SET ratelimit.now_override = '2026-06-01 00:00:30+00';
SELECT name, key, shard, value, ts, remaining, reset_after, idle,
       stored_value, stored_ts
FROM rl_status ORDER BY name, key, shard;

-- the view agrees with rl_value for every unsharded key, defined or inline
SELECT s.name, s.key, s.value = v.value AS same_value, s.ts = v.ts AS same_ts
FROM rl_status s, LATERAL rl_value(s.name, s.key,
  CASE WHEN s.name = 'st_inline' THEN rl_token_bucket(1, '1 hour') END) v
WHERE s.shards = 1 ORDER BY s.name, s.key;

SELECT rl_undefine('st_bucket'), rl_undefine('st_window'), rl_undefine('st_sharded');
DELETE FROM rate_limits;
RESET ratelimit.now_override;
