-- ratelimit 1.2 -> 1.3
\echo Use "ALTER EXTENSION ratelimit UPDATE TO '1.3'" to load this file. \quit

-- Redefinitions of concurrency limits (1.3).  A change to rl_definitions
-- that lowers, drops, renames or changes the kind of a concurrency limit
-- waits, under the name's lock, until every transaction holding its
-- permits has ended, so that the new definition never has more holders
-- than it allows; a name becomes a limit of permits only while no lease of
-- it is held.  rl_define_concurrency and rl_undefine do this themselves;
-- the trigger covers changes made by hand.
CREATE FUNCTION @extschema@.rl_definitions_guard()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rl_definitions_guard'
LANGUAGE C;
COMMENT ON FUNCTION @extschema@.rl_definitions_guard() IS
	'trigger on rl_definitions: a change that lowers, drops or replaces a concurrency limit waits for the transactions holding its permits';
REVOKE ALL ON FUNCTION @extschema@.rl_definitions_guard() FROM PUBLIC;
CREATE TRIGGER rl_definitions_guard
	AFTER INSERT OR UPDATE OR DELETE ON @extschema@.rl_definitions
	FOR EACH ROW EXECUTE FUNCTION @extschema@.rl_definitions_guard();
COMMENT ON TRIGGER rl_definitions_guard ON @extschema@.rl_definitions IS
	'keeps every concurrency limit within its permits across changes to its definition';
CREATE TRIGGER rl_definitions_guard_truncate
	BEFORE TRUNCATE ON @extschema@.rl_definitions
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rl_definitions_guard();
COMMENT ON TRIGGER rl_definitions_guard_truncate ON @extschema@.rl_definitions IS
	'a TRUNCATE drops every concurrency limit: it waits as rl_undefine would for each';
-- ALWAYS, as rl_definitions_changed: a change applied by logical
-- replication waits for the subscriber's own holders.
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_guard;
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_guard_truncate;

COMMENT ON FUNCTION @extschema@.rl_undefine(text) IS
	'drop a named limit and its state; leases still held stay, and count if the name is defined again';
