-- The per-key functions as the C edition declares them: the same names,
-- argument lists, defaults and result types.  Each key type has its own
-- version, and a non-text key is used as its text form, so 42 and '42'
-- name the same key; only the text version defaults the key.

CREATE FUNCTION rl_limit(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key, count, reserve, throws, config, jitter, wait, true)$$;
COMMENT ON FUNCTION rl_limit(text, text, float8, boolean, boolean, rl_policy, boolean, interval) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them';

CREATE FUNCTION rl_check(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key, count, reserve, throws, config, jitter, NULL, false)$$;
COMMENT ON FUNCTION rl_check(text, text, float8, boolean, boolean, rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION rl_value(
	name text,
	key text DEFAULT NULL,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_value(name, key, config)$$;
COMMENT ON FUNCTION rl_value(text, text, rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION rl_reset(
	name text,
	key text DEFAULT NULL,
	config rl_policy DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$BEGIN PERFORM _rl_reset(name, key, config); END$$;
COMMENT ON FUNCTION rl_reset(text, text, rl_policy) IS
	'forget the state of one key: it starts again from a full bucket; config: the key''s state under that inline policy';

CREATE FUNCTION rl_limit(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key::text, count, reserve, throws, config, jitter, wait, true)$$;
COMMENT ON FUNCTION rl_limit(text, bigint, float8, boolean, boolean, rl_policy, boolean, interval) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them';

CREATE FUNCTION rl_check(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key::text, count, reserve, throws, config, jitter, NULL, false)$$;
COMMENT ON FUNCTION rl_check(text, bigint, float8, boolean, boolean, rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION rl_value(
	name text,
	key bigint,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_value(name, key::text, config)$$;
COMMENT ON FUNCTION rl_value(text, bigint, rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION rl_reset(
	name text,
	key bigint,
	config rl_policy DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$BEGIN PERFORM _rl_reset(name, key::text, config); END$$;
COMMENT ON FUNCTION rl_reset(text, bigint, rl_policy) IS
	'forget the state of one key: it starts again from a full bucket; config: the key''s state under that inline policy';

CREATE FUNCTION rl_limit(
	name text,
	key integer,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key::text, count, reserve, throws, config, jitter, wait, true)$$;
COMMENT ON FUNCTION rl_limit(text, integer, float8, boolean, boolean, rl_policy, boolean, interval) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them';

CREATE FUNCTION rl_check(
	name text,
	key integer,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key::text, count, reserve, throws, config, jitter, NULL, false)$$;
COMMENT ON FUNCTION rl_check(text, integer, float8, boolean, boolean, rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION rl_value(
	name text,
	key integer,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_value(name, key::text, config)$$;
COMMENT ON FUNCTION rl_value(text, integer, rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION rl_reset(
	name text,
	key integer,
	config rl_policy DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$BEGIN PERFORM _rl_reset(name, key::text, config); END$$;
COMMENT ON FUNCTION rl_reset(text, integer, rl_policy) IS
	'forget the state of one key: it starts again from a full bucket; config: the key''s state under that inline policy';

CREATE FUNCTION rl_limit(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key::text, count, reserve, throws, config, jitter, wait, true)$$;
COMMENT ON FUNCTION rl_limit(text, smallint, float8, boolean, boolean, rl_policy, boolean, interval) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them';

CREATE FUNCTION rl_check(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key::text, count, reserve, throws, config, jitter, NULL, false)$$;
COMMENT ON FUNCTION rl_check(text, smallint, float8, boolean, boolean, rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION rl_value(
	name text,
	key smallint,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_value(name, key::text, config)$$;
COMMENT ON FUNCTION rl_value(text, smallint, rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION rl_reset(
	name text,
	key smallint,
	config rl_policy DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$BEGIN PERFORM _rl_reset(name, key::text, config); END$$;
COMMENT ON FUNCTION rl_reset(text, smallint, rl_policy) IS
	'forget the state of one key: it starts again from a full bucket; config: the key''s state under that inline policy';

CREATE FUNCTION rl_limit(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key::text, count, reserve, throws, config, jitter, wait, true)$$;
COMMENT ON FUNCTION rl_limit(text, uuid, float8, boolean, boolean, rl_policy, boolean, interval) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them';

CREATE FUNCTION rl_check(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS rl_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_or_check(name, key::text, count, reserve, throws, config, jitter, NULL, false)$$;
COMMENT ON FUNCTION rl_check(text, uuid, float8, boolean, boolean, rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION rl_value(
	name text,
	key uuid,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_value(name, key::text, config)$$;
COMMENT ON FUNCTION rl_value(text, uuid, rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION rl_reset(
	name text,
	key uuid,
	config rl_policy DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$BEGIN PERFORM _rl_reset(name, key::text, config); END$$;
COMMENT ON FUNCTION rl_reset(text, uuid, rl_policy) IS
	'forget the state of one key: it starts again from a full bucket; config: the key''s state under that inline policy';

-- rl_refund, rl_penalize and rl_block, with the C edition's declarations.
-- None is granted to PUBLIC: a refund lets its caller take more than the
-- limit allows, and a penalty or block denies service to any key.

CREATE FUNCTION rl_refund(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('refund', name, key, count, NULL, config)$$;
COMMENT ON FUNCTION rl_refund(text, text, float8, rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';

CREATE FUNCTION rl_penalize(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('penalize', name, key, count, NULL, config)$$;
COMMENT ON FUNCTION rl_penalize(text, text, float8, rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';

CREATE FUNCTION rl_block(
	name text,
	key text,
	duration interval,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('block', name, key, NULL, duration, config)$$;
COMMENT ON FUNCTION rl_block(text, text, interval, rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';

CREATE FUNCTION rl_refund(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('refund', name, key::text, count, NULL, config)$$;
COMMENT ON FUNCTION rl_refund(text, bigint, float8, rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';

CREATE FUNCTION rl_penalize(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('penalize', name, key::text, count, NULL, config)$$;
COMMENT ON FUNCTION rl_penalize(text, bigint, float8, rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';

CREATE FUNCTION rl_block(
	name text,
	key bigint,
	duration interval,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('block', name, key::text, NULL, duration, config)$$;
COMMENT ON FUNCTION rl_block(text, bigint, interval, rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';

CREATE FUNCTION rl_refund(
	name text,
	key integer,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('refund', name, key::text, count, NULL, config)$$;
COMMENT ON FUNCTION rl_refund(text, integer, float8, rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';

CREATE FUNCTION rl_penalize(
	name text,
	key integer,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('penalize', name, key::text, count, NULL, config)$$;
COMMENT ON FUNCTION rl_penalize(text, integer, float8, rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';

CREATE FUNCTION rl_block(
	name text,
	key integer,
	duration interval,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('block', name, key::text, NULL, duration, config)$$;
COMMENT ON FUNCTION rl_block(text, integer, interval, rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';

CREATE FUNCTION rl_refund(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('refund', name, key::text, count, NULL, config)$$;
COMMENT ON FUNCTION rl_refund(text, smallint, float8, rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';

CREATE FUNCTION rl_penalize(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('penalize', name, key::text, count, NULL, config)$$;
COMMENT ON FUNCTION rl_penalize(text, smallint, float8, rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';

CREATE FUNCTION rl_block(
	name text,
	key smallint,
	duration interval,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('block', name, key::text, NULL, duration, config)$$;
COMMENT ON FUNCTION rl_block(text, smallint, interval, rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';

CREATE FUNCTION rl_refund(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('refund', name, key::text, count, NULL, config)$$;
COMMENT ON FUNCTION rl_refund(text, uuid, float8, rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';

CREATE FUNCTION rl_penalize(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('penalize', name, key::text, count, NULL, config)$$;
COMMENT ON FUNCTION rl_penalize(text, uuid, float8, rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';

CREATE FUNCTION rl_block(
	name text,
	key uuid,
	duration interval,
	config rl_policy DEFAULT NULL)
RETURNS rl_state
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_adjust('block', name, key::text, NULL, duration, config)$$;
COMMENT ON FUNCTION rl_block(text, uuid, interval, rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
