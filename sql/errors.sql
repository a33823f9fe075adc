-- Bad input: every case gets a clear error with a SQLSTATE and changes
-- nothing.  Each statement runs in its own subtransaction; the state and
-- definitions are fingerprinted before and after.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('tb', 'token bucket', 10, '1 minute', max_reserved => 5);
SELECT ok FROM rl_limit('tb', 'k', 3);

CREATE FUNCTION fingerprint() RETURNS text LANGUAGE sql AS $$
  SELECT md5(coalesce((SELECT string_agg(format('%s|%s|%s|%s|%s', name, key, shard, value, ts), ',' ORDER BY name, key, shard) FROM rate_limits), '')
          || coalesce((SELECT string_agg(d::text, ',' ORDER BY name) FROM rl_definitions d), ''))
$$;
CREATE TABLE before AS SELECT fingerprint() AS f;

CREATE TABLE cases (id serial, stmt text);
INSERT INTO cases (stmt) VALUES
  -- rl_define
  ($$SELECT rl_define(NULL, 'token bucket', 1, '1 second')$$),
  ($$SELECT rl_define('', 'token bucket', 1, '1 second')$$),
  ($$SELECT rl_define('x', NULL, 1, '1 second')$$),
  ($$SELECT rl_define('x', 'leaky bucket', 1, '1 second')$$),
  ($$SELECT rl_define('x', 'Token Bucket', 1, '1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', NULL, '1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', 0, '1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', -1, '1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', 'NaN', '1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', 'Infinity', '1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', '-Infinity', '1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', 1e308, '1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', 1, NULL)$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '0 seconds')$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '-1 second')$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '101 years')$$),
  -- an infinite interval exists from PostgreSQL 17 on; before, the longest one
  ($$SELECT rl_define('x', 'token bucket', 1, (CASE WHEN current_setting('server_version_num')::int >= 170000 THEN 'infinity' ELSE '178000000 years' END)::interval)$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', capacity => -1)$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', capacity => 'NaN')$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', max_reserved => -1)$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', max_reserved => 'Infinity')$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', shards => 0)$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', shards => -3)$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', shards => 1025)$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', shards => NULL)$$),
  ($$SELECT rl_define('x', 'token bucket', 1, '1 second', start => now())$$),
  ($$SELECT rl_define('x', 'fixed window', 1, '1 second', start => 'infinity')$$),
  ($$SELECT rl_define('x', 'fixed window', 1, '1 second', start => '-infinity')$$),
  ($$SELECT rl_undefine(NULL)$$),
  ($$SELECT rl_undefine('nope')$$),
  -- constructors
  ($$SELECT rl_token_bucket(NULL, '1 second')$$),
  ($$SELECT rl_token_bucket(1, NULL)$$),
  ($$SELECT rl_token_bucket('NaN', '1 second')$$),
  ($$SELECT rl_fixed_window(1, '1 second', -1)$$),
  ($$SELECT rl_fixed_window(1, '1 second', shards => 0)$$),
  -- rl_limit, rl_check, rl_value, rl_reset
  ($$SELECT rl_limit(NULL, 'k')$$),
  ($$SELECT rl_limit('', 'k')$$),
  ($$SELECT rl_limit('nope', 'k')$$),
  ($$SELECT rl_limit('tb', 'k', NULL)$$),
  ($$SELECT rl_limit('tb', 'k', 0)$$),
  ($$SELECT rl_limit('tb', 'k', -1)$$),
  ($$SELECT rl_limit('tb', 'k', 'NaN')$$),
  ($$SELECT rl_limit('tb', 'k', 'Infinity')$$),
  ($$SELECT rl_limit('tb', 'k', '-Infinity')$$),
  ($$SELECT rl_limit('tb', 'k', 1e308)$$),
  ($$SELECT rl_limit('tb', 'k', 1e308, reserve => true)$$),
  ($$SELECT rl_limit('tb', 'k', 11)$$),
  ($$SELECT rl_limit('tb', 'k', 16, reserve => true)$$),
  ($$SELECT rl_limit('tb', 'k', reserve => NULL)$$),
  ($$SELECT rl_limit('tb', 'k', throws => NULL)$$),
  ($$SELECT rl_limit('tb', '')$$),
  ($$SELECT rl_limit('tb', repeat('k', 1025))$$),
  ($$SELECT rl_limit('tb', 'k', config => rl_token_bucket(1, '1 second'))$$),
  ($$SELECT rl_limit('inline', 'k', config => ROW(NULL, 1, '1 s', 1, NULL, 1, NULL, NULL, NULL)::rl_policy)$$),
  ($$SELECT rl_limit('inline', 'k', config => ROW('token bucket', 1, NULL, 1, NULL, 1, NULL, NULL, NULL)::rl_policy)$$),
  ($$SELECT rl_limit('inline', 'k', config => ROW('token bucket', 1, '1 s', 1, NULL, 0, NULL, NULL, NULL)::rl_policy)$$),
  ($$SELECT rl_limit('inline', 'k', config => rl_token_bucket(1, '1 second', shards => 4))$$),
  ($$SELECT rl_check(NULL)$$),
  ($$SELECT rl_check('tb', 'k', 0)$$),
  ($$SELECT rl_check('nope')$$),
  ($$SELECT rl_value(NULL)$$),
  ($$SELECT rl_value('nope')$$),
  ($$SELECT rl_value('tb', '')$$),
  ($$SELECT rl_reset(NULL, 'k')$$),
  ($$SELECT rl_reset('tb', '')$$),
  ($$SELECT rl_limit('tb', 42::numeric)$$),
  -- the setting
  ($$SET ratelimit.now_override = 'not a time'$$),
  ($$SET ratelimit.now_override = 'infinity'$$),
  ($$SET ratelimit.no_such_setting = 'x'$$);

-- code_of(): sql/define.sql

SELECT id, r.code, r.message, stmt FROM cases, code_of(stmt) AS r ORDER BY id;

-- nothing changed
SELECT fingerprint() = f AS unchanged FROM before;
SHOW ratelimit.now_override;
-- 'epoch' is a finite timestamp too
SET ratelimit.now_override = 'epoch';
SELECT ts FROM rl_value('any', config => rl_token_bucket(1, '1 second'));

DROP FUNCTION fingerprint();
DROP TABLE cases, before;
SELECT rl_undefine('tb');
