-- The first call for a key inserts its row as INSERT ... ON CONFLICT (name,
-- key, shard) DO NOTHING inserts it: on the direct path by speculative
-- insertion, or through that statement when the direct path cannot serve
-- the table.  Both paths (make test runs this suite with
-- ratelimit.direct_access on and off) write the same rows and index
-- entries, count the same statistics and raise the same errors, whatever
-- indexes and triggers the table carries.
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('nk', 'token bucket', 10, '1 minute');
SELECT rl_define('nk4', 'token bucket', 40, '1 minute', shards => 4);
CREATE EXTENSION amcheck;
-- every index of rate_limits holds exactly the table's rows
CREATE FUNCTION nk_indexes_ok() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	PERFORM bt_index_check(indexrelid, heapallindexed => true)
	FROM pg_index WHERE indrelid = 'rate_limits'::regclass;
	RETURN true;
END
$$;

-- each new row counts as one insert, as INSERT counts it; a call on an
-- existing row as one update; a refused call as nothing
BEGIN;
SELECT count(*) FILTER (WHERE ok) AS granted
FROM generate_series(1, 5) AS k, rl_limit('nk', k);
SELECT pg_stat_get_xact_tuples_inserted('rate_limits'::regclass) AS inserted,
       pg_stat_get_xact_tuples_updated('rate_limits'::regclass) AS updated;
SELECT count(*) FILTER (WHERE ok) AS granted
FROM generate_series(1, 5) AS k, rl_limit('nk', k);
SELECT ok FROM rl_limit('nk', 1, 10);	-- refused
SELECT pg_stat_get_xact_tuples_inserted('rate_limits'::regclass) AS inserted,
       pg_stat_get_xact_tuples_updated('rate_limits'::regclass) AS updated;
COMMIT;
SELECT key, shard, value, ts FROM rate_limits WHERE name = 'nk' ORDER BY key;

-- a sharded limit creates, full, each shard it tries that has none
SELECT ok, remaining FROM rl_limit('nk4', 'a', 10);
SELECT count(*) AS shard_rows, sum(value) AS tokens
FROM rate_limits WHERE name = 'nk4' AND key = 'a';

-- a key created inside a savepoint that rolls back is gone; created
-- again, it starts from a full bucket
BEGIN;
SAVEPOINT sp;
SELECT ok, remaining FROM rl_limit('nk', 'sp');
ROLLBACK TO SAVEPOINT sp;
SELECT count(*) AS rows_after_rollback FROM rate_limits WHERE key = 'sp';
SELECT ok, remaining FROM rl_limit('nk', 'sp');
SELECT ok, remaining FROM rl_limit('nk', 'sp');
COMMIT;
SELECT value FROM rate_limits WHERE name = 'nk' AND key = 'sp';

-- under REPEATABLE READ the transaction sees the row it created
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT ok, remaining FROM rl_limit('nk', 'rr');
SELECT ok, remaining FROM rl_limit('nk', 'rr');
COMMIT;
SELECT nk_indexes_ok();

\set SHOW_CONTEXT never
-- another unique index, not an arbiter (one key per name starting with
-- "nk"): a violation raises 23505, as INSERT does, and writes nothing.
-- (The SQL path reports the statement as its context: not shown.)
CREATE UNIQUE INDEX nk_one_name_per_key ON rate_limits (key)
  WHERE name LIKE 'nk%';
SELECT ok, remaining FROM rl_limit('nkb', 'dup', config => rl_token_bucket(10, '1 minute'));
SELECT ok, remaining FROM rl_limit('nk', 'dup');
SELECT count(*) AS nk_dup_rows FROM rate_limits WHERE name = 'nk' AND key = 'dup';
SELECT ok, remaining FROM rl_limit('nk', 'fine');
DROP INDEX nk_one_name_per_key;

-- a unique index on an expression, evaluated for the new row
CREATE UNIQUE INDEX nk_case_blind ON rate_limits (lower(key))
  WHERE name = 'nk';
SELECT ok, remaining FROM rl_limit('nk', 'MiXeD');
SELECT ok, remaining FROM rl_limit('nk', 'mixed');
SELECT ok, remaining FROM rl_limit('nk', 'MiXeD');
DROP INDEX nk_case_blind;

-- a second unique index on (name, key, shard), in another order, is an
-- arbiter as well; a plain index gets its entry
CREATE UNIQUE INDEX nk_same_columns ON rate_limits (shard, key, name);
CREATE INDEX nk_by_ts ON rate_limits (ts);
SELECT ok, remaining FROM rl_limit('nk', 'two_arbiters');
SELECT ok, remaining FROM rl_limit('nk', 'two_arbiters');
SELECT ok, remaining FROM rl_limit('nk4', 'b', 10);
SELECT nk_indexes_ok();
DROP INDEX nk_same_columns;
DROP INDEX nk_by_ts;

-- a unique index on the same columns whose equality is coarser (a
-- case-insensitive collation) is not an arbiter: it finds 'Bob' for 'bob'
-- where the primary key finds nothing, so as an arbiter it would make a
-- call retry until it gave up (55P03).  As an ordinary unique index it
-- raises 23505 at once, as INSERT does, and writes nothing.  So does one
-- with another operator family.
CREATE COLLATION nk_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE UNIQUE INDEX nk_case_insensitive ON rate_limits (name, key COLLATE nk_ci, shard);
SELECT ok, remaining FROM rl_limit('nk', 'Bob');
SELECT error_of($$SELECT rl_limit('nk', 'bob')$$);
SELECT key, value FROM rate_limits WHERE name = 'nk' AND lower(key) = 'bob' ORDER BY key;
SELECT ok, remaining FROM rl_limit('nk', 'Bob');
DROP INDEX nk_case_insensitive;
CREATE UNIQUE INDEX nk_pattern ON rate_limits (name text_pattern_ops, key, shard);
SELECT ok, remaining FROM rl_limit('nk', 'pattern');
SELECT ok, remaining FROM rl_limit('nk', 'pattern');
SELECT nk_indexes_ok();
DROP INDEX nk_pattern;
DROP COLLATION nk_ci;
\set SHOW_CONTEXT errors

-- a trigger on the table: the call runs the INSERT statement, which fires
-- it (the direct path would not)
CREATE TABLE nk_log (name text, key text, value float8);
CREATE FUNCTION nk_log_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO nk_log VALUES (new.name, new.key, new.value);
	RETURN NULL;
END
$$;
CREATE TRIGGER nk_log_inserts AFTER INSERT ON rate_limits
  FOR EACH ROW EXECUTE FUNCTION nk_log_insert();
SELECT ok, remaining FROM rl_limit('nk', 'logged');
SELECT ok, remaining FROM rl_limit('nk', 'logged');
SELECT * FROM nk_log;
DROP TRIGGER nk_log_inserts ON rate_limits;
SELECT ok, remaining FROM rl_limit('nk', 'unlogged');
SELECT count(*) AS log_rows FROM nk_log;
SELECT nk_indexes_ok();

DROP TABLE nk_log;
DROP FUNCTION nk_log_insert();
DROP FUNCTION nk_indexes_ok();
DROP EXTENSION amcheck;
SELECT rl_undefine('nk');
SELECT rl_undefine('nk4');
SELECT rl_reset('nkb', 'dup');
