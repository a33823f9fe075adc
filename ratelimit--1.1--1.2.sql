-- ratelimit 1.1 -> 1.2
\echo Use "ALTER EXTENSION ratelimit UPDATE TO '1.2'" to load this file. \quit

-- The trigger that keeps every backend's definition cache fresh fires
-- ALWAYS: also for changes a logical-replication worker applies, and under
-- session_replication_role = replica (as pg_restore --disable-triggers).
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_changed;

-- per-limit statistics (1.2)
-- Cumulative counters per (database, limit name), kept in shared memory by
-- the library (src/stats.c): statistics, not transactional state.
CREATE FUNCTION @extschema@.rl_stats_rows(
	OUT dbid oid,
	OUT name text,
	OUT calls bigint,
	OUT granted bigint,
	OUT refused bigint,
	OUT errors bigint,
	OUT tokens float8,
	OUT reservations bigint,
	OUT deepest_reservation float8,
	OUT lock_waits bigint,
	OUT lock_wait_time float8,
	OUT both_shards_busy bigint,
	OUT last_refusal timestamptz,
	OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rl_stats_rows'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_stats_rows() IS
	'the counters behind the view rl_stats, one row per (database, limit name) tracked';
REVOKE ALL ON FUNCTION @extschema@.rl_stats_rows() FROM PUBLIC;

-- Not granted to PUBLIC: it lists every limit name of every database.
CREATE VIEW @extschema@.rl_stats AS
SELECT s.dbid,
	d.datname,
	s.name,
	s.calls,
	s.granted,
	s.refused,
	s.errors,
	s.tokens,
	s.reservations,
	s.deepest_reservation,
	s.lock_waits,
	s.lock_wait_time,
	s.both_shards_busy,
	s.last_refusal,
	s.stats_reset
FROM @extschema@.rl_stats_rows() s
LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) s.dbid;
COMMENT ON VIEW @extschema@.rl_stats IS
	'per limit name and database: what consuming calls (rl_limit, rl_limit_all, rl_enforce) did since stats_reset; cumulative, not transactional';
COMMENT ON COLUMN @extschema@.rl_stats.dbid IS 'the database the calls ran in';
COMMENT ON COLUMN @extschema@.rl_stats.datname IS 'its name';
COMMENT ON COLUMN @extschema@.rl_stats.name IS 'the limit name';
COMMENT ON COLUMN @extschema@.rl_stats.calls IS 'consuming calls counted: granted + refused + errors';
COMMENT ON COLUMN @extschema@.rl_stats.granted IS 'calls granted (in a refused rl_limit_all, a limit that would have granted)';
COMMENT ON COLUMN @extschema@.rl_stats.refused IS 'calls refused, returned as ok = false or raised as RL001';
COMMENT ON COLUMN @extschema@.rl_stats.errors IS 'calls that raised another error once their limit was known: an impossible count, a lock or statement timeout, a serialization failure, a cancel';
COMMENT ON COLUMN @extschema@.rl_stats.tokens IS 'tokens granted calls took, reservations included';
COMMENT ON COLUMN @extschema@.rl_stats.reservations IS 'granted calls that reserved: took the value below zero, and were told when to run';
COMMENT ON COLUMN @extschema@.rl_stats.deepest_reservation IS 'the most tokens below zero a granted reservation left (0 if none)';
COMMENT ON COLUMN @extschema@.rl_stats.lock_waits IS 'times a call found its row locked by another transaction and waited';
COMMENT ON COLUMN @extschema@.rl_stats.lock_wait_time IS 'milliseconds spent in those waits, timed-out waits included';
COMMENT ON COLUMN @extschema@.rl_stats.both_shards_busy IS 'times a sharded call found both shards it picked locked, and so waited for one';
COMMENT ON COLUMN @extschema@.rl_stats.last_refusal IS 'the time of the latest refusal (the limiter''s clock); NULL if none';
COMMENT ON COLUMN @extschema@.rl_stats.stats_reset IS 'since when this row counts: its first call, or rl_stats_reset(name)';
REVOKE ALL ON @extschema@.rl_stats FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_stats_info_row(
	OUT storage text,
	OUT max_names integer,
	OUT names integer,
	OUT untracked_calls bigint,
	OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'rl_stats_info'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_stats_info_row() IS
	'the row of the view rl_stats_info';
REVOKE ALL ON FUNCTION @extschema@.rl_stats_info_row() FROM PUBLIC;

CREATE VIEW @extschema@.rl_stats_info AS
SELECT storage, max_names, names, untracked_calls, stats_reset
FROM @extschema@.rl_stats_info_row();
COMMENT ON VIEW @extschema@.rl_stats_info IS
	'where rl_stats is kept, how many names it tracks out of how many it may, and the calls it could not track';
COMMENT ON COLUMN @extschema@.rl_stats_info.storage IS '''shared memory'' (preloaded), ''dsm registry'' (PostgreSQL 17+, not preloaded) or ''unavailable'' (15 and 16, not preloaded)';
COMMENT ON COLUMN @extschema@.rl_stats_info.max_names IS 'the most (database, name) rows rl_stats holds: ratelimit.stats_max_names when the table was created';
COMMENT ON COLUMN @extschema@.rl_stats_info.names IS 'rows rl_stats holds now';
COMMENT ON COLUMN @extschema@.rl_stats_info.untracked_calls IS 'calls on names that found rl_stats full, counted nowhere else';
COMMENT ON COLUMN @extschema@.rl_stats_info.stats_reset IS 'when the table was last emptied by rl_stats_reset(), or created';
REVOKE ALL ON @extschema@.rl_stats_info FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_stats_reset(name text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_stats_reset'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_stats_reset(text) IS
	'zero the statistics of one limit name in this database; with NULL, forget every row of rl_stats (every database)';
REVOKE ALL ON FUNCTION @extschema@.rl_stats_reset(text) FROM PUBLIC;
