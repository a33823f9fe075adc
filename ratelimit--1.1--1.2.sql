-- ratelimit 1.1 -> 1.2
\echo Use "ALTER EXTENSION ratelimit UPDATE TO '1.2'" to load this file. \quit

-- The trigger that keeps every backend's definition cache fresh fires
-- ALWAYS: also for changes a logical-replication worker applies, and under
-- session_replication_role = replica (as pg_restore --disable-triggers).
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_changed;
