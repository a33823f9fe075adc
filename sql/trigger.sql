-- rl_enforce(): a limit enforced by a row trigger.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('msgs', 'token bucket', 3, '1 minute');
SELECT rl_define('other', 'token bucket', 10, '1 minute');
CREATE TABLE messages (user_id int, body text, cost int);
CREATE TRIGGER limit_messages BEFORE INSERT ON messages
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('msgs', 'user_id');

INSERT INTO messages VALUES (1, 'a'), (1, 'b'), (1, 'c');
INSERT INTO messages VALUES (1, 'one too many');
SELECT count(*) FROM messages;
-- the failed insert rolls back the transaction's other consumption
BEGIN;
SELECT ok FROM rl_limit('other', 'x', 4);
INSERT INTO messages VALUES (1, 'refused again');
ROLLBACK;
SELECT (rl_value('other', 'x')).value AS other_untouched;
-- a statement inserting many rows: all of it or none of it
INSERT INTO messages SELECT 2, 'bulk ' || n FROM generate_series(1, 5) AS n;
SELECT count(*) AS user_2_rows, (SELECT value FROM rl_value('msgs', 2)) AS user_2_tokens
FROM messages WHERE user_id = 2;
INSERT INTO messages SELECT 2, 'bulk ' || n FROM generate_series(1, 3) AS n;
SELECT count(*) AS user_2_rows FROM messages WHERE user_id = 2;
-- a NULL key column consumes from the limit shared by the whole name
INSERT INTO messages VALUES (NULL, 'anonymous');
SELECT (rl_value('msgs')).value AS shared_limit;

-- a count column, and a constant count
CREATE TABLE jobs (account text, cost int);
CREATE TRIGGER limit_jobs BEFORE INSERT ON jobs
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('other', 'account', 'cost');
INSERT INTO jobs VALUES ('acme', 4), ('acme', 5);
SELECT (rl_value('other', 'acme')).value AS acme_tokens;
INSERT INTO jobs VALUES ('acme', 2);
INSERT INTO jobs VALUES ('acme', NULL);
CREATE TRIGGER limit_jobs_flat BEFORE UPDATE ON jobs
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('other', 'account', '0.5');
UPDATE jobs SET cost = cost + 1 WHERE cost = 4;
SELECT (rl_value('other', 'acme')).value AS after_update;
-- an UPDATE that moves the row to another key charges the new key
UPDATE jobs SET account = 'globex' WHERE cost = 5;
SELECT (rl_value('other', 'acme')).value AS acme_unchanged,
       (rl_value('other', 'globex')).value AS globex_charged;

-- mistakes are clear errors at first use
CREATE TABLE typo (user_id int);
CREATE TRIGGER t BEFORE INSERT ON typo
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('msgs', 'userid');
INSERT INTO typo VALUES (1);
DROP TRIGGER t ON typo;
CREATE TRIGGER t BEFORE INSERT ON typo
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('msgs');
INSERT INTO typo VALUES (1);
DROP TRIGGER t ON typo;
CREATE TRIGGER t BEFORE INSERT ON typo
  FOR EACH STATEMENT EXECUTE FUNCTION rl_enforce('msgs', 'user_id');
INSERT INTO typo VALUES (1);
DROP TRIGGER t ON typo;
CREATE TRIGGER t BEFORE INSERT ON typo
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('undefined limit', 'user_id');
INSERT INTO typo VALUES (1);
DROP TRIGGER t ON typo;
-- a count argument that is not wholly a number names a column
CREATE TRIGGER t BEFORE INSERT ON typo
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('msgs', 'user_id', '2x');
INSERT INTO typo VALUES (1);
SELECT count(*) AS typo_rows FROM typo;

DROP TABLE messages, jobs, typo;
SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;

-- A bad count, constant or from a column, is refused as rl_limit refuses
-- it (same SQLSTATE, same message), and the statement changes nothing.
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('counted', 'token bucket', 10, '1 hour');
SELECT ok FROM rl_limit('counted', 'u', 1);
CREATE TABLE counted (user_id text, n float8);
CREATE TABLE bad_counts (c text);
INSERT INTO bad_counts VALUES ('NaN'), ('-1'), ('0'), ('1e16'), ('Infinity'), ('11');
-- the count as a constant trigger argument
CREATE FUNCTION enforce_constant(c text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE result text;
BEGIN
  EXECUTE format('CREATE TRIGGER c BEFORE INSERT ON counted FOR EACH ROW
                  EXECUTE FUNCTION rl_enforce(%L, %L, %L)', 'counted', 'user_id', c);
  result := error_of($q$INSERT INTO counted VALUES ('u', 1)$q$);
  DROP TRIGGER c ON counted;
  RETURN result;
END $$;
SELECT c, enforce_constant(c) AS trigger_error,
       enforce_constant(c) = error_of(format('SELECT rl_limit(%L, %L, %L)', 'counted', 'u', c)) AS as_rl_limit
FROM bad_counts;
-- the count from a numeric column
CREATE TRIGGER c BEFORE INSERT ON counted
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('counted', 'user_id', 'n');
SELECT c, error_of(format('INSERT INTO counted VALUES (%L, %L)', 'u', c)) AS trigger_error,
       error_of(format('INSERT INTO counted VALUES (%L, %L)', 'u', c))
         = error_of(format('SELECT rl_limit(%L, %L, %L)', 'counted', 'u', c)) AS as_rl_limit
FROM bad_counts;
-- nothing was inserted or consumed
SELECT count(*) AS rows_inserted FROM counted;
SELECT value FROM rl_value('counted', 'u');
DROP TABLE counted, bad_counts;
DROP FUNCTION enforce_constant(text);
SELECT rl_undefine('counted');
------------------------------------------------------------------ partitions
-- An UPDATE that moves a row to another partition counts once.  PostgreSQL
-- runs it as a DELETE from the old partition and an INSERT into the new
-- one: a trigger BEFORE INSERT OR UPDATE fires BEFORE UPDATE on the old
-- and BEFORE INSERT on the new.  Both stores, two limits on one table.
SELECT rl_define('moves', 'token bucket', 3, '1 hour');
SELECT rl_define('moves_mem', 'token bucket', 3, '1 hour', storage => 'memory');
CREATE TABLE moves (user_id text, region text, n int) PARTITION BY LIST (region);
CREATE TABLE moves_eu PARTITION OF moves FOR VALUES IN ('eu');
CREATE TABLE moves_us PARTITION OF moves FOR VALUES IN ('us');
CREATE TRIGGER limit_moves BEFORE INSERT OR UPDATE ON moves
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('moves', 'user_id');
CREATE TRIGGER limit_moves_mem BEFORE INSERT OR UPDATE ON moves
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('moves_mem', 'user_id');
INSERT INTO moves VALUES ('u', 'eu', 1);
UPDATE moves SET region = 'us';
SELECT tableoid::regclass, * FROM moves;
SELECT (SELECT value FROM rl_value('moves', 'u')) AS table_store,
       (SELECT value FROM rl_value('moves_mem', 'u')) AS memory_store;
-- an update that stays in its partition counts once too; then the limit
-- refuses a move, which changes nothing
UPDATE moves SET n = 2;
SELECT error_of($$UPDATE moves SET region = 'eu'$$);
SELECT tableoid::regclass, * FROM moves;
SELECT (SELECT value FROM rl_value('moves', 'u')) AS table_store,
       (SELECT value FROM rl_value('moves_mem', 'u')) AS memory_store;
-- several rows moved by one statement, each counted once, under its key;
-- the key the moved row has in its new partition is the one charged
INSERT INTO moves VALUES ('v', 'eu', 1), ('w', 'eu', 1);
UPDATE moves SET region = 'us', user_id = user_id || '2' WHERE user_id IN ('v', 'w');
SELECT k, (SELECT value FROM rl_value('moves', k)) AS table_store,
       (SELECT value FROM rl_value('moves_mem', k)) AS memory_store
FROM unnest(ARRAY['v', 'w', 'v2', 'w2']) AS k;
-- a genuine INSERT after a move, in the same transaction, counts
BEGIN;
UPDATE moves SET region = 'eu' WHERE user_id = 'v2';
INSERT INTO moves VALUES ('v2', 'us', 3);
SELECT (SELECT value FROM rl_value('moves', 'v2')) AS table_store,
       (SELECT value FROM rl_value('moves_mem', 'v2')) AS memory_store;
COMMIT;
-- and in the same statement, a move and an INSERT of the same key: 2
WITH moved AS (UPDATE moves SET region = 'eu' WHERE user_id = 'w2' RETURNING 1)
INSERT INTO moves VALUES ('w2', 'us', 4);
SELECT tableoid::regclass, * FROM moves WHERE user_id = 'w2' ORDER BY n;
SELECT (SELECT value FROM rl_value('moves', 'w2')) AS table_store,
       (SELECT value FROM rl_value('moves_mem', 'w2')) AS memory_store;
DROP TABLE moves;
SELECT rl_undefine('moves'), rl_undefine('moves_mem');
