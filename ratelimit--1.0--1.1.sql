/* ratelimit--1.0--1.1.sql: idle-key cleanup, the rl_status view, live state in dumps */

\echo Use "ALTER EXTENSION ratelimit UPDATE TO '1.1'" to load this file. \quit

-- Idle-key cleanup.  Administrative: not granted to PUBLIC.
CREATE FUNCTION @extschema@.rl_gc(max_rows integer DEFAULT 10000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'rl_gc'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_gc(integer) IS
	'delete up to max_rows state rows that have refilled to full (indistinguishable from no row), skipping locked rows; returns how many';
REVOKE ALL ON FUNCTION @extschema@.rl_gc(integer) FROM PUBLIC;

-- One stored row brought forward to now; the computing half of rl_status.
CREATE FUNCTION @extschema@.rl_status_row(
	config @extschema@.rl_policy,
	name text,
	key text,
	stored_value float8,
	stored_ts timestamptz,
	OUT value float8,
	OUT ts timestamptz,
	OUT remaining float8,
	OUT reset_after interval,
	OUT idle boolean)
AS 'MODULE_PATHNAME', 'rl_status_row'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION @extschema@.rl_status_row(@extschema@.rl_policy, text, text, float8, timestamptz) IS
	'one state row (stored key, '''' for NULL) brought forward to now under a policy; used by the view rl_status';
REVOKE ALL ON FUNCTION @extschema@.rl_status_row(@extschema@.rl_policy, text, text, float8, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_status_row(@extschema@.rl_policy, text, text, float8, timestamptz) TO PUBLIC;

-- Monitoring.  Reads without locking; not granted to PUBLIC, since it
-- lists every key (user ids, addresses) the limiter has seen.
CREATE VIEW @extschema@.rl_status AS
SELECT s.name,
	NULLIF(s.key, '') AS key,
	s.shard,
	d.kind,
	d.rate,
	d.period,
	d.capacity,
	d.shards,
	n.value,
	n.ts,
	n.remaining,
	n.reset_after,
	n.idle,
	s.value AS stored_value,
	s.ts AS stored_ts
FROM @extschema@.rate_limits s
LEFT JOIN @extschema@.rl_definitions d ON d.name OPERATOR(pg_catalog.=) s.name
LEFT JOIN LATERAL @extschema@.rl_status_row(
	CASE WHEN d.name IS NOT NULL THEN
		ROW(d.kind, d.rate, d.period, d.capacity, d.max_reserved, d.shards,
			d.start)::@extschema@.rl_policy
	END,
	s.name, s.key, s.value, s.ts) n ON true;
COMMENT ON VIEW @extschema@.rl_status IS
	'every stored (name, key, shard) with its definition and its state brought forward to now; locks nothing';
COMMENT ON COLUMN @extschema@.rl_status.key IS 'the key; NULL for the limit shared by the whole name';
COMMENT ON COLUMN @extschema@.rl_status.shard IS 'the shard, 0 for an unsharded limit';
COMMENT ON COLUMN @extschema@.rl_status.capacity IS 'the whole limit''s capacity (a shard holds capacity / shards)';
COMMENT ON COLUMN @extschema@.rl_status.value IS 'tokens now (negative while a reservation is outstanding); NULL when the name has no definition';
COMMENT ON COLUMN @extschema@.rl_status.ts IS 'the time value is counted at';
COMMENT ON COLUMN @extschema@.rl_status.remaining IS 'tokens a call could take now without reserving';
COMMENT ON COLUMN @extschema@.rl_status.reset_after IS 'token bucket: until full again; fixed window: until the next window';
COMMENT ON COLUMN @extschema@.rl_status.idle IS 'full, so rl_gc would delete the row without changing any answer';
COMMENT ON COLUMN @extschema@.rl_status.stored_value IS 'value as stored in rate_limits';
COMMENT ON COLUMN @extschema@.rl_status.stored_ts IS 'ts as stored in rate_limits';
REVOKE ALL ON @extschema@.rl_status FROM PUBLIC;

-- Every change to rl_definitions tells each backend to drop the
-- definitions it has cached.
CREATE FUNCTION @extschema@.rl_definitions_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rl_definitions_changed'
LANGUAGE C;
COMMENT ON FUNCTION @extschema@.rl_definitions_changed() IS
	'statement trigger on rl_definitions: invalidates the definitions every backend has cached';
REVOKE ALL ON FUNCTION @extschema@.rl_definitions_changed() FROM PUBLIC;
CREATE TRIGGER rl_definitions_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.rl_definitions
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_definitions_changed ON @extschema@.rl_definitions IS
	'keeps the per-backend definition caches fresh';

-- Live state is data: pg_dump saves it with the definitions, so a
-- restore does not hand everyone a full bucket (or a fresh daily quota).
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rate_limits', '');
