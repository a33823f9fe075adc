-- ratelimit 1.2 -> 1.3
\echo Use "ALTER EXTENSION ratelimit UPDATE TO '1.3'" to load this file. \quit

-- Inline policies (1.3): each inline policy of a name keeps a state of its
-- own, stored under the name, U+001F and the policy, so that no caller can
-- refill or sink another caller's inline limit by calling its name with
-- another policy.  State that 1.2 stored under the bare name of an inline
-- limit is no longer read; rl_status shows the name and policy of the new
-- rows, and rl_gc cleans them up like the rows of defined limits.
-- The policy in the stored name of a limit used with an inline config:
-- each inline policy of a name keeps a state of its own, stored under the
-- name, U+001F and the policy.
CREATE FUNCTION @extschema@.rl_inline_policy(name text)
RETURNS @extschema@.rl_policy
AS 'MODULE_PATHNAME', 'rl_inline_policy'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.rl_inline_policy(text) IS
	'the inline policy a stored state name carries (name, U+001F, policy); NULL for the name of a defined limit; used by the view rl_status';
REVOKE ALL ON FUNCTION @extschema@.rl_inline_policy(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_inline_policy(text) TO PUBLIC;

CREATE OR REPLACE VIEW @extschema@.rl_status AS
SELECT pg_catalog.split_part(s.name, E'\x1f', 1) AS name,
	NULLIF(s.key, '') AS key,
	s.shard,
	(p.p).kind,
	(p.p).rate,
	(p.p).period,
	(p.p).capacity,
	(p.p).shards,
	n.value,
	n.ts,
	n.remaining,
	n.reset_after,
	n.idle,
	s.value AS stored_value,
	s.ts AS stored_ts,
	(p.p).max_reserved,
	(p.p).start
FROM @extschema@.rate_limits s
LEFT JOIN @extschema@.rl_definitions d ON d.name OPERATOR(pg_catalog.=) s.name
CROSS JOIN LATERAL (SELECT CASE WHEN d.name IS NOT NULL THEN
		ROW(d.kind, d.rate, d.period, d.capacity, d.max_reserved, d.shards,
			d.start)::@extschema@.rl_policy
	ELSE @extschema@.rl_inline_policy(s.name)
	END AS p) p
LEFT JOIN LATERAL @extschema@.rl_status_row(p.p, s.name, s.key, s.value, s.ts) n ON true;
COMMENT ON COLUMN @extschema@.rl_status.value IS 'tokens now (negative while a reservation is outstanding); NULL for a row with no known policy (a name used with an inline config before 1.3)';
COMMENT ON COLUMN @extschema@.rl_status.name IS 'the limit''s name; the rows of each inline policy used with it are told apart by the policy columns';
COMMENT ON COLUMN @extschema@.rl_status.max_reserved IS 'how far below zero reservations may go; NULL for no bound of its own';
COMMENT ON COLUMN @extschema@.rl_status.start IS 'fixed window: a window start given with the policy; NULL for a phase derived from the name and key';

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
