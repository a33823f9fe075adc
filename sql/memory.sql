-- The memory store: the same functions with the same meaning, state in
-- shared memory.  A grant takes its tokens at once and a rollback (or a
-- rollback to a savepoint) returns them; refunds, blocks and resets apply
-- at commit; no table is written, so it works in READ ONLY transactions.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('mem', 'token bucket', 3, '1 minute', storage => 'memory');
SELECT rl_define('memfw', 'fixed window', 2, '1 hour', start => '2026-01-01 00:00:00+00', storage => 'memory');
SELECT rl_define('tab', 'token bucket', 3, '1 minute');
SELECT name, kind, capacity, storage FROM rl_definitions WHERE name IN ('mem', 'memfw', 'tab') ORDER BY name;

------------------------------------------------------------------ calls
-- 3 tokens, then refused with the exact wait (20 s a token)
SELECT * FROM rl_limit('mem', 'a');
SELECT * FROM rl_limit('mem', 'a', 2);
SELECT * FROM rl_limit('mem', 'a');
SELECT * FROM rl_check('mem', 'a');
SELECT * FROM rl_value('mem', 'a');
SELECT rl_headers('mem', rl_check('mem', 'a'));
-- no row anywhere: the state is not in the table
SELECT count(*) AS table_rows FROM rate_limits WHERE name = 'mem';
-- 10 s later a half token; 20 s later one
SET ratelimit.now_override = '2026-01-01 00:00:10+00';
SELECT * FROM rl_value('mem', 'a');
SET ratelimit.now_override = '2026-01-01 00:00:20+00';
SELECT ok, remaining FROM rl_limit('mem', 'a');
SELECT ok, retry_after FROM rl_limit('mem', 'a');
-- throws raises RL001, as for a table limit
SELECT rl_limit('mem', 'a', throws => true);
-- another key, and the NULL key, are other entries
SELECT ok, remaining FROM rl_limit('mem', 'b', 3);
SELECT ok, remaining FROM rl_limit('mem', NULL, 1);
SELECT ok, remaining FROM rl_limit('mem', 42::bigint, 1);
-- a fixed window: 2 per hour window
SELECT ok, remaining FROM rl_limit('memfw', 'k');
SELECT ok, remaining FROM rl_limit('memfw', 'k');
SELECT ok, retry_after FROM rl_limit('memfw', 'k');
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT ok, remaining FROM rl_limit('memfw', 'k');
-- reservations go below zero, up to max_reserved
SELECT rl_define('memres', 'token bucket', 1, '1 second', max_reserved => 2, storage => 'memory');
SELECT ok, retry_after, remaining FROM rl_limit('memres', 'k', 3, reserve => true);
SELECT ok, retry_after, remaining FROM rl_limit('memres', 'k', 1, reserve => true);

------------------------------------------------------------------ transactions
SET ratelimit.now_override = '2026-01-01 02:00:00+00';
-- a rollback returns what the transaction took
BEGIN;
SELECT ok, remaining FROM rl_limit('mem', 'tx', 2);
SELECT remaining FROM rl_check('mem', 'tx');
ROLLBACK;
SELECT value FROM rl_value('mem', 'tx');
-- a rollback to a savepoint returns what was taken after it, not before
BEGIN;
SELECT ok, remaining FROM rl_limit('mem', 'tx', 1);
SAVEPOINT s;
SELECT ok, remaining FROM rl_limit('mem', 'tx', 2);
ROLLBACK TO s;
SELECT remaining FROM rl_check('mem', 'tx');
SAVEPOINT s2;
SELECT ok FROM rl_limit('mem', 'tx', 1);
RELEASE s2;
COMMIT;
SELECT value FROM rl_value('mem', 'tx');
-- an error in the transaction returns its tokens too
BEGIN;
SELECT ok, remaining FROM rl_limit('mem', 'err', 3);
SELECT 1 / 0;
ROLLBACK;
SELECT value FROM rl_value('mem', 'err');
-- an exception block is a subtransaction
DO $$
BEGIN
  BEGIN
    PERFORM rl_limit('mem', 'exc', 3);
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN raise_exception THEN
    NULL;
  END;
END $$;
SELECT value FROM rl_value('mem', 'exc');

------------------------------------------------------------------ read-only
-- a memory limit works in a READ ONLY transaction; a table limit raises 25006
BEGIN READ ONLY;
SELECT ok, remaining FROM rl_limit('mem', 'ro');
SELECT ok, remaining FROM rl_limit('mem', 'ro');
SELECT ok, remaining FROM rl_limit('mem', 'ro', config => NULL);
SELECT rl_refund('mem', 'ro', 1) IS NOT NULL AS refund_works;
COMMIT;
SELECT value FROM rl_value('mem', 'ro');
BEGIN READ ONLY;
SELECT error_of($$SELECT rl_limit('tab', 'ro')$$);
ROLLBACK;
BEGIN READ ONLY;
SELECT ok FROM rl_limit('x', 'ro', config => rl_token_bucket(1, '1 hour', storage => 'memory'));
SELECT ok FROM rl_limit('x', 'ro', config => rl_token_bucket(1, '1 hour', storage => 'memory'));
SELECT error_of($$SELECT rl_limit('x', 'ro', config => rl_token_bucket(1, '1 hour'))$$);
COMMIT;

------------------------------------------------------------------ adjustments
SET ratelimit.now_override = '2026-01-01 03:00:00+00';
SELECT ok FROM rl_limit('mem', 'adj', 3);
-- a refund gives its tokens at commit: not before, and not after a rollback
BEGIN;
SELECT * FROM rl_refund('mem', 'adj', 2);
SELECT value FROM rl_value('mem', 'adj');
ROLLBACK;
SELECT value FROM rl_value('mem', 'adj');
BEGIN;
SELECT * FROM rl_refund('mem', 'adj', 2);
COMMIT;
SELECT value FROM rl_value('mem', 'adj');
-- a penalty takes at once, and a rollback returns it
BEGIN;
SELECT * FROM rl_penalize('mem', 'adj', 4);
SELECT value FROM rl_value('mem', 'adj');
ROLLBACK;
SELECT value FROM rl_value('mem', 'adj');
-- a block applies at commit: every call refused until it ends
BEGIN;
SELECT * FROM rl_block('mem', 'blk', '10 minutes');
SELECT ok FROM rl_limit('mem', 'blk');
COMMIT;
SELECT ok, retry_after FROM rl_limit('mem', 'blk');
-- rl_reset forgets the key at commit
BEGIN;
SELECT rl_reset('mem', 'blk');
SELECT ok FROM rl_check('mem', 'blk');
COMMIT;
SELECT ok, remaining FROM rl_check('mem', 'blk');
-- in a READ ONLY transaction too
BEGIN READ ONLY;
SELECT rl_reset('mem', 'adj');
COMMIT;
SELECT value FROM rl_value('mem', 'adj');
-- an inline memory key is reset by passing its config, as rl_limit takes
-- it (the store keeps no key text, so without it there is nothing to
-- find): at commit, not after a rollback, in READ ONLY transactions too
SELECT ok FROM rl_limit('inl', 'k', 3, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT ok FROM rl_limit('inl', 'k', 2, config => rl_token_bucket(2, '1 minute', storage => 'memory'));
SELECT rl_reset('inl', 'k');
SELECT value FROM rl_value('inl', 'k', config => rl_token_bucket(3, '1 minute', storage => 'memory'));
BEGIN;
SELECT rl_reset('inl', 'k', config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT value FROM rl_value('inl', 'k', config => rl_token_bucket(3, '1 minute', storage => 'memory'));
ROLLBACK;
SELECT value FROM rl_value('inl', 'k', config => rl_token_bucket(3, '1 minute', storage => 'memory'));
BEGIN READ ONLY;
SELECT rl_reset('inl', 'k', config => rl_token_bucket(3, '1 minute', capacity => 3, storage => 'memory'));
SELECT value FROM rl_value('inl', 'k', config => rl_token_bucket(3, '1 minute', storage => 'memory'));
COMMIT;
SELECT value FROM rl_value('inl', 'k', config => rl_token_bucket(3, '1 minute', storage => 'memory'));
-- another policy of the name is another entry, kept
SELECT value FROM rl_value('inl', 'k', config => rl_token_bucket(2, '1 minute', storage => 'memory'));
-- every key type, as rl_limit takes it
SELECT ok FROM rl_limit('inl', 7::bigint, 3, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT rl_reset('inl', 7::bigint, rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT value FROM rl_value('inl', 7, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT ok FROM rl_limit('inl', 8, 3, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT rl_reset('inl', 8, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT value FROM rl_value('inl', 8::smallint, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT ok FROM rl_limit('inl', 9::smallint, 3, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT rl_reset('inl', 9::smallint, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT value FROM rl_value('inl', 9::smallint, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT ok FROM rl_limit('inl', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 3, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT rl_reset('inl', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT value FROM rl_value('inl', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT ok FROM rl_limit('inl', NULL::text, 3, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT rl_reset('inl', NULL::text, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
SELECT value FROM rl_value('inl', NULL::text, config => rl_token_bucket(3, '1 minute', storage => 'memory'));
-- a config for a defined name is refused as rl_limit refuses it (42710),
-- and the key keeps its state
SELECT ok FROM rl_limit('mem', 'def', 3);
SELECT error_of($$SELECT rl_reset('mem', 'def', config => rl_token_bucket(3, '1 minute', storage => 'memory'))$$);
SELECT value FROM rl_value('mem', 'def');
-- a NULL config is no config
SELECT rl_reset('mem', 'def', config => NULL);
SELECT value FROM rl_value('mem', 'def');

------------------------------------------------------------------ all or nothing across stores
SET ratelimit.now_override = '2026-01-01 04:00:00+00';
-- the table limit refuses: the memory limit keeps its tokens
SELECT ok FROM rl_limit('tab', 'all', 3);
SELECT * FROM rl_limit_all(ARRAY['mem', 'tab'], ARRAY['all', 'all'], ARRAY[2, 1]);
SELECT value FROM rl_value('mem', 'all');
-- the memory limit refuses: the table row is not written
SELECT ok FROM rl_limit('mem', 'all2', 3);
SELECT * FROM rl_limit_all(ARRAY['mem', 'tab'], ARRAY['all2', 'all2'], ARRAY[1, 1]);
SELECT count(*) AS table_rows FROM rate_limits WHERE name = 'tab' AND key = 'all2';
-- both grant: both taken; a rollback returns both
BEGIN;
SELECT * FROM rl_limit_all(ARRAY['tab', 'mem'], ARRAY['all3', 'all3'], ARRAY[1, 2]);
SELECT (SELECT value FROM rl_value('mem', 'all3')) AS mem, (SELECT value FROM rl_value('tab', 'all3')) AS tab;
ROLLBACK;
SELECT (SELECT value FROM rl_value('mem', 'all3')) AS mem, (SELECT value FROM rl_value('tab', 'all3')) AS tab;
-- a memory limit named twice consumes the sum
SELECT * FROM rl_limit_all(ARRAY['mem', 'mem'], ARRAY['all4', 'all4'], ARRAY[2, 2]);
SELECT * FROM rl_limit_all(ARRAY['mem', 'mem'], ARRAY['all4', 'all4'], ARRAY[1, 2]);
SELECT value FROM rl_value('mem', 'all4');

------------------------------------------------------------------ triggers
CREATE TABLE mem_msgs (user_id text, body text);
CREATE TRIGGER mem_enforce BEFORE INSERT ON mem_msgs
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('mem', 'user_id');
INSERT INTO mem_msgs VALUES ('u', '1'), ('u', '2'), ('u', '3');
INSERT INTO mem_msgs VALUES ('u', '4');
SELECT count(*) FROM mem_msgs;
DROP TABLE mem_msgs;

------------------------------------------------------------------ definitions
-- redefining keeps the state of the store it keeps
SET ratelimit.now_override = '2026-01-01 05:00:00+00';
SELECT ok FROM rl_limit('mem', 'redef', 3);
SELECT rl_define('mem', 'token bucket', 6, '1 minute', storage => 'memory');
SELECT value FROM rl_value('mem', 'redef');
-- switching store: the table keeps its own state (none here: full)
SELECT rl_define('mem', 'token bucket', 6, '1 minute');
SELECT value FROM rl_value('mem', 'redef');
SELECT rl_define('mem', 'token bucket', 6, '1 minute', storage => 'memory');
SELECT value FROM rl_value('mem', 'redef');
-- undefined: gone; defined again, it starts full
SELECT rl_undefine('mem');
SELECT error_of($$SELECT rl_limit('mem', 'redef')$$);
SELECT rl_define('mem', 'token bucket', 6, '1 minute', storage => 'memory');
SELECT value FROM rl_value('mem', 'redef');
-- every inline memory policy of a name keeps its own state
SELECT ok, remaining FROM rl_limit('inl', 'k', 1, config => rl_token_bucket(2, '1 hour', storage => 'memory'));
SELECT ok, remaining FROM rl_limit('inl', 'k', 1, config => rl_token_bucket(5, '1 hour', storage => 'memory'));
SELECT ok, remaining FROM rl_limit('inl', 'k', 1, config => rl_fixed_window(2, '1 hour', storage => 'memory'));
SELECT * FROM rl_fixed_window(2, '1 hour', storage => 'memory');

------------------------------------------------------------------ errors
SELECT stmt, error_of(stmt) FROM (VALUES
  ($$SELECT rl_define('bad', 'token bucket', 1, '1 s', shards => 2, storage => 'memory')$$),
  ($$SELECT rl_define('bad', 'token bucket', 1, '1 s', storage => 'disk')$$),
  ($$SELECT rl_token_bucket(1, '1 s', shards => 4, storage => 'memory')$$),
  ($$SELECT rl_fixed_window(1, '1 s', storage => 'Memory')$$),
  ($$SELECT rl_limit('mem', 'k', 7)$$),
  ($$SELECT rl_limit('inl', 'k', config => ROW('concurrency', NULL, NULL, 2, NULL, 1, NULL, 'memory', NULL)::rl_policy)$$),
  ($$INSERT INTO rl_definitions (name, kind, rate, period, capacity, storage) VALUES ('bad', 'token bucket', 1, '1 s', 1, 'disk')$$)
) AS t(stmt);
-- PREPARE TRANSACTION after a memory call is refused, and returns the tokens
SET ratelimit.now_override = '2026-01-01 06:00:00+00';
BEGIN;
SELECT ok FROM rl_limit('mem', 'prep', 6);
PREPARE TRANSACTION 'mem_prep';
SELECT value FROM rl_value('mem', 'prep');
-- (a transaction that holds no memory-store change prepares: sql/memory_prepared.sql)
-- a trigger of the extension's disabled or enabled is still refused
BEGIN;
ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_row_changed;
PREPARE TRANSACTION 'mem_prep_ext';
-- bad input changes nothing
SELECT value FROM rl_value('mem', 'k');

-- rl_refund returns the state the refund will leave if nothing else
-- happens first, this transaction's earlier refunds included, as the
-- table store's does: 2, then 3
SET ratelimit.now_override = '2026-01-01 07:00:00+00';
SELECT rl_define('refund_t', 'token bucket', 3, '1 hour');
SELECT rl_define('refund_m', 'token bucket', 3, '1 hour', storage => 'memory');
SELECT ok FROM rl_limit('refund_t', 'k', 3);
SELECT ok FROM rl_limit('refund_m', 'k', 3);
BEGIN;
SELECT value FROM rl_refund('refund_t', 'k', 2);
SELECT value FROM rl_refund('refund_t', 'k', 1);
SELECT value FROM rl_refund('refund_m', 'k', 2);
SELECT value FROM rl_refund('refund_m', 'k', 1);
COMMIT;
SELECT value FROM rl_value('refund_m', 'k');
SELECT rl_undefine('refund_t'), rl_undefine('refund_m');

------------------------------------------------------------------ cleanup
-- rl_gc drops idle entries, also those a redefinition left to be judged
-- under the new policy (an entry is otherwise judged by the policy that
-- wrote it)
SET ratelimit.now_override = '2026-01-01 08:00:00+00';
SELECT rl_gc() >= 0 AS swept;
SELECT memory_keys AS baseline FROM rl_stats_info \gset
SELECT rl_define('memgc', 'token bucket', 1, '1 second', storage => 'memory');
SELECT count(*) FILTER (WHERE ok) AS granted FROM generate_series(1, 5) i, rl_limit('memgc', i::text);
SELECT memory_keys - :baseline AS new_entries FROM rl_stats_info;
SELECT rl_define('memgc', 'token bucket', 2, '1 second', storage => 'memory');
SET ratelimit.now_override = '2026-01-01 09:00:00+00';
SELECT rl_gc() >= 5 AS removed_them;
SELECT memory_keys - :baseline AS left_over FROM rl_stats_info;
SELECT rl_undefine('memgc');
-- the memory pass has a budget of its own: table rows that use up
-- max_rows leave it the same max_rows (4 rows and 4 entries go)
SET ratelimit.now_override = '2026-01-01 09:30:00+00';
SELECT rl_gc() >= 0 AS swept;
SELECT memory_keys AS baseline FROM rl_stats_info \gset
SELECT rl_define('gcbudget_t', 'token bucket', 1, '1 second');
SELECT rl_define('gcbudget_m', 'token bucket', 1, '1 second', storage => 'memory');
SELECT count(*) FILTER (WHERE (rl_limit('gcbudget_t', i::text)).ok) AS table_granted,
       count(*) FILTER (WHERE (rl_limit('gcbudget_m', i::text)).ok) AS memory_granted
FROM generate_series(1, 4) i;
SET ratelimit.now_override = '2026-01-01 09:40:00+00';
SELECT rl_gc(4) AS removed;
SELECT memory_keys - :baseline AS left_over FROM rl_stats_info;
SELECT rl_undefine('gcbudget_t'), rl_undefine('gcbudget_m');
-- the memory pass alone works in a READ ONLY transaction (and on a standby)
BEGIN READ ONLY;
SELECT rl_gc_memory() >= 0 AS works_read_only;
SELECT error_of($$SELECT rl_gc()$$);
COMMIT;
SELECT error_of($$SELECT rl_gc_memory(0)$$);
-- rl_gc in a transaction that changed a definition judges nothing under
-- that uncommitted definition: after the rollback the key is still drained
SELECT rl_define('slow', 'token bucket', 10, '1 day', storage => 'memory');
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted FROM generate_series(1, 11);
SET ratelimit.now_override = '2026-01-01 09:00:01+00';
BEGIN;
SELECT rl_define('slow', 'token bucket', 10, '1 millisecond', storage => 'memory');
SELECT rl_gc_memory() >= 0 AS swept;
ROLLBACK;
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted_after_rollback
FROM generate_series(1, 10);
SELECT rl_undefine('slow');
-- rl_gc in a transaction that dropped the extension (and created it again
-- to call rl_gc) does not take the old install's entries for a dropped
-- extension's: after the rollback the key is still drained
SELECT rl_define('slow', 'token bucket', 10, '1 day', storage => 'memory');
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted FROM generate_series(1, 11);
BEGIN;
SET LOCAL client_min_messages = warning;
DROP EXTENSION ratelimit CASCADE;
CREATE SCHEMA rl_other;
CREATE EXTENSION ratelimit SCHEMA rl_other;
SELECT rl_other.rl_gc_memory() >= 0 AS swept;
ROLLBACK;
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted_after_rollback
FROM generate_series(1, 10);
-- a definition deleted and inserted again in one transaction (a sync that
-- replaces rl_definitions) keeps its keys' state, as a table limit's rows
BEGIN;
CREATE TEMP TABLE saved_definitions ON COMMIT DROP AS
  SELECT * FROM rl_definitions WHERE name = 'slow';
DELETE FROM rl_definitions WHERE name = 'slow';
INSERT INTO rl_definitions SELECT * FROM saved_definitions;
COMMIT;
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted_after_delete_insert
FROM generate_series(1, 10);
BEGIN;
CREATE TEMP TABLE saved_definitions ON COMMIT DROP AS SELECT * FROM rl_definitions;
TRUNCATE rl_definitions;
INSERT INTO rl_definitions SELECT * FROM saved_definitions;
COMMIT;
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted_after_truncate_insert
FROM generate_series(1, 10);
-- inserted, then deleted: gone
BEGIN;
DELETE FROM rl_definitions WHERE name = 'slow';
INSERT INTO rl_definitions (name, kind, rate, period, capacity, storage)
  VALUES ('slow', 'token bucket', 10, '1 day', 10, 'memory');
DELETE FROM rl_definitions WHERE name = 'slow';
COMMIT;
SELECT rl_define('slow', 'token bucket', 10, '1 day', storage => 'memory');
SELECT count(*) FILTER (WHERE (rl_limit('slow', 'k')).ok) AS granted_after_undefined
FROM generate_series(1, 11);
SELECT rl_undefine('slow');

------------------------------------------------------------------ observability
-- (where the store lives: shared memory when preloaded, the DSM registry on
-- 17 and later when not: test/t/015_memory_not_preloaded.pl tells them apart)
SELECT memory_storage IN ('shared memory', 'dsm registry') AS has_storage,
       memory_max_keys > 0 AS has_room, memory_keys >= 0 AS counts_keys,
       memory_full_errors, memory_empty_since
FROM rl_stats_info;
SELECT name, calls, granted, refused FROM rl_stats WHERE datname = current_database() AND name IN ('memfw', 'memres') ORDER BY name;
-- rl_status lists rows of the table: a memory limit has none
SELECT count(*) FROM rl_status WHERE name IN ('mem', 'memfw', 'memres');

SELECT rl_undefine(name) FROM unnest(ARRAY['mem', 'memfw', 'memres', 'tab']) AS name;
RESET ratelimit.now_override;
