-- Read-only transactions: every function that consumes, locks or
-- administers raises SQLSTATE 25006, as the UPDATE it stands for would,
-- whatever its outcome and on either path (make test runs this suite with
-- ratelimit.direct_access on and off); nothing is written.  Reads work.
-- (On a hot standby every transaction is read-only: test/t/005_standby.pl.)
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('ro', 'token bucket', 10, '1 minute');
SELECT rl_define('ro_sharded', 'token bucket', 160, '1 minute', shards => 16);
SELECT ok, remaining FROM rl_limit('ro', 'k', 3);
SELECT ok FROM rl_limit('ro_sharded', 'k', 1);
CREATE TABLE ro_msgs (user_id text);
CREATE TRIGGER ro_enforce BEFORE INSERT ON ro_msgs
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('ro', 'user_id');
CREATE TABLE ro_before AS
  SELECT name, key, shard, value, ts FROM rate_limits;

-- each statement in its own read-only transaction; the SQLSTATE it raised
-- (error_of: sql/define.sql)
BEGIN READ ONLY;
SELECT stmt, error_of(stmt) FROM (VALUES
  ($$SELECT rl_limit('ro', 'k')$$),                -- would be granted
  ($$SELECT rl_limit('ro', 'k', 9)$$),             -- would be refused
  ($$SELECT rl_limit('ro', 'new key')$$),          -- no row yet
  ($$SELECT rl_limit('ro_sharded', 'k')$$),
  ($$SELECT rl_limit('inline', 'k', config => rl_token_bucket(1, '1 hour'))$$),
  ($$SELECT rl_limit_all(ARRAY['ro', 'ro'], ARRAY['k', 'j'], ARRAY[1, 1])$$),
  ($$SELECT rl_reset('ro', 'k')$$),
  ($$SELECT rl_reset('inline', 'k', config => rl_token_bucket(1, '1 hour'))$$),
  ($$SELECT rl_define('ro2', 'token bucket', 1, '1 second')$$),
  ($$SELECT rl_undefine('ro')$$),
  ($$SELECT rl_gc()$$),
  ($$INSERT INTO ro_msgs VALUES ('k')$$)
) AS t(stmt);
-- reads answer as before
SELECT ok, remaining FROM rl_check('ro', 'k', 1);
SELECT value FROM rl_value('ro', 'k');
SELECT key, remaining FROM rl_status WHERE name = 'ro';
COMMIT;

-- default_transaction_read_only, and a SERIALIZABLE READ ONLY DEFERRABLE
-- transaction, are read-only transactions too
SET default_transaction_read_only = on;
SELECT rl_limit('ro', 'k');
RESET default_transaction_read_only;
BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE;
SELECT rl_limit('ro', 'k');
ROLLBACK;

-- nothing was written
SELECT count(*) AS changed FROM (
  (SELECT name, key, shard, value, ts FROM rate_limits
   EXCEPT SELECT * FROM ro_before)
  UNION ALL
  (SELECT * FROM ro_before
   EXCEPT SELECT name, key, shard, value, ts FROM rate_limits)) d;
SELECT name FROM rl_definitions WHERE name LIKE 'ro%' ORDER BY name;

-- and outside it, the same calls work
SELECT ok, remaining FROM rl_limit('ro', 'k');
DROP TABLE ro_msgs, ro_before;
SELECT rl_undefine('ro');
SELECT rl_undefine('ro_sharded');
