-- What one unprivileged call can do to a key it shares with others.  A
-- reservation without max_reserved goes at most one capacity below zero
-- (the harm a full burst does); a lease lasts at most
-- ratelimit.max_lease_ttl (1 day unless a superuser says otherwise).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS ratelimit;
RESET client_min_messages;
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

CREATE FUNCTION bounds_try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- the login_failures example of docs/policies.md, on both stores (without
-- its block_for, which would block the key at the first refusal below)
SELECT rl_define('login_failures', 'token bucket', 5, '15 minutes');
SELECT rl_define('login_failures_mem', 'token bucket', 5, '15 minutes',
                 storage => 'memory');
CREATE ROLE regress_ratelimit_bounds LOGIN;
SET ROLE regress_ratelimit_bounds;

-- a reservation 500 years deep is refused (22023) and changes nothing
SELECT * FROM rl_limit('login_failures', 'victim', 87660000, reserve => true);
SELECT bounds_try($$SELECT rl_limit('login_failures_mem', 'victim', 87660000, reserve => true)$$);
SELECT bounds_try($$SELECT rl_limit_all(ARRAY['login_failures'], ARRAY['victim'], ARRAY[87660000], reserve => true)$$);
SELECT bounds_try($$SELECT rl_check('login_failures', 'victim', 87660000, reserve => true)$$);
-- one token past capacity + capacity is refused too
SELECT bounds_try($$SELECT rl_limit('login_failures', 'victim', 11, reserve => true)$$);
SELECT value, ts FROM rl_value('login_failures', 'victim');
SELECT value, ts FROM rl_value('login_failures_mem', 'victim');
RESET ROLE;
SELECT count(*) AS rows FROM rate_limits WHERE name = 'login_failures';
SET ROLE regress_ratelimit_bounds;

-- the deepest default reservation: 10 with 5 held, the key at -5; the work
-- runs when the 5 owed have come in, 15 minutes
SELECT * FROM rl_limit('login_failures', 'victim', 10, reserve => true);
SELECT * FROM rl_limit('login_failures_mem', 'victim', 10, reserve => true);
-- the key is at its deepest: another reservation waits for one token (3
-- minutes), a plain call for six (18 minutes), not for centuries
SELECT * FROM rl_limit('login_failures', 'victim', 1, reserve => true);
SELECT * FROM rl_limit('login_failures_mem', 'victim', 1, reserve => true);
SELECT * FROM rl_limit('login_failures', 'victim');
SELECT * FROM rl_limit('login_failures_mem', 'victim');
RESET ROLE;
SET ratelimit.now_override = '2026-01-01 00:03:00+00';
SET ROLE regress_ratelimit_bounds;
SELECT ok, retry_after, remaining FROM rl_limit('login_failures', 'victim', 1, reserve => true);
SELECT ok, retry_after, remaining FROM rl_limit('login_failures_mem', 'victim', 1, reserve => true);
RESET ROLE;
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- a fixed window: at most one window's capacity below zero
SET ROLE regress_ratelimit_bounds;
SELECT bounds_try($$SELECT rl_limit('fw', 'k', 7, reserve => true,
  config => rl_fixed_window(3, '1 hour', start => '2026-01-01 00:00:00+00'))$$);
SELECT * FROM rl_limit('fw', 'k', 6, reserve => true,
  config => rl_fixed_window(3, '1 hour', start => '2026-01-01 00:00:00+00'));
SELECT * FROM rl_limit('fw', 'k', 1, reserve => true,
  config => rl_fixed_window(3, '1 hour', start => '2026-01-01 00:00:00+00'));

-- shards: each shard at most its own capacity below zero
RESET ROLE;
SELECT rl_define('sharded', 'token bucket', 100, '1 minute', shards => 4);
SET ROLE regress_ratelimit_bounds;
SELECT bounds_try($$SELECT rl_limit('sharded', 'k', 101, reserve => true)$$);
SELECT ok FROM rl_limit('sharded', 'k', 100, reserve => true);

-- capacity 0 without max_reserved: no reservations at all
SELECT bounds_try($$SELECT rl_limit('paced', 'k', 1, reserve => true,
  config => rl_token_bucket(1, '1 second', 0))$$);

-- deeper reservations are the definition's choice: an explicit max_reserved
RESET ROLE;
SELECT rl_define('deep', 'token bucket', 5, '15 minutes', max_reserved => 1000);
SELECT rl_define('deep_mem', 'token bucket', 5, '15 minutes', max_reserved => 1000,
                 storage => 'memory');
SET ROLE regress_ratelimit_bounds;
SELECT * FROM rl_limit('deep', 'k', 1005, reserve => true);
SELECT * FROM rl_limit('deep_mem', 'k', 1005, reserve => true);
SELECT bounds_try($$SELECT rl_limit('deep', 'k', 1006, reserve => true)$$);
SELECT * FROM rl_limit('deep_inline', 'k', 1005, reserve => true,
  config => rl_token_bucket(5, '15 minutes', max_reserved => 1000));
RESET ROLE;

-- max_reserved stays NULL for the default, in rl_definitions and rl_status
SELECT name, capacity, max_reserved FROM rl_definitions
WHERE name IN ('login_failures', 'deep') ORDER BY name;
SELECT name, key, capacity, max_reserved, value FROM rl_status
WHERE name IN ('login_failures', 'deep') ORDER BY name;

-- leases: at most ratelimit.max_lease_ttl (1 day); longer is 22023 and
-- stores nothing
SELECT rl_define_concurrency('bounds_jobs', 2, leases => true);
SHOW ratelimit.max_lease_ttl;
SET ROLE regress_ratelimit_bounds;
SELECT rl_lease('bounds_jobs', 'shared', 2, '100 years');
SELECT bounds_try($$SELECT rl_lease('bounds_jobs', 'shared', 2, '1 day 1 second')$$);
SET ratelimit.max_lease_ttl = '100 years';
RESET ROLE;
SELECT count(*) AS leases FROM rl_leases WHERE name = 'bounds_jobs';
SET ROLE regress_ratelimit_bounds;
SELECT rl_lease('bounds_jobs', 'shared', 1, '1 day') IS NOT NULL AS one_day;
RESET ROLE;
SELECT expires - acquired AS ttl FROM rl_leases WHERE name = 'bounds_jobs';
SELECT bounds_try($$SELECT rl_lease('bounds_jobs', 'shared', 1, '7 days')$$);
-- a superuser may allow longer leases, to everyone or to one role
SET ratelimit.max_lease_ttl = '7d';
SELECT rl_lease('bounds_jobs', 'shared', 1, '7 days') IS NOT NULL AS one_week;
ALTER ROLE regress_ratelimit_bounds SET ratelimit.max_lease_ttl = '2d';
ALTER ROLE regress_ratelimit_bounds RESET ratelimit.max_lease_ttl;
SELECT bounds_try($$SET ratelimit.max_lease_ttl = '101 years'$$);
RESET ratelimit.max_lease_ttl;

DELETE FROM rl_leases WHERE name = 'bounds_jobs';
SELECT count(rl_undefine(name)) AS undefined FROM rl_definitions
WHERE name IN ('login_failures', 'login_failures_mem', 'sharded', 'deep',
               'deep_mem', 'bounds_jobs');
SELECT rl_reset('fw', 'k');
SELECT rl_reset('deep_inline', 'k');
DROP ROLE regress_ratelimit_bounds;
DROP FUNCTION bounds_try(text);
