-- Consumption is part of the caller's transaction.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('tx', 'token bucket', 3, '1 hour');

-- a rollback returns the tokens, a new key included
BEGIN;
SELECT ok, remaining FROM rl_limit('tx', 'k', 3);
SELECT count(*) FROM rate_limits WHERE name = 'tx';
ROLLBACK;
SELECT count(*) FROM rate_limits WHERE name = 'tx';
SELECT * FROM rl_value('tx', 'k');

-- a commit keeps them
BEGIN;
SELECT ok, remaining FROM rl_limit('tx', 'k', 2);
COMMIT;
SELECT value FROM rate_limits WHERE name = 'tx';

-- a rollback to a savepoint returns what was consumed after it
SELECT rl_reset('tx', 'k');
BEGIN;
SELECT ok, remaining FROM rl_limit('tx', 'k');
SAVEPOINT s;
SELECT ok, remaining FROM rl_limit('tx', 'k');
SELECT ok, remaining FROM rl_limit('tx', 'k');
ROLLBACK TO SAVEPOINT s;
SELECT * FROM rl_value('tx', 'k');
COMMIT;
SELECT value FROM rate_limits WHERE name = 'tx';

-- an error later in the transaction undoes the consumption too
SELECT rl_reset('tx', 'k');
BEGIN;
SELECT ok FROM rl_limit('tx', 'k', 3);
SELECT 1 / 0;
ROLLBACK;
SELECT * FROM rl_value('tx', 'k');

-- a throwing call aborts the transaction: the other limit's tokens return
SELECT rl_define('tx_other', 'token bucket', 5, '1 hour');
SELECT ok FROM rl_limit('tx', 'k', 3);
BEGIN;
SELECT ok FROM rl_limit('tx_other', 'k', 5);
SELECT ok FROM rl_limit('tx', 'k', throws => true);
COMMIT;
SELECT * FROM rl_value('tx_other', 'k');

-- inside a function, and in a trigger on the caller's table
CREATE TABLE messages (user_id int, body text);
CREATE FUNCTION limit_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM rl_limit('tx_other', NEW.user_id, throws => true);
  RETURN NEW;
END
$$;
CREATE TRIGGER limit_messages BEFORE INSERT ON messages
  FOR EACH ROW EXECUTE FUNCTION limit_messages();
INSERT INTO messages SELECT 7, 'hi' FROM generate_series(1, 5);
INSERT INTO messages VALUES (7, 'one too many');
SELECT count(*) FROM messages;
-- a multi-row insert that runs out rolls back whole
INSERT INTO messages SELECT 8, 'hi' FROM generate_series(1, 6);
SELECT count(*) FROM messages WHERE user_id = 8;
SELECT * FROM rl_value('tx_other', 8);

-- rl_check and rl_value write nothing
SELECT count(*) AS rows_before FROM rate_limits \gset
SELECT ok FROM rl_check('tx', 'fresh');
SELECT * FROM rl_value('tx', 'fresh2');
SELECT count(*) = :rows_before AS nothing_written FROM rate_limits;

DROP TABLE messages;
DROP FUNCTION limit_messages();
SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
