/*
 * ratelimit_router.sql: route ratelimit's functions across partition
 * databases with PL/Proxy.
 *
 * Run it with psql on the proxy database (which does NOT have ratelimit
 * installed), in the schema the partitions installed ratelimit in
 * (default public).  Every partition database has ratelimit.  The cluster
 * is the PL/Proxy SQL/MED server named ratelimit, with a power-of-two
 * number of partitions:
 *
 *   CREATE SERVER ratelimit FOREIGN DATA WRAPPER plproxy
 *     OPTIONS (p0 'host=10.0.0.1 dbname=app', p1 'host=10.0.0.2 dbname=app', ...);
 *   CREATE USER MAPPING FOR PUBLIC SERVER ratelimit OPTIONS (user 'app');
 *
 * rl_limit (with its wait and partial), rl_check, rl_value, rl_reset and
 * rl_settle have the extension's signatures and return types, and run on
 * the partition chosen by a hash of the key's text form (of the name, for
 * the NULL key), so 42 and '42' still name one key.  An inet key is hashed
 * as the text the extension stores it as, its host address ('10.1.2.3',
 * not inet's text '10.1.2.3/32'), so it is one key with that text.
 * rl_define, rl_undefine, rl_override, rl_unoverride, rl_allow, rl_deny,
 * rl_unlist and rl_gc run on every partition and return a row per
 * partition.  The policy constructors run on any partition.
 *
 * A limit used through the router must not have ipv4_prefix or
 * ipv6_prefix (this rl_define refuses them): a partition would count an
 * address key in its network's state, but the network's other addresses
 * hash to other partitions, and each would grant the network its whole
 * limit.
 *
 * The transaction contract differs from the extension's: each routed call
 * commits on its partition at once, whatever the caller's transaction does
 * later.  A rollback on the proxy does not return the tokens.
 */

CREATE EXTENSION IF NOT EXISTS plproxy;

-- The extension's types, so that the proxy's signatures match.
CREATE TYPE rl_policy AS (
	kind text,
	rate float8,
	period interval,
	capacity float8,
	max_reserved float8,
	shards integer,
	start timestamptz,
	storage text,
	time_zone text
);
COMMENT ON TYPE rl_policy IS
	'a rate limit policy for inline use (routed: same as ratelimit''s rl_policy)';

CREATE TYPE rl_result AS (
	ok boolean,
	retry_after interval,
	remaining float8,
	reset_after interval,
	capacity float8,
	allowed boolean,
	retry_after_ms bigint,
	reset_after_ms bigint,
	granted float8
);
COMMENT ON TYPE rl_result IS
	'the answer of rl_limit and rl_check (routed: same as ratelimit''s rl_result, every column in its order)';

CREATE TYPE rl_state AS (
	value float8,
	ts timestamptz
);
COMMENT ON TYPE rl_state IS
	'the two numbers of a limit, brought forward to now (routed: same as ratelimit''s rl_state)';

-- The partition a key lives on: a hash of its text form, of the name for
-- the NULL key.  Every routed function uses this, and nothing else.
CREATE FUNCTION rl_route(name text, key text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.hashtext(COALESCE(key, name));
COMMENT ON FUNCTION rl_route(text, text) IS
	'the PL/Proxy hash of a (name, key): the key''s text form, or the name for the NULL key';

-- Per-key functions, one overload per key type, as in the extension.
DO $do$
DECLARE
	t text;
	key_default text;
	key_text text;
BEGIN
	FOREACH t IN ARRAY ARRAY['text', 'bigint', 'integer', 'smallint', 'uuid', 'inet'] LOOP
		key_default := CASE WHEN t = 'text' THEN ' DEFAULT NULL' ELSE '' END;
		-- the text the extension stores the key as
		key_text := CASE WHEN t = 'inet' THEN 'pg_catalog.host(key)' ELSE 'key::text' END;
		EXECUTE format($f$
			CREATE FUNCTION rl_limit(name text, key %1$s%2$s,
				count float8 DEFAULT 1, reserve boolean DEFAULT false,
				throws boolean DEFAULT false, config rl_policy DEFAULT NULL,
				jitter boolean DEFAULT false, wait interval DEFAULT NULL,
				partial boolean DEFAULT false)
			RETURNS rl_result LANGUAGE plproxy AS $b$
				CLUSTER 'ratelimit';
				RUN ON rl_route(name, %3$s);
			$b$;
			COMMENT ON FUNCTION rl_limit(text, %1$s, float8, boolean, boolean, rl_policy, boolean, interval, boolean) IS
				'routed to the key''s partition: consume count tokens there, committed at once (a rollback here does not return them); wait: the partition sleeps until granted when retry_after is at most wait; partial: take what the key holds when less than count (granted says how much)';
			CREATE FUNCTION rl_check(name text, key %1$s%2$s,
				count float8 DEFAULT 1, reserve boolean DEFAULT false,
				throws boolean DEFAULT false, config rl_policy DEFAULT NULL,
				jitter boolean DEFAULT false)
			RETURNS rl_result LANGUAGE plproxy AS $b$
				CLUSTER 'ratelimit';
				RUN ON rl_route(name, %3$s);
			$b$;
			COMMENT ON FUNCTION rl_check(text, %1$s, float8, boolean, boolean, rl_policy, boolean) IS
				'routed to the key''s partition: what rl_limit would answer, consuming nothing';
			CREATE FUNCTION rl_value(name text, key %1$s%2$s,
				config rl_policy DEFAULT NULL)
			RETURNS rl_state LANGUAGE plproxy AS $b$
				CLUSTER 'ratelimit';
				RUN ON rl_route(name, %3$s);
			$b$;
			COMMENT ON FUNCTION rl_value(text, %1$s, rl_policy) IS
				'routed to the key''s partition: the tokens a limit holds now';
			CREATE FUNCTION rl_reset(name text, key %1$s%2$s,
				config rl_policy DEFAULT NULL)
			RETURNS void LANGUAGE plproxy AS $b$
				CLUSTER 'ratelimit';
				RUN ON rl_route(name, %3$s);
			$b$;
			COMMENT ON FUNCTION rl_reset(text, %1$s, rl_policy) IS
				'routed to the key''s partition: forget the key''s state there; config: its state under that inline policy';
			CREATE FUNCTION rl_settle(name text, key %1$s,
				estimated float8, actual float8, config rl_policy DEFAULT NULL,
				OUT value float8, OUT ts timestamptz, OUT unsettled float8)
			LANGUAGE plproxy AS $b$
				CLUSTER 'ratelimit';
				RUN ON rl_route(name, %3$s);
			$b$;
			COMMENT ON FUNCTION rl_settle(text, %1$s, float8, float8, rl_policy) IS
				'routed to the key''s partition: charge a call admitted on estimated its actual cost there, committed at once; the key''s state and what max_debt left unsettled';
		$f$, t, key_default, key_text);
	END LOOP;
END
$do$;

-- Administration: on every partition, a row per partition.  rl_define
-- has the extension's signature but refuses a prefix on the proxy, so
-- rl_define_each, which passes the rest, has none.
CREATE FUNCTION rl_define_each(name text, kind text, rate float8,
	period interval, capacity float8, max_reserved float8, shards integer,
	start timestamptz, storage text, time_zone text, shadow boolean,
	block_for interval, block_factor float8, block_max interval,
	block_horizon interval, max_debt float8)
RETURNS SETOF boolean LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ALL;
	SELECT true AS rl_define_each FROM rl_define(name, kind, rate, period, capacity, max_reserved, shards, start, storage, time_zone, shadow, block_for, block_factor, block_max, block_horizon, NULL::integer, NULL::integer, max_debt);
$$;
COMMENT ON FUNCTION rl_define_each(text, text, float8, interval, float8, float8, integer, timestamptz, text, text, boolean, interval, float8, interval, interval, float8) IS
	'rl_define on every partition, without a prefix; call rl_define';

CREATE FUNCTION rl_define(name text, kind text, rate float8, period interval,
	capacity float8 DEFAULT NULL, max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1, start timestamptz DEFAULT NULL,
	storage text DEFAULT 'table', time_zone text DEFAULT NULL,
	shadow boolean DEFAULT false, block_for interval DEFAULT NULL,
	block_factor float8 DEFAULT NULL, block_max interval DEFAULT NULL,
	block_horizon interval DEFAULT NULL, ipv4_prefix integer DEFAULT NULL,
	ipv6_prefix integer DEFAULT NULL, max_debt float8 DEFAULT NULL)
RETURNS SETOF boolean LANGUAGE plpgsql AS $$
BEGIN
	IF ipv4_prefix IS NOT NULL OR ipv6_prefix IS NOT NULL THEN
		RAISE EXCEPTION 'the router cannot route a limit with ipv4_prefix or ipv6_prefix'
			USING ERRCODE = 'feature_not_supported',
			DETAIL = 'A partition would count an address in its network''s state, but the network''s other addresses hash to other partitions.',
			HINT = 'Define the limit without a prefix, or call it on a single database.';
	END IF;
	RETURN QUERY SELECT * FROM rl_define_each(name, kind, rate, period,
		capacity, max_reserved, shards, start, storage, time_zone, shadow,
		block_for, block_factor, block_max, block_horizon, max_debt);
END
$$;
COMMENT ON FUNCTION rl_define(text, text, float8, interval, float8, float8, integer, timestamptz, text, text, boolean, interval, float8, interval, interval, integer, integer, float8) IS
	'create or replace a named rate limit on every partition (storage ''table'' or ''memory'': each partition keeps its own keys'' state); a row per partition; ipv4_prefix and ipv6_prefix are refused';

CREATE FUNCTION rl_undefine(name text)
RETURNS SETOF boolean LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ALL;
	SELECT true AS rl_undefine FROM rl_undefine(name);
$$;
COMMENT ON FUNCTION rl_undefine(text) IS
	'drop a named rate limit and its state on every partition; a row per partition';

-- An override lives on every partition, as a definition does: the key's
-- partition is the one that reads it, and it stays right when changing
-- the partition count moves the key.
CREATE FUNCTION rl_override(name text, key text, rate float8,
	period interval DEFAULT NULL, capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL, time_zone text DEFAULT NULL)
RETURNS SETOF boolean LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ALL;
	SELECT true AS rl_override FROM rl_override(name, key, rate, period, capacity, max_reserved, time_zone);
$$;
COMMENT ON FUNCTION rl_override(text, text, float8, interval, float8, float8, text) IS
	'create or replace the override of one key of a named rate limit on every partition; a row per partition';

CREATE FUNCTION rl_unoverride(name text, key text)
RETURNS SETOF boolean LANGUAGE plproxy STRICT AS $$
	CLUSTER 'ratelimit';
	RUN ON ALL;
$$;
COMMENT ON FUNCTION rl_unoverride(text, text) IS
	'drop the override of one key on every partition; a row per partition, false where it had none';

-- Allow and deny lists live on every partition, as definitions do: an
-- address's partition is the one that judges it.
CREATE FUNCTION rl_allow(name text, net cidr, expires timestamptz DEFAULT NULL,
	note text DEFAULT NULL)
RETURNS SETOF boolean LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ALL;
	SELECT true AS rl_allow FROM rl_allow(name, net, expires, note);
$$;
COMMENT ON FUNCTION rl_allow(text, cidr, timestamptz, text) IS
	'allow a network of a named rate limit on every partition until expires (NULL: for ever); a row per partition';

CREATE FUNCTION rl_deny(name text, net cidr, expires timestamptz DEFAULT NULL,
	note text DEFAULT NULL)
RETURNS SETOF boolean LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ALL;
	SELECT true AS rl_deny FROM rl_deny(name, net, expires, note);
$$;
COMMENT ON FUNCTION rl_deny(text, cidr, timestamptz, text) IS
	'deny a network of a named rate limit on every partition until expires (NULL: for ever); a row per partition';

CREATE FUNCTION rl_unlist(name text, net cidr)
RETURNS SETOF boolean LANGUAGE plproxy STRICT AS $$
	CLUSTER 'ratelimit';
	RUN ON ALL;
$$;
COMMENT ON FUNCTION rl_unlist(text, cidr) IS
	'drop the allow and the deny entry of a network on every partition; a row per partition, false where it had none';

CREATE FUNCTION rl_gc(max_rows integer DEFAULT 10000)
RETURNS SETOF bigint LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ALL;
$$;
COMMENT ON FUNCTION rl_gc(integer) IS
	'delete up to max_rows idle state rows on each partition; a count per partition';

-- Pure constructors: any partition computes the same value.
CREATE FUNCTION rl_token_bucket(rate float8, period interval,
	capacity float8 DEFAULT NULL, max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1, storage text DEFAULT 'table')
RETURNS rl_policy LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ANY;
$$;
COMMENT ON FUNCTION rl_token_bucket(float8, interval, float8, float8, integer, text) IS
	'an inline token bucket policy, checked by a partition';

CREATE FUNCTION rl_fixed_window(rate float8, period interval,
	capacity float8 DEFAULT NULL, max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1, start timestamptz DEFAULT NULL,
	storage text DEFAULT 'table', time_zone text DEFAULT NULL)
RETURNS rl_policy LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ANY;
$$;
COMMENT ON FUNCTION rl_fixed_window(float8, interval, float8, float8, integer, timestamptz, text, text) IS
	'an inline fixed window policy, checked by a partition';

CREATE FUNCTION rl_sliding_window(rate float8, period interval,
	start timestamptz DEFAULT NULL, storage text DEFAULT 'table')
RETURNS rl_policy LANGUAGE plproxy AS $$
	CLUSTER 'ratelimit';
	RUN ON ANY;
$$;
COMMENT ON FUNCTION rl_sliding_window(float8, interval, timestamptz, text) IS
	'an inline sliding window policy, checked by a partition';

-- As in the extension: applications consume, check and read; the
-- administrative functions stay with the owner until granted.
REVOKE ALL ON FUNCTION rl_define(text, text, float8, interval, float8, float8, integer, timestamptz, text, text, boolean, interval, float8, interval, interval, integer, integer, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_define_each(text, text, float8, interval, float8, float8, integer, timestamptz, text, text, boolean, interval, float8, interval, interval, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_undefine(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_override(text, text, float8, interval, float8, float8, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_unoverride(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_allow(text, cidr, timestamptz, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_deny(text, cidr, timestamptz, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_unlist(text, cidr) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_gc(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_reset(text, text, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_reset(text, bigint, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_reset(text, integer, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_reset(text, smallint, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_reset(text, uuid, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_reset(text, inet, rl_policy) FROM PUBLIC;
-- As rl_refund in the extension: a settlement can give tokens back.
REVOKE ALL ON FUNCTION rl_settle(text, text, float8, float8, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_settle(text, bigint, float8, float8, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_settle(text, integer, float8, float8, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_settle(text, smallint, float8, float8, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_settle(text, uuid, float8, float8, rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION rl_settle(text, inet, float8, float8, rl_policy) FROM PUBLIC;
