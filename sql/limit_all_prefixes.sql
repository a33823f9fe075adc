-- rl_limit_all with names and keys that are prefixes of one another: each
-- (name, key) is its own limit, charged its own count, with its own row;
-- only an exact repeat is merged (its counts summed).
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('pl', 'token bucket', 100, '1 hour');
SELECT rl_define('plx', 'token bucket', 100, '1 hour');
SELECT rl_define('p', 'token bucket', 100, '1 hour');
SELECT ok FROM rl_limit_all(
  ARRAY['plx', 'pl', 'p', 'pl', 'pl', 'pl', 'pl'],
  ARRAY['k',   'k',  'k', 'kk', 'k',  NULL, 'k_'],
  ARRAY[1,     2,    4,   8,    16,   32,   64]);
SELECT name, key, 100 - value AS charged FROM rate_limits ORDER BY name, key;
SELECT rl_undefine(name) FROM (VALUES ('pl'), ('plx'), ('p')) v(name);
