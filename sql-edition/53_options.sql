-- The options of a defined limit (src/policy.c
-- rl_definition_options_from_values) and what they do to a call
-- (src/limit.c): shadow mode grants what the limit refuses, taking
-- nothing; block_for blocks a refused key, escalated by its offences.

-- option_interval: an interval option in microseconds, 1 us to 100 years.
CREATE FUNCTION _rl_option_interval(v interval, name text)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
	usecs float8 := _rl_interval_usecs(v);
BEGIN
	IF NOT (usecs >= 1::float8 AND usecs <= 3155760000000000::float8) THEN
		RAISE EXCEPTION '% must be between 1 microsecond and 100 years', name
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN pg_catalog.trunc(usecs)::bigint;
END
$$;

-- rl_definition_options_from_values, without the address prefixes and
-- max_debt (_rl_definition_debt): a definition's shadow mode, block_for
-- and escalation, checked, into its policy.  The view rl_status takes
-- these alone (definition_escalation).
CREATE FUNCTION _rl_definition_options(d rl_definitions, p _rl_policy)
RETURNS _rl_policy
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	p.shadow := COALESCE(d.shadow, false);
	p.block_for := 0;
	IF d.block_for IS NOT NULL THEN
		p.block_for := _rl_option_interval(d.block_for, 'block_for');
	END IF;
	IF p.block_for > 0 AND p.shards > 1 THEN
		RAISE EXCEPTION 'a sharded limit cannot have block_for'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = 'Shards serve one hot key, such as a global limit; blocking it would block every caller.',
			HINT = 'Block the keys of a limit without shards, or call rl_block().';
	END IF;
	IF p.kind IN ('concurrency', 'concurrency lease')
			AND (p.shadow OR p.block_for > 0 OR d.block_factor IS NOT NULL) THEN
		RAISE EXCEPTION 'a concurrency limit has no shadow mode and no block_for'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- escalation_from_values
	p.block_factor := 0;
	p.block_max := 3155760000000000;
	p.block_horizon := 86400000000;
	IF d.block_factor IS NULL THEN
		IF d.block_max IS NOT NULL OR d.block_horizon IS NOT NULL THEN
			RAISE EXCEPTION 'block_max and block_horizon need block_factor'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		RETURN p;
	END IF;
	p.block_factor := d.block_factor;
	IF d.block_factor = 'NaN'::float8 OR NOT d.block_factor >= 1::float8
			OR d.block_factor = 'Infinity'::float8 THEN
		RAISE EXCEPTION 'block_factor must be a finite number of at least 1'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF p.block_for <= 0 THEN
		RAISE EXCEPTION 'block_factor needs block_for'
			USING ERRCODE = 'invalid_parameter_value',
			HINT = 'block_for is the first block, which block_factor multiplies for repeated offences.';
	END IF;
	IF p.kind = 'sliding window' THEN
		RAISE EXCEPTION 'a sliding window limit cannot have block_factor'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = 'Its state has no room for an offence score: the third number holds the previous window''s count.';
	END IF;
	IF d.block_max IS NOT NULL THEN
		p.block_max := _rl_option_interval(d.block_max, 'block_max');
	END IF;
	IF p.block_max < p.block_for THEN
		RAISE EXCEPTION 'block_max must not be shorter than block_for'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF d.block_horizon IS NOT NULL THEN
		p.block_horizon := _rl_option_interval(d.block_horizon, 'block_horizon');
	END IF;
	RETURN p;
END
$$;

-- debt_from_values: a definition's max_debt (NULL: none), checked with
-- the policy it changes: a call is admitted on a positive balance and may
-- take the key down to -max_debt.
CREATE FUNCTION _rl_definition_debt(d rl_definitions, p _rl_policy)
RETURNS _rl_policy
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
	problem text;
BEGIN
	p.max_debt := d.max_debt;
	IF p.max_debt IS NOT NULL THEN
		problem := _rl_policy_problem(p);
		IF problem IS NOT NULL THEN
			RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value';
		END IF;
	END IF;
	RETURN p;
END
$$;

-- apply_shadow: a refusal of a limit in shadow mode becomes a grant that
-- takes nothing (nothing was written), keeping the refusal's retry_after.
CREATE FUNCTION _rl_apply_shadow(t _rl_target, d _rl_decision)
RETURNS _rl_decision
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	d.shadowed := false;
	IF NOT d.ok AND COALESCE((t.policy).shadow, false) THEN
		d.ok := true;
		d.shadowed := true;
		d.granted := NULL;
	END IF;
	RETURN d;
END
$$;

-- apply_block: a refused call of a limit with block_for blocks its key
-- from now, in the caller's transaction, for block_for escalated by the
-- key's offences; a key already blocked (read without a lock, and again
-- once its row is held) is left as it is.  The answer then reports the
-- block.
CREATE FUNCTION _rl_apply_block(t _rl_target, key text, count float8,
	reserve boolean, d _rl_decision)
RETURNS _rl_decision
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	origin bigint;
	s _rl_stored;
	o _rl_stored;
	now bigint;
	b _rl_decision;
BEGIN
	IF d.ok OR NOT COALESCE((t.policy).block_for > 0, false) THEN
		RETURN d;
	END IF;
	origin := _rl_origin(t, key);
	-- the state as rl_value reads it, then the time
	s := _rl_read(t.stored, key, false);
	now := _rl_us(_rl_now());
	IF s.ts IS NOT NULL THEN
		o := _rl_refill(t.policy, origin, s, now);
	ELSE
		o := _rl_initial_state(t.policy, origin, now);
	END IF;
	PERFORM _rl_check_state_time(o, now);
	now := _rl_us(_rl_now());
	IF _rl_state_is_blocked(t.policy, origin, o, now) THEN
		RETURN d;
	END IF;
	-- table_adjust's automatic block: hold the row, read the definition again
	s := _rl_hold(t, key);
	t := _rl_reread(t);
	now := _rl_us(_rl_now());
	IF _rl_state_is_blocked(t.policy, origin, s, now) THEN
		o := _rl_refill(t.policy, origin, s, now);
		PERFORM _rl_check_state_time(o, now);
	ELSE
		o := _rl_adjust_state(t.policy, origin, 'block', s, now, 0::float8,
			_rl_escalated_block_for(t.policy, s, now));
		PERFORM _rl_check_state_time(o, now);
		UPDATE ONLY rate_limits r SET value = o.value, ts = _rl_ts(o.ts), prev = o.prev
		WHERE r.name = t.stored AND r.key = COALESCE(_rl_apply_block.key, '') AND r.shard = 0;
	END IF;
	now := _rl_us(_rl_now());
	b := _rl_decide(t.policy, origin, o, now, count, reserve);
	IF b.ok THEN
		RETURN d;
	END IF;
	d.has_retry := b.has_retry;
	d.retry_after := b.retry_after;
	d.remaining := b.remaining;
	d.reset_after := b.reset_after;
	RETURN d;
END
$$;
