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
