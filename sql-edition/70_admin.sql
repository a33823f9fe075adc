-- Administration: definitions, written rarely.

-- rl_define: create or replace a named rate limit; the state it keeps is
-- kept.  A rate limit never replaces a concurrency limit of the same name
-- (its state would mean nothing to it).
CREATE FUNCTION rl_define(
	name text,
	kind text,
	rate float8,
	period interval,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1,
	start timestamptz DEFAULT NULL,
	storage text DEFAULT 'table',
	time_zone text DEFAULT NULL,
	shadow boolean DEFAULT false,
	block_for interval DEFAULT NULL,
	block_factor float8 DEFAULT NULL,
	block_max interval DEFAULT NULL,
	block_horizon interval DEFAULT NULL,
	ipv4_prefix integer DEFAULT NULL,
	ipv6_prefix integer DEFAULT NULL,
	max_debt float8 DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
	n integer;
	opts rl_definitions;
BEGIN
	PERFORM _rl_check_name_key(name, NULL::text);
	IF kind IN ('concurrency', 'concurrency lease') THEN
		RAISE EXCEPTION 'rl_define() defines rate limits, not concurrency limits'
			USING ERRCODE = 'invalid_parameter_value',
			HINT = 'Define a concurrency limit with rl_define_concurrency().';
	END IF;
	IF capacity IS NULL THEN
		capacity := rate;
	END IF;
	storage := COALESCE(storage, 'table');
	opts.shadow := shadow;
	opts.block_for := block_for;
	opts.block_factor := block_factor;
	opts.block_max := block_max;
	opts.block_horizon := block_horizon;
	opts.max_debt := max_debt;
	PERFORM _rl_definition_debt(opts, _rl_definition_options(opts, _rl_policy_of(kind,
		rate, period, capacity, max_reserved, shards, start, storage, time_zone)));
	IF ipv4_prefix IS NOT NULL OR ipv6_prefix IS NOT NULL THEN
		RAISE EXCEPTION 'address prefixes are not in the SQL edition of ratelimit yet'
			USING ERRCODE = 'feature_not_supported',
			HINT = 'Define the limit without them, or use the C edition.';
	END IF;
	PERFORM _rl_require_writable('rl_define()');
	INSERT INTO rl_definitions AS d (name, kind, rate, period, capacity,
		max_reserved, shards, start, storage, time_zone, shadow, block_for,
		block_factor, block_max, block_horizon, max_debt)
	VALUES (rl_define.name, rl_define.kind, rl_define.rate, rl_define.period,
		rl_define.capacity, rl_define.max_reserved, rl_define.shards,
		rl_define.start, rl_define.storage, rl_define.time_zone,
		COALESCE(rl_define.shadow, false), rl_define.block_for,
		rl_define.block_factor, rl_define.block_max, rl_define.block_horizon,
		rl_define.max_debt)
	ON CONFLICT ON CONSTRAINT rl_definitions_pkey DO UPDATE SET kind = excluded.kind,
		rate = excluded.rate, period = excluded.period,
		capacity = excluded.capacity, max_reserved = excluded.max_reserved,
		shards = excluded.shards, start = excluded.start,
		storage = excluded.storage, time_zone = excluded.time_zone,
		shadow = excluded.shadow, block_for = excluded.block_for,
		block_factor = excluded.block_factor, block_max = excluded.block_max,
		block_horizon = excluded.block_horizon,
		ipv4_prefix = excluded.ipv4_prefix, ipv6_prefix = excluded.ipv6_prefix,
		max_debt = excluded.max_debt
	WHERE d.kind = excluded.kind
		OR NOT (d.kind = ANY ('{concurrency,concurrency lease}'::text[])
			OR excluded.kind = ANY ('{concurrency,concurrency lease}'::text[]));
	GET DIAGNOSTICS n = ROW_COUNT;
	IF n = 0 THEN
		RAISE EXCEPTION 'rate limit "%" is already defined as another form of limit', name
			USING ERRCODE = 'wrong_object_type',
			DETAIL = 'A rate limit cannot become a concurrency limit, nor a concurrency limit switch between permits and leases, under the same name.',
			HINT = 'Drop it with rl_undefine() first, or use another name.';
	END IF;
END
$$;
COMMENT ON FUNCTION rl_define(text, text, float8, interval, float8, float8, integer, timestamptz, text, text, boolean, interval, float8, interval, interval, integer, integer, float8) IS
	'create or replace a named rate limit; max_debt: admit on a positive balance, and let a call or rl_settle take the key down to -max_debt; the state of the store it keeps is kept';

-- rl_undefine: drop a named limit and its state.
CREATE FUNCTION rl_undefine(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
	PERFORM _rl_check_name_key(name, NULL::text);
	PERFORM _rl_require_writable('rl_undefine()');
	PERFORM _rl_concurrency_undefine(rl_undefine.name);
	DELETE FROM ONLY rl_definitions d WHERE d.name = rl_undefine.name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'rate limit "%" does not exist', name
			USING ERRCODE = 'undefined_object';
	END IF;
	DELETE FROM ONLY rate_limits r WHERE r.name = rl_undefine.name;
	-- its overrides and plans (the assignments first: they refer to plans)
	DELETE FROM ONLY rl_overrides o WHERE o.name = rl_undefine.name;
	DELETE FROM ONLY rl_plans p WHERE p.name = rl_undefine.name;
	DELETE FROM ONLY rl_moves m WHERE m.name = rl_undefine.name;
END
$$;
COMMENT ON FUNCTION rl_undefine(text) IS
	'drop a named limit and its state';
