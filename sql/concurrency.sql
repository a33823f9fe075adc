-- Concurrency limits: definitions, transaction-scoped permits (rl_acquire),
-- leases at pinned times (rl_lease, rl_release, rl_gc), the views, and
-- every error with its SQLSTATE.  Several holders at once are in
-- test/specs/concurrency.spec; crash recovery of leases in test/t/008.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

SELECT rl_define_concurrency('exports', 2);
SELECT rl_define_concurrency('jobs', 3, leases => true);
SELECT rl_define('tb', 'token bucket', 10, '1 minute');
SELECT name, kind, rate, period, capacity, max_reserved, shards, start
FROM rl_definitions WHERE name IN ('exports', 'jobs') ORDER BY name;

-- each statement in a subtransaction: its SQLSTATE and message
CREATE FUNCTION try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE FUNCTION fingerprint() RETURNS text LANGUAGE sql AS $$
  SELECT md5(coalesce((SELECT string_agg(d::text, ',' ORDER BY name) FROM rl_definitions d), '')
          || coalesce((SELECT string_agg(format('%s|%s|%s|%s|%s|%s', name, key, permits, acquired, expires, released), ',' ORDER BY acquired, name, key) FROM rl_leases), '')
          || coalesce((SELECT string_agg(format('%s|%s|%s', name, key, value), ',' ORDER BY name, key) FROM rate_limits), ''))
$$;
CREATE TABLE before AS SELECT fingerprint() AS f;

-- Bad input: a clear SQLSTATE, nothing changed, no permit left behind.
SELECT stmt, try(stmt) FROM (VALUES
  ($$SELECT rl_define_concurrency('c', 0)$$),
  ($$SELECT rl_define_concurrency('c', 1001)$$),
  ($$SELECT rl_define_concurrency('c', -1)$$),
  ($$SELECT rl_define_concurrency('c', NULL)$$),
  ($$SELECT rl_define_concurrency('c', 1, NULL)$$),
  ($$SELECT rl_define_concurrency(NULL, 1)$$),
  ($$SELECT rl_define_concurrency('', 1)$$),
  ($$SELECT rl_define('c', 'concurrency', 1, '1 second')$$),
  ($$SELECT rl_define('c', 'concurrency lease', 1, '1 second')$$),
  -- one name, one form of limit
  ($$SELECT rl_define_concurrency('tb', 5)$$),
  ($$SELECT rl_define('exports', 'token bucket', 1, '1 second')$$),
  ($$SELECT rl_define_concurrency('exports', 2, leases => true)$$),
  ($$SELECT rl_define_concurrency('jobs', 3)$$),
  -- the rate functions refuse a concurrency limit, and the reverse
  ($$SELECT rl_limit('exports', 'k')$$),
  ($$SELECT rl_check('exports', 'k')$$),
  ($$SELECT rl_value('exports', 'k')$$),
  ($$SELECT rl_limit_all('{tb,exports}', '{k,k}', '{1,1}')$$),
  ($$SELECT rl_limit('c', 'k', config => ROW('concurrency', NULL, NULL, 2, NULL, 1, NULL, NULL, NULL)::rl_policy)$$),
  ($$SELECT rl_limit('c', 'k', config => ROW('concurrency', 1, '1 second', 2, NULL, 1, NULL, NULL, NULL)::rl_policy)$$),
  ($$SELECT rl_acquire('tb', 'k')$$),
  ($$SELECT rl_lease('tb', 'k', 1, '1 minute')$$),
  ($$SELECT rl_acquire('jobs', 'k')$$),
  ($$SELECT rl_lease('exports', 'k', 1, '1 minute')$$),
  ($$SELECT rl_acquire('nope', 'k')$$),
  ($$SELECT rl_lease('nope', 'k', 1, '1 minute')$$),
  -- permits, wait, ttl
  ($$SELECT rl_acquire('exports', 'k', 3)$$),
  ($$SELECT rl_acquire('exports', 'k', 0)$$),
  ($$SELECT rl_acquire('exports', 'k', -1)$$),
  ($$SELECT rl_acquire('exports', 'k', NULL)$$),
  ($$SELECT rl_acquire('exports', 'k', wait => '-1 second')$$),
  ($$SELECT rl_acquire('exports', 'k', wait => NULL)$$),
  ($$SELECT rl_acquire('exports', 'k', throws => NULL)$$),
  ($$SELECT rl_acquire(NULL, 'k')$$),
  ($$SELECT rl_acquire('exports', '')$$),
  ($$SELECT rl_lease('jobs', 'k', 4, '1 minute')$$),
  ($$SELECT rl_lease('jobs', 'k', 0, '1 minute')$$),
  ($$SELECT rl_lease('jobs', 'k', NULL, '1 minute')$$),
  ($$SELECT rl_lease('jobs', 'k', 1, NULL)$$),
  ($$SELECT rl_lease('jobs', 'k', 1, '-1 minute')$$),
  ($$SELECT rl_lease('jobs', 'k', 1, '0')$$),
  ($$SELECT rl_lease('jobs', 'k', 1, '101 years')$$),
  ($$SELECT rl_release(NULL)$$),
  ($$SELECT rl_release('00000000-0000-0000-0000-000000000000')$$)
) AS t(stmt);
SELECT f = fingerprint() AS unchanged FROM before;
SELECT count(*) AS permits_held FROM rl_permits;

-- A lease that would expire past the end of timestamptz: 22008, nothing stored.
SET ratelimit.now_override = '294276-12-31 12:00:00+00';
SELECT try($$SELECT rl_lease('jobs', 'k', 1, '1 day')$$);
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT f = fingerprint() AS unchanged FROM before;

-- Transaction-scoped permits: two per key; the third call is refused, at
-- once; a savepoint rolled back returns what it took.
BEGIN;
SELECT rl_acquire('exports', 'u1') AS first, rl_acquire('exports', 'u1') AS second;
SELECT rl_acquire('exports', 'u1') AS third;
SELECT rl_acquire('exports', 'u2') AS other_key;
SELECT name, permits, key_hash = rl_key_hash('u1') AS is_u1, held,
       pids = ARRAY[pg_backend_pid()] AS mine
FROM rl_permits ORDER BY held DESC;
-- what an operator sees in pg_locks: advisory locks of the extension's own
-- field4 range (objsubid 16384 + slot), never 1 or 2, and one ShareLock of
-- the name's lock (objid 0, objsubid 16382) however many permits
SELECT locktype, mode, granted, objsubid BETWEEN 16384 AND 16385 AS permit_slot,
       objid = 0 AND objsubid = 16382 AS name_lock
FROM pg_locks WHERE locktype = 'advisory' AND classid = rl_key_hash('exports')
ORDER BY objsubid;
SELECT try($$SELECT rl_acquire('exports', 'u1', throws => true)$$);
COMMIT;
SELECT count(*) AS held_after_commit FROM rl_permits;

BEGIN;
SELECT rl_acquire('exports', 'u1');
SAVEPOINT s;
SELECT rl_acquire('exports', 'u1') AS in_savepoint;
SELECT rl_acquire('exports', 'u1') AS full;
ROLLBACK TO SAVEPOINT s;
SELECT held FROM rl_permits;
SELECT rl_acquire('exports', 'u1') AS after_rollback_to;
-- two permits at once: all or none; a refusal gives back what it took
SELECT rl_acquire('exports', 'u3', 2) AS two;
SELECT rl_acquire('exports', 'u3') AS none_left;
ROLLBACK;
SELECT count(*) AS held_after_rollback FROM rl_permits;
BEGIN;
SELECT rl_acquire('exports', 'u4');
SELECT rl_acquire('exports', 'u4', 2) AS two_of_one_free;
SELECT held FROM rl_permits;
COMMIT;

-- The NULL key and key types: 42 and '42' are the same key.
BEGIN;
SELECT rl_acquire('exports', 42), rl_acquire('exports', '42'),
       rl_acquire('exports', 42::smallint) AS third;
SELECT rl_acquire('exports'), rl_acquire('exports', NULL::text), rl_acquire('exports') AS third;
SELECT key_hash = rl_key_hash(NULL) AS null_key, held FROM rl_permits
WHERE key_hash IN (rl_key_hash(NULL), rl_key_hash('42')) ORDER BY 1;
SELECT rl_acquire('exports', '00000000-0000-0000-0000-000000000001'::uuid),
       rl_acquire('exports', 7::bigint);
ROLLBACK;

-- The application's own advisory locks never collide with permits.
BEGIN;
SELECT pg_advisory_xact_lock(rl_key_hash('exports')::bigint << 32 | rl_key_hash('u1')::bigint);
SELECT pg_advisory_xact_lock(rl_key_hash('exports')::int, rl_key_hash('u1')::int);
SELECT rl_acquire('exports', 'u1', 2) AS both_permits;
ROLLBACK;

-- A bounded wait: it sleeps, then gives up; it never spins.
BEGIN;
SELECT rl_acquire('exports', 'w', 2);
SELECT clock_timestamp() AS t0 \gset
SELECT rl_acquire('exports', 'w', wait => '150 milliseconds') AS waited;
SELECT clock_timestamp() - :'t0'::timestamptz >= '150 milliseconds' AS waited_long_enough;
-- statement_timeout ends a long wait with its usual error
SET LOCAL statement_timeout = '200ms';
SELECT rl_acquire('exports', 'w', wait => '10 seconds');
ROLLBACK;

-- Permits write nothing: no transaction id, so a read-only transaction
-- may take them.  Leases write, and raise 25006 there.
BEGIN READ ONLY;
SELECT rl_acquire('exports', 'ro') AS read_only_ok;
SELECT txid_current_if_assigned() IS NULL AS no_xid;
SELECT try($$SELECT rl_lease('jobs', 'ro', 1, '1 minute')$$);
SELECT try($$SELECT rl_release('00000000-0000-0000-0000-000000000000')$$);
SELECT try($$SELECT rl_define_concurrency('x', 1)$$);
ROLLBACK;

-- Leases at pinned times: three permits per key.
SELECT rl_lease('jobs', 'k', 2, '10 minutes') AS a \gset
SELECT rl_lease('jobs', 'k', 1, '1 minute') AS b \gset
SELECT rl_lease('jobs', 'k', 1, '1 minute') IS NULL AS full;
SELECT rl_lease('jobs', NULL, 3, '1 hour') IS NOT NULL AS shared_key;
SELECT rl_lease('jobs', 7, 1, '1 hour') IS NOT NULL AS int_key,
       rl_lease('jobs', '7', 3, '1 hour') IS NULL AS same_key_as_text;
SELECT name, key, permits, acquired, expires, released, held
FROM rl_lease_status ORDER BY key NULLS FIRST, expires;
-- b expires after a minute; its permit is free again without a release
SET ratelimit.now_override = '2026-01-01 00:01:00+00';
SELECT rl_lease('jobs', 'k', 1, '1 minute') AS c \gset
SELECT :'c' <> '' AS b_expired_c_granted;
SELECT rl_release(:'b') AS release_expired;
-- a released early: its two permits are free at once; a second release is
-- harmless and says it was not held
SELECT rl_release(:'a') AS release_a, rl_release(:'a') AS release_a_again;
SELECT rl_lease('jobs', 'k', 2, '1 minute') IS NOT NULL AS two_more;
SELECT rl_lease('jobs', 'k', 1, '1 minute') IS NULL AS full_again;
-- rl_gc at 00:02: b and c (expired) go; a (released, not expired) stays,
-- so releasing it again still answers false; then, past its expiry, it goes
SET ratelimit.now_override = '2026-01-01 00:02:00+00';
SELECT key, permits, expires, released IS NOT NULL AS released, held
FROM rl_lease_status WHERE key = 'k' ORDER BY acquired, expires, permits;
SELECT rl_gc(1) AS removed_at_most_one;
SELECT rl_gc() AS removed;
SELECT key, permits, expires, released IS NOT NULL AS released, held
FROM rl_lease_status WHERE key = 'k' ORDER BY acquired, expires, permits;
SELECT rl_release(:'a') AS release_a_after_gc;
SELECT regexp_replace(try(format('SELECT rl_release(%L)', :'b')), '[0-9a-f-]{36}', '<b>') AS release_removed;
SET ratelimit.now_override = '2026-01-01 00:10:00+00';
SELECT rl_gc() AS removed;
SELECT key, held FROM rl_lease_status ORDER BY key NULLS FIRST;

-- Leases taken in a transaction that rolls back never existed.
BEGIN;
SELECT rl_lease('jobs', 'rb', 3, '1 minute') IS NOT NULL AS taken;
ROLLBACK;
SELECT rl_lease('jobs', 'rb', 3, '1 minute') IS NOT NULL AS taken_again;

-- A lowered limit counts what is held: no new lease until below it.
SELECT rl_define_concurrency('jobs', 2, leases => true);
SELECT rl_lease('jobs', 'rb', 1, '1 minute') IS NULL AS refused;
SELECT try($$SELECT rl_lease('jobs', 'rb', 3, '1 minute')$$);

-- rl_status shows no concurrency limit; rl_gc leaves them alone.
SELECT count(*) FROM rl_status WHERE name IN ('exports', 'jobs');

-- rl_undefine deletes a lease limit's leases that hold nothing and keeps
-- the held ones: they count again when the name is defined once more, and
-- keep it from becoming a limit of permits (55006) until released or
-- expired.
SELECT rl_release(rl_lease('jobs', 'other', 1, '1 minute')) AS released;
SELECT count(*) FILTER (WHERE held) AS held, count(*) FILTER (WHERE NOT held) AS not_held
FROM rl_lease_status WHERE name = 'jobs';
SELECT rl_undefine('jobs');
SELECT count(*) FILTER (WHERE held) AS held, count(*) FILTER (WHERE NOT held) AS not_held
FROM rl_lease_status WHERE name = 'jobs';
SELECT try($$SELECT rl_define_concurrency('jobs', 3)$$);
SELECT rl_define_concurrency('jobs', 3, leases => true);
SELECT rl_lease('jobs', 'rb', 1, '1 minute') IS NULL AS still_counted;
SET ratelimit.now_override = '2026-01-01 02:00:00+00';
SELECT rl_undefine('jobs');
SELECT count(*) AS leases_left FROM rl_leases;
SELECT rl_define_concurrency('jobs', 3);
SELECT rl_undefine('jobs');
SELECT rl_undefine('exports');
