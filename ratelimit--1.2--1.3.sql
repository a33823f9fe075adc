-- ratelimit 1.2 -> 1.3
\echo Use "ALTER EXTENSION ratelimit UPDATE TO '1.3'" to load this file. \quit

-- A logical-replication apply worker fires row triggers only (TRUNCATE
-- aside), so the changes it applied to rl_definitions never reached the
-- definitions a subscriber's sessions had cached: a row trigger too;
-- ALWAYS, since apply workers run with session_replication_role = replica.
COMMENT ON FUNCTION @extschema@.rl_definitions_changed() IS
	'statement and row trigger on rl_definitions: invalidates the definitions every backend has cached';
CREATE TRIGGER rl_definitions_row_changed
	AFTER INSERT OR UPDATE OR DELETE ON @extschema@.rl_definitions
	FOR EACH ROW EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_definitions_row_changed ON @extschema@.rl_definitions IS
	'keeps the per-backend definition caches fresh, also for changes a logical-replication worker applies';
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_row_changed;
