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
SELECT count(*) AS typo_rows FROM typo;

DROP TABLE messages, jobs, typo;
SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
