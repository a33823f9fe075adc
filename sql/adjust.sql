-- Refunds, penalties and blocks: their arithmetic at pinned times, with
-- exact retry_afters, on both kinds, with reservations and shards; every
-- key type, named and inline limits, transactions, bad input and
-- read-only transactions.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('tb', 'token bucket', 10, '1 minute');
SELECT rl_define('fw', 'fixed window', 5, '1 hour', start => '2026-01-01 00:00:00+00');

-- each statement's SQLSTATE, or 'no error': error_of (sql/define.sql)

------------------------------------------------------------------ refunds
-- 7 taken, 3 left; 3 back: 6; 30 back: capped at the capacity 10
SELECT ok, remaining FROM rl_limit('tb', 'r', 7);
SELECT * FROM rl_refund('tb', 'r', 3);
SELECT * FROM rl_refund('tb', 'r', 30);
SELECT value, ts FROM rate_limits WHERE name = 'tb' AND key = 'r';
-- brought forward first: 2 left at 0 s, 12 s later 4, then 1 back: 5 at 12 s
SELECT ok, remaining FROM rl_limit('tb', 'r', 8);
SET ratelimit.now_override = '2026-01-01 00:00:12+00';
SELECT * FROM rl_refund('tb', 'r', 1);
-- the default count is 1
SELECT * FROM rl_refund('tb', 'r');
-- a key with no row is full: a refund leaves it full
SELECT * FROM rl_refund('tb', 'new');
-- transactional: a rollback undoes the refund, a rollback to a savepoint too
BEGIN;
SELECT value FROM rl_refund('tb', 'r', 2);
ROLLBACK;
SELECT value FROM rl_value('tb', 'r');
BEGIN;
SAVEPOINT s;
SELECT value FROM rl_refund('tb', 'r', 2);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT value FROM rl_value('tb', 'r');
-- consume then refund in one transaction: as if nothing happened
BEGIN;
SELECT ok, remaining FROM rl_limit('tb', 'r', 6);
SELECT value FROM rl_refund('tb', 'r', 6);
COMMIT;
SELECT value FROM rl_value('tb', 'r');
-- fixed window: 4 taken of 5, 10 back, capped at 5, ts stays the window's
SET ratelimit.now_override = '2026-01-01 00:10:00+00';
SELECT ok, remaining FROM rl_limit('fw', 'r', 4);
SELECT * FROM rl_refund('fw', 'r', 10);

------------------------------------------------------------------ penalties
-- 10 held, 13 taken without a check: -3; a call of 1 needs 4 tokens = 24 s
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT * FROM rl_penalize('tb', 'p', 13);
SELECT * FROM rl_limit('tb', 'p');
-- exact: refused a microsecond before, granted at 01:00:24
SET ratelimit.now_override = '2026-01-01 01:00:23.999999+00';
SELECT ok, retry_after FROM rl_limit('tb', 'p');
SET ratelimit.now_override = '2026-01-01 01:00:24+00';
SELECT ok, remaining FROM rl_limit('tb', 'p');
-- the 1000-year bound: 10 a minute for 1000 years is 5,259,600,000 tokens,
-- so from full a penalty of 5,259,600,000 is the deepest allowed
SELECT value FROM rl_penalize('tb', 'deep', 5259600000);
SELECT error_of($$SELECT rl_penalize('tb', 'deeper', 5259600011)$$);
SELECT count(*) AS deeper_rows FROM rate_limits WHERE key = 'deeper';
-- fixed window: 5 - 12 = -7 in [01:00, 02:00): two windows, until 03:00
SELECT * FROM rl_penalize('fw', 'p', 12);
SELECT * FROM rl_limit('fw', 'p');
SET ratelimit.now_override = '2026-01-01 02:59:59.999999+00';
SELECT ok FROM rl_limit('fw', 'p');
SET ratelimit.now_override = '2026-01-01 03:00:00+00';
SELECT ok, remaining FROM rl_limit('fw', 'p');
-- a penalty below -max_reserved refuses reservations until refilled
SELECT rl_define('tbr', 'token bucket', 10, '1 minute', max_reserved => 5);
SELECT * FROM rl_penalize('tbr', 'p', 20);
SELECT * FROM rl_limit('tbr', 'p', 1, reserve => true);
-- -10 needs to reach -4: 6 tokens, 36 s
SET ratelimit.now_override = '2026-01-01 03:00:35.999999+00';
SELECT ok FROM rl_limit('tbr', 'p', 1, reserve => true);
SET ratelimit.now_override = '2026-01-01 03:00:36+00';
SELECT ok, retry_after, remaining FROM rl_limit('tbr', 'p', 1, reserve => true);

------------------------------------------------------------------ blocks
-- token bucket, blocked for 1 minute: empty at 04:01, one token 6 s later
SET ratelimit.now_override = '2026-01-01 04:00:00+00';
SELECT * FROM rl_block('tb', 'b', '1 minute');
SELECT * FROM rl_limit('tb', 'b');
SELECT ok, retry_after FROM rl_limit('tb', 'b', 10);
SET ratelimit.now_override = '2026-01-01 04:01:05.999999+00';
SELECT ok FROM rl_limit('tb', 'b');
SET ratelimit.now_override = '2026-01-01 04:01:06+00';
SELECT ok, remaining FROM rl_limit('tb', 'b');
-- a reservation during a block is granted only as a reservation: its work
-- runs after the block, once its own tokens have come in (04:10 + 12 s)
SET ratelimit.now_override = '2026-01-01 04:05:00+00';
SELECT * FROM rl_block('tb', 'b', '5 minutes');
SELECT * FROM rl_limit('tb', 'b', 2, reserve => true);
SELECT ok FROM rl_limit('tb', 'b', 1);
-- with max_reserved => 0 a reservation is refused like any call
SELECT * FROM rl_block('tbr', 'b', '5 minutes');
SELECT rl_define('tb0', 'token bucket', 10, '1 minute', max_reserved => 0);
SELECT * FROM rl_block('tb0', 'b', '5 minutes');
SELECT ok, retry_after FROM rl_limit('tb0', 'b', 1, reserve => true);
-- an outstanding reservation is not forgiven: -10 at 04:20, blocked for
-- 30 seconds: 5 repaid by 04:20:30, -5 kept
SET ratelimit.now_override = '2026-01-01 04:20:00+00';
SELECT ok, retry_after FROM rl_limit('tb', 'debt', 20, reserve => true);
SELECT * FROM rl_block('tb', 'debt', '30 seconds');
SELECT ok, retry_after FROM rl_limit('tb', 'debt');
-- a shorter block leaves a longer one as it is
SELECT * FROM rl_block('tb', 'b2', '1 hour');
SELECT * FROM rl_block('tb', 'b2', '1 minute');
-- rl_reset lifts a block
SELECT rl_reset('tb', 'b2');
SELECT ok, remaining FROM rl_limit('tb', 'b2');
-- a penalty deepens a block, a refund gives tokens usable at once
SELECT * FROM rl_block('tb', 'b3', '1 minute');
SELECT * FROM rl_penalize('tb', 'b3', 2);
SELECT ok, retry_after FROM rl_limit('tb', 'b3');
SELECT * FROM rl_refund('tb', 'b3', 5);
SELECT ok, remaining FROM rl_limit('tb', 'b3');

-- fixed window (windows on the hour): blocked at 04:10 for 30 minutes is
-- refused until 05:00, the first window start at or after 04:40
SET ratelimit.now_override = '2026-01-01 04:10:00+00';
SELECT * FROM rl_block('fw', 'b', '30 minutes');
SELECT * FROM rl_limit('fw', 'b');
SET ratelimit.now_override = '2026-01-01 04:59:59.999999+00';
SELECT ok FROM rl_limit('fw', 'b');
SET ratelimit.now_override = '2026-01-01 05:00:00+00';
SELECT ok, remaining FROM rl_limit('fw', 'b');
-- ending exactly on a window start: refused until it (06:00) ...
SET ratelimit.now_override = '2026-01-01 05:10:00+00';
SELECT * FROM rl_block('fw', 'b', '50 minutes');
SELECT ok, retry_after FROM rl_limit('fw', 'b');
-- ... and a microsecond past it: the whole next window (until 07:00)
SELECT * FROM rl_block('fw', 'b', '50 minutes 0.000001 seconds');
SELECT ok, retry_after FROM rl_limit('fw', 'b');
SET ratelimit.now_override = '2026-01-01 06:59:59.999999+00';
SELECT ok FROM rl_limit('fw', 'b');
SET ratelimit.now_override = '2026-01-01 07:00:00+00';
SELECT ok FROM rl_limit('fw', 'b');
-- a count of 3 windows' worth needs three windows after the block
SELECT rl_define('fw15', 'fixed window', 5, '1 hour', capacity => 15, start => '2026-01-01 00:00:00+00');
SELECT * FROM rl_block('fw15', 'b', '10 minutes');
SELECT ok, retry_after FROM rl_limit('fw15', 'b', 15);

------------------------------------------------------------------ shards
-- 4 shards of 5 (5 a minute each); a block blocks every shard
SET ratelimit.now_override = '2026-01-01 08:00:00+00';
SELECT rl_define('g4', 'token bucket', 20, '1 minute', shards => 4);
SELECT * FROM rl_block('g4', 'b', '1 minute');
SELECT shard, value, ts FROM rate_limits WHERE name = 'g4' AND key = 'b' ORDER BY shard;
SELECT r.ok, r.retry_after FROM generate_series(1, 4), LATERAL rl_limit('g4', 'b', 1) r;
-- one token: two shards refilled together from 08:01 for 6 s (one shard
-- alone would need 12 s); two shards' worth (10): two shards for a minute
SELECT ok, retry_after FROM rl_limit('g4', 'b', 10);
SET ratelimit.now_override = '2026-01-01 08:01:05.999999+00';
SELECT ok FROM rl_limit('g4', 'b', 1);
SET ratelimit.now_override = '2026-01-01 08:01:06+00';
SELECT ok FROM rl_limit('g4', 'b', 1);
-- a penalty of 8 takes 2 from each shard
SET ratelimit.now_override = '2026-01-01 09:00:00+00';
SELECT * FROM rl_penalize('g4', 'p', 8);
SELECT shard, round(value::numeric, 9) AS value FROM rate_limits WHERE name = 'g4' AND key = 'p' ORDER BY shard;
-- a refund is spread over the shards, none above its share of 5
UPDATE rate_limits SET value = 0 WHERE name = 'g4' AND key = 'p' AND shard = 0;
UPDATE rate_limits SET value = 4.5 WHERE name = 'g4' AND key = 'p' AND shard = 1;
SELECT * FROM rl_refund('g4', 'p', 6);
SELECT shard, round(value::numeric, 9) AS value FROM rate_limits WHERE name = 'g4' AND key = 'p' ORDER BY shard;
SELECT * FROM rl_refund('g4', 'p', 100);
SELECT shard, round(value::numeric, 9) AS value FROM rate_limits WHERE name = 'g4' AND key = 'p' ORDER BY shard;
-- a sharded refund after a consume in the same transaction
BEGIN;
SELECT ok, remaining FROM rl_limit('g4', 'p', 7);
SELECT value FROM rl_value('g4', 'p');
SELECT value FROM rl_refund('g4', 'p', 7);
COMMIT;

------------------------------------------------------------------ keys and configs
-- every key type, and the NULL (shared) key
SELECT value FROM rl_penalize('tb', 42::bigint, 1);
SELECT value FROM rl_penalize('tb', 42::integer, 1);
SELECT value FROM rl_penalize('tb', 42::smallint, 1);
SELECT value FROM rl_refund('tb', 42, 1);
SELECT value FROM rl_refund('tb', 42::bigint, 1);
SELECT value FROM rl_refund('tb', 42::smallint, 1);
SELECT value FROM rl_refund('tb', '42');
SELECT ts FROM rl_block('tb', 42, '1 second');
SELECT ts FROM rl_block('tb', 42::bigint, '2 seconds');
SELECT ts FROM rl_block('tb', 42::smallint, '3 seconds');
SELECT value FROM rl_penalize('tb', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 1);
SELECT value FROM rl_refund('tb', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid);
SELECT ts FROM rl_block('tb', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '1 second');
SELECT key, value, ts FROM rate_limits WHERE name = 'tb' AND key IN ('42', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') ORDER BY key;
SELECT value FROM rl_penalize('tb', NULL, 4);
SELECT ts FROM rl_block('tb', NULL, '1 second');
SELECT value FROM rl_refund('tb', NULL::text, 1);
-- the longest block: it and the refill after it fit in 1000 years
SELECT * FROM rl_block('tb', 'long', '999 years 365 days');
-- inline config, for a name with no definition
SELECT * FROM rl_penalize('inline', 'k', 3, config => rl_token_bucket(10, '1 minute'));
SELECT * FROM rl_refund('inline', 'k', 1, config => rl_token_bucket(10, '1 minute'));
SELECT * FROM rl_block('inline', 'k', '1 minute', config => rl_token_bucket(10, '1 minute'));
SELECT ok, retry_after FROM rl_limit('inline', 'k', config => rl_token_bucket(10, '1 minute'));

------------------------------------------------------------------ bad input
CREATE TEMP TABLE before AS SELECT name, key, shard, value, ts FROM rate_limits;
SELECT stmt, error_of(stmt) FROM (VALUES
  ($$SELECT rl_refund('tb', 'r', 0)$$),
  ($$SELECT rl_refund('tb', 'r', -1)$$),
  ($$SELECT rl_refund('tb', 'r', 'NaN')$$),
  ($$SELECT rl_refund('tb', 'r', 'Infinity')$$),
  ($$SELECT rl_refund('tb', 'r', 1e16)$$),
  ($$SELECT rl_refund('tb', 'r', NULL)$$),
  ($$SELECT rl_refund(NULL, 'r', 1)$$),
  ($$SELECT rl_refund('', 'r', 1)$$),
  ($$SELECT rl_refund('tb', '', 1)$$),
  ($$SELECT rl_refund('tb', repeat('k', 1025), 1)$$),
  ($$SELECT rl_refund('nosuch', 'r', 1)$$),
  ($$SELECT rl_refund('tb', 'r', 1, config => rl_token_bucket(1, '1 hour'))$$),
  ($$SELECT rl_penalize('tb', 'r', 0)$$),
  ($$SELECT rl_penalize('tb', 'r', 'NaN')$$),
  ($$SELECT rl_penalize('tb', 'r', 1e16)$$),
  ($$SELECT rl_penalize('tb', 'r', 1e15)$$),
  ($$SELECT rl_penalize('nosuch', 'r', 1)$$),
  ($$SELECT rl_block('tb', 'r', '0')$$),
  ($$SELECT rl_block('tb', 'r', '-1 second')$$),
  ($$SELECT rl_block('tb', 'r', NULL)$$),
  ($$SELECT rl_block('tb', 'r', '1001 years')$$),
  ($$SELECT rl_block('tb', 'r', '1000 years')$$),
  ($$SELECT rl_block('nosuch', 'r', '1 hour')$$),
  ($$SELECT rl_block('tb', 'r', '1 hour', config => rl_token_bucket(1, '1 hour'))$$)
) AS t(stmt);
-- a time past the end of the timestamptz range
SET ratelimit.now_override = '294276-12-31 23:00:00+00';
SELECT error_of($$SELECT rl_block('tb', 'r', '2 hours')$$);
SET ratelimit.now_override = '2026-01-01 09:00:00+00';
-- nothing changed
SELECT count(*) AS changed FROM (
  (SELECT name, key, shard, value, ts FROM rate_limits EXCEPT SELECT * FROM before)
  UNION ALL
  (SELECT * FROM before EXCEPT SELECT name, key, shard, value, ts FROM rate_limits)) d;

------------------------------------------------------------------ read-only
BEGIN READ ONLY;
SELECT stmt, error_of(stmt) FROM (VALUES
  ($$SELECT rl_refund('tb', 'r', 1)$$),
  ($$SELECT rl_penalize('tb', 'r', 1)$$),
  ($$SELECT rl_block('tb', 'r', '1 hour')$$),
  ($$SELECT rl_refund('tb', 'no row yet', 1)$$),
  ($$SELECT rl_block('g4', 'b', '1 hour')$$),
  ($$SELECT rl_headers('tb', rl_check('tb', 'r'))$$)
) AS t(stmt);
COMMIT;
SELECT count(*) AS changed FROM (
  (SELECT name, key, shard, value, ts FROM rate_limits EXCEPT SELECT * FROM before)
  UNION ALL
  (SELECT * FROM before EXCEPT SELECT name, key, shard, value, ts FROM rate_limits)) d;

DROP TABLE before;
SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
DELETE FROM rate_limits;
