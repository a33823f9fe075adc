-- ratelimit 1.1 -> 1.2
\echo Use "ALTER EXTENSION ratelimit UPDATE TO '1.2'" to load this file. \quit

-- The trigger that keeps every backend's definition cache fresh fires
-- ALWAYS: also for changes a logical-replication worker applies, and under
-- session_replication_role = replica (as pg_restore --disable-triggers).
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_changed;

-- Refunds, penalties, blocks and HTTP fields (1.2)
--
-- rl_refund gives tokens back, rl_penalize takes them without a check,
-- rl_block refuses every call on a key for a while.  All three write the
-- key's state inside the caller's transaction, like rl_limit.  None is
-- granted to PUBLIC: a refund lets its caller take more than the limit
-- allows, and a penalty or block denies service to any key.  rl_headers
-- only computes, and is granted to PUBLIC like rl_check.
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, text, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, bigint, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key integer,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, integer, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, smallint, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, uuid, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, text, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, bigint, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key integer,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, integer, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, smallint, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, uuid, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key text,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, text, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key bigint,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, bigint, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key integer,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, integer, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key smallint,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, smallint, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key uuid,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, uuid, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_headers(
	name text,
	result @extschema@.rl_result,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'rl_headers'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_headers(text, @extschema@.rl_result, @extschema@.rl_policy) IS
	'the HTTP fields RateLimit-Policy, RateLimit and (when denied) Retry-After for an answer of rl_limit or rl_check on name, as a jsonb object';
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, text, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, bigint, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, integer, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, smallint, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, uuid, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, text, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, bigint, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, integer, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, smallint, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, uuid, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, text, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, bigint, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, integer, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, smallint, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, uuid, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_headers(text, @extschema@.rl_result, @extschema@.rl_policy) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_headers(text, @extschema@.rl_result, @extschema@.rl_policy) TO PUBLIC;
-- concurrency limits (1.2)

-- A concurrency limit is a definition of kind 'concurrency' (permits held
-- until the transaction ends, rl_acquire) or 'concurrency lease' (leases
-- held until released or expired, rl_lease), with its permits in capacity
-- and no rate or period.
ALTER TABLE @extschema@.rl_definitions
	ALTER COLUMN rate DROP NOT NULL,
	ALTER COLUMN period DROP NOT NULL,
	DROP CONSTRAINT rl_definitions_kind_check,
	ADD CONSTRAINT rl_definitions_kind_check CHECK (
		CASE WHEN kind OPERATOR(pg_catalog.=) ANY (ARRAY['concurrency', 'concurrency lease'])
		THEN rate IS NULL AND period IS NULL
			AND shards OPERATOR(pg_catalog.=) 1 AND start IS NULL
			AND capacity OPERATOR(pg_catalog.>=) 1
			AND capacity OPERATOR(pg_catalog.<=) 1000
			AND capacity OPERATOR(pg_catalog.=) pg_catalog.trunc(capacity)
			-- permits lowered: the highest number they had (slots in use)
			AND (max_reserved IS NULL OR (kind OPERATOR(pg_catalog.=) 'concurrency'
				AND max_reserved OPERATOR(pg_catalog.>) capacity
				AND max_reserved OPERATOR(pg_catalog.<=) 1000
				AND max_reserved OPERATOR(pg_catalog.=) pg_catalog.trunc(max_reserved)))
		ELSE kind OPERATOR(pg_catalog.=) ANY (ARRAY['token bucket', 'fixed window'])
			AND rate IS NOT NULL AND period IS NOT NULL
		END);

-- Leases outlive the transaction that took them, so they are rows.  A
-- lease counts while it is neither released nor expired; rl_gc deletes it
-- once it has expired.
CREATE TABLE @extschema@.rl_leases (
	id uuid PRIMARY KEY,
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	permits integer NOT NULL CHECK (permits OPERATOR(pg_catalog.>=) 1),
	acquired timestamptz NOT NULL,
	expires timestamptz NOT NULL,
	released timestamptz
);
CREATE INDEX rl_leases_key ON @extschema@.rl_leases (name, key);
CREATE INDEX rl_leases_expires ON @extschema@.rl_leases (expires);
COMMENT ON TABLE @extschema@.rl_leases IS
	'leases of concurrency limits: permits of (name, key) held from acquired until released or expires; key '''' is the shared NULL key';
REVOKE ALL ON TABLE @extschema@.rl_leases FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rl_leases', '');

CREATE FUNCTION @extschema@.rl_define_concurrency(
	name text,
	permits integer,
	leases boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_define_concurrency'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_define_concurrency(text, integer, boolean) IS
	'create or replace a concurrency limit: at most permits holders per key, taken with rl_acquire (or with rl_lease when leases)';
REVOKE ALL ON FUNCTION @extschema@.rl_define_concurrency(text, integer, boolean) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key text DEFAULT NULL,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, text, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, text, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, text, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key bigint,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, bigint, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, bigint, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, bigint, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key integer,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, integer, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, integer, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, integer, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key smallint,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, smallint, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, smallint, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, smallint, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key uuid,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, uuid, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, uuid, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, uuid, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key text,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, text, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, text, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, text, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key bigint,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, bigint, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, bigint, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, bigint, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key integer,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, integer, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, integer, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, integer, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key smallint,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, smallint, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, smallint, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, smallint, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key uuid,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, uuid, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, uuid, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, uuid, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_release(lease uuid)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_release'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_release(uuid) IS
	'free a lease; true when it was held, false when already released or expired';
REVOKE ALL ON FUNCTION @extschema@.rl_release(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_release(uuid) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_key_hash(key text)
RETURNS oid
AS 'MODULE_PATHNAME', 'rl_key_hash'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.rl_key_hash(text) IS
	'the hash of a name or key (NULL: the NULL key) in the lock tags of rl_acquire''s permits, as pg_locks shows them (classid, objid)';
REVOKE ALL ON FUNCTION @extschema@.rl_key_hash(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_key_hash(text) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_now()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'rl_now'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_now() IS
	'the time ratelimit computes at: ratelimit.now_override when set, else the clock';
REVOKE ALL ON FUNCTION @extschema@.rl_now() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_now() TO PUBLIC;

-- Monitoring.  Not granted to PUBLIC, as rl_status.
CREATE VIEW @extschema@.rl_permits AS
SELECT d.name,
	d.capacity::integer AS permits,
	l.objid AS key_hash,
	pg_catalog.count(*)::integer AS held,
	pg_catalog.array_agg(DISTINCT l.pid) AS pids
FROM pg_catalog.pg_locks l
JOIN @extschema@.rl_definitions d
	ON @extschema@.rl_key_hash(d.name) OPERATOR(pg_catalog.=) l.classid
WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
	AND l.granted
	AND l.objsubid OPERATOR(pg_catalog.>=) 16384
	AND l.objsubid OPERATOR(pg_catalog.<) 17384
	AND l.database OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database
		WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
	AND d.kind OPERATOR(pg_catalog.=) 'concurrency'
GROUP BY d.name, d.capacity, l.objid;
COMMENT ON VIEW @extschema@.rl_permits IS
	'permits of concurrency limits held now by transactions (rl_acquire), per name and key hash, read from pg_locks';
COMMENT ON COLUMN @extschema@.rl_permits.permits IS 'the limit: permits per key';
COMMENT ON COLUMN @extschema@.rl_permits.key_hash IS 'rl_key_hash(key) of the key (pg_locks.objid); rl_key_hash(NULL) for the NULL key';
COMMENT ON COLUMN @extschema@.rl_permits.held IS 'permits held now';
COMMENT ON COLUMN @extschema@.rl_permits.pids IS 'the backends holding them';
REVOKE ALL ON @extschema@.rl_permits FROM PUBLIC;

CREATE VIEW @extschema@.rl_lease_status AS
SELECT l.id AS lease,
	l.name,
	NULLIF(l.key, '') AS key,
	l.permits,
	l.acquired,
	l.expires,
	l.released,
	l.released IS NULL AND l.expires OPERATOR(pg_catalog.>) @extschema@.rl_now() AS held
FROM @extschema@.rl_leases l;
COMMENT ON VIEW @extschema@.rl_lease_status IS
	'every stored lease of a concurrency limit, and whether it holds its permits now';
COMMENT ON COLUMN @extschema@.rl_lease_status.key IS 'the key; NULL for the limit shared by the whole name';
COMMENT ON COLUMN @extschema@.rl_lease_status.released IS 'when rl_release freed it; NULL while not released';
COMMENT ON COLUMN @extschema@.rl_lease_status.held IS 'neither released nor expired: its permits count against the limit';
REVOKE ALL ON @extschema@.rl_lease_status FROM PUBLIC;
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
