-- PREPARE TRANSACTION in a session that has used the memory store.
-- sql/memory.sql has the transactions it refuses (those that hold a
-- memory-store change, which need no prepared transactions to be refused);
-- this is the one that succeeds, so it needs max_prepared_transactions > 0,
-- and make installcheck leaves it out on a server without (Makefile).
SET ratelimit.now_override = '2026-01-01 06:00:00+00';
SELECT rl_define('mem_prep', 'token bucket', 3, '1 minute', storage => 'memory');
SELECT ok FROM rl_limit('mem_prep', 'k');
-- a transaction that holds no memory-store change prepares: a trigger
-- disabled on a table of the application's, a table of the same name as
-- rl_definitions dropped in another schema
CREATE TABLE prep_app (id int);
CREATE TRIGGER prep_app_same BEFORE UPDATE ON prep_app
  FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();
CREATE SCHEMA prep_other;
CREATE TABLE prep_other.rl_definitions (name text);
BEGIN;
ALTER TABLE prep_app DISABLE TRIGGER prep_app_same;
PREPARE TRANSACTION 'mem_prep_trigger';
COMMIT PREPARED 'mem_prep_trigger';
BEGIN;
DROP TABLE prep_other.rl_definitions;
PREPARE TRANSACTION 'mem_prep_drop';
COMMIT PREPARED 'mem_prep_drop';
SELECT tgenabled FROM pg_trigger WHERE tgname = 'prep_app_same';
SELECT to_regclass('prep_other.rl_definitions');
DROP TABLE prep_app;
DROP SCHEMA prep_other;
SELECT rl_undefine('mem_prep');
RESET ratelimit.now_override;
