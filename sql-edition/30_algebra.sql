-- The algebra: pure functions of (policy, origin, state, now), operation
-- for operation those of the C edition's src/algebra.c, in float8 and in
-- integer microseconds, so that both editions give the same answers to
-- the microsecond.  A C double is a float8, an int64_t a bigint; a NaN
-- prev is NULL.  Each function names the C function it follows.
--
-- Bounds (src/algebra.h): RL_MAX_PERIOD 3155760000000000 (100 years),
-- RL_MAX_WAIT 31557600000000000 (1000 years), RL_MAX_AMOUNT 1e15,
-- RL_RESERVE_HORIZON 15778800000000000, RL_MIN_TIME -211813488000000000,
-- RL_END_TIME 9223371331200000000.

-- A policy with its period in microseconds; max_reserved and start NULL
-- when not given.  A defined limit's options follow (NULL for an inline
-- config): shadow mode, block_for and its escalation in microseconds,
-- and max_debt (NULL: none).
CREATE TYPE _rl_policy AS (
	kind text,
	rate float8,
	period bigint,
	capacity float8,
	max_reserved float8,
	shards integer,
	start bigint,
	shadow boolean,
	block_for bigint,
	block_factor float8,
	block_max bigint,
	block_horizon bigint,
	max_debt float8
);

-- The numbers stored per (name, key, shard); ts in microseconds.
CREATE TYPE _rl_stored AS (
	value float8,
	ts bigint,
	prev float8
);

-- A decision (RlDecision): the answer, and the state to store when ok;
-- shadowed: refused, and granted by shadow mode; granted: what a partial
-- call took, NULL for the call's count (RlAnswer).
CREATE TYPE _rl_decision AS (
	ok boolean,
	has_retry boolean,
	retry_after bigint,
	remaining float8,
	reset_after bigint,
	state _rl_stored,
	shadowed boolean,
	granted float8
);

-- rl_check_status: the two ways a decision can fail.
CREATE FUNCTION _rl_fail(status text, now bigint)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF status = 'wait too long' THEN
		RAISE EXCEPTION 'rate limit wait exceeds 1000 years'
			USING ERRCODE = 'numeric_value_out_of_range',
			DETAIL = 'The count is too large for the rate of the limit.';
	END IF;
	RAISE EXCEPTION 'rate limit state would fall outside the timestamp range'
		USING ERRCODE = 'datetime_field_overflow',
		DETAIL = pg_catalog.format('The call is at %s; a window start, retry or reset it needs lies before 4714-11-24 BC or after 294276-12-31.',
			CASE WHEN now >= -211813488000000000 AND now < 9223371331200000000
			THEN _rl_ts(now)::text ELSE 'an invalid time' END);
END
$$;

-- valid_time.  It and the other small LANGUAGE sql helpers of a call's
-- path (_rl_add_before_end, _rl_wait_until, _rl_floor_mod, _rl_elapsed,
-- _rl_ceil_ms) are not STRICT, so that the planner inlines them (it
-- inlines a STRICT function only when its body is strict, which a CASE or
-- an AND is not); each gives NULL for a NULL argument all the same.
CREATE FUNCTION _rl_valid_time(t bigint)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT t >= -211813488000000000 AND t < 9223371331200000000$$;

-- add_before_end: t + d (d >= 0) before RL_END_TIME; NULL when not.
CREATE FUNCTION _rl_add_before_end(t bigint, d bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN t < 9223371331200000000 - d THEN t + d END$$;

-- wait_until: from now until t, 0 when t is not later; NULL when that is
-- more than RL_MAX_WAIT.
CREATE FUNCTION _rl_wait_until(t bigint, now bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN t <= now THEN 0
	WHEN t - 31557600000000000 <= now THEN t - now END$$;

-- _rl_wait_until, failing where it has no answer (RL_WAIT_TOO_LONG).
CREATE FUNCTION _rl_wait_to(t bigint, now bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	w bigint := _rl_wait_until(t, now);
BEGIN
	IF w IS NULL THEN
		PERFORM _rl_fail('wait too long', now);
	END IF;
	RETURN w;
END
$$;

-- floor_mod
CREATE FUNCTION _rl_floor_mod(a bigint, m bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN a % m < 0 THEN a % m + m ELSE a % m END$$;

-- rl_window_start: the start of the window that contains t.
CREATE FUNCTION _rl_window_start(t bigint, origin bigint, period bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
	offs bigint := _rl_floor_mod(t, period) - _rl_floor_mod(origin, period);
BEGIN
	IF offs < 0 THEN
		offs := offs + period;
	END IF;
	IF t < (-9223372036854775807 - 1) + offs THEN
		RETURN -9223372036854775807 - 1;
	END IF;
	RETURN t - offs;
END
$$;

-- rl_window_origin: a time at which one of the limit's windows starts:
-- the start's phase, or the 64-bit FNV-1a hash of (name, 0, 'N' or 'K',
-- key) modulo the period.  The hash runs on two 32-bit halves, hi and lo:
-- its prime is 2^40 + 435, so h * prime = (h << 40) + h * 435, modulo 2^64.
CREATE FUNCTION _rl_window_origin(p _rl_policy, name text, key text)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	enc name := pg_catalog.current_setting('server_encoding');
	bytes bytea;
	hi bigint := 3421674724;	-- 14695981039346656037 >> 32
	lo bigint := 2216829733;	-- 14695981039346656037 & 0xffffffff
	t bigint;
BEGIN
	IF p.start IS NOT NULL THEN
		RETURN _rl_floor_mod(p.start, p.period);
	END IF;
	-- decode, not a '\x00' literal: a body compiles under the caller's
	-- standard_conforming_strings
	bytes := pg_catalog.convert_to(name, enc) || pg_catalog.decode('00', 'hex')
		|| CASE WHEN key IS NULL THEN pg_catalog.decode('4e', 'hex')
			ELSE pg_catalog.decode('4b', 'hex') || pg_catalog.convert_to(key, enc) END;
	FOR i IN 0 .. pg_catalog.length(bytes) - 1 LOOP
		lo := lo # pg_catalog.get_byte(bytes, i)::bigint;
		t := lo * 435;
		hi := (hi * 435 + (t >> 32) + ((lo & 16777215::bigint) << 8)) & 4294967295;
		lo := t & 4294967295;
	END LOOP;
	RETURN ((hi::numeric * 4294967296::numeric + lo::numeric) % p.period::numeric)::bigint;
END
$$;

-- window_of: the start of the window that holds t (windows of a period).
CREATE FUNCTION _rl_window_of(p _rl_policy, origin bigint, t bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT _rl_window_start(t, origin, p.period)$$;

-- rl_reserve_depth: how far below zero reservations may take a key.
CREATE FUNCTION _rl_reserve_depth(p _rl_policy)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	span float8;
BEGIN
	IF p.max_reserved IS NOT NULL THEN
		RETURN p.max_reserved;
	END IF;
	IF p.kind = 'sliding window' THEN
		RETURN 0;
	END IF;
	IF p.kind = 'token bucket' THEN
		span := 15778800000000000::float8 * p.rate / p.period::float8;
	ELSE
		span := (15778800000000000 / p.period)::float8 * p.rate;
	END IF;
	IF span <= p.capacity THEN
		RETURN 0;
	END IF;
	RETURN LEAST(p.capacity, span - p.capacity);
END
$$;

-- amount_in_range: a finite amount within [lo, 1e15] (or (lo, 1e15]).
CREATE FUNCTION _rl_amount_in_range(x float8, lo float8, lo_inclusive boolean)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT x IS NOT NULL AND x <> 'NaN' AND x <> 'Infinity' AND x <> '-Infinity'
	AND x <= 1e15::float8 AND CASE WHEN lo_inclusive THEN x >= lo ELSE x > lo END$$;

-- fill_time: how long an untouched limit takes from its deepest to full.
-- This and _rl_policy_problem are LANGUAGE sql, so that the planner
-- inlines them into the policy check every call makes.
CREATE FUNCTION _rl_fill_time(p _rl_policy)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN p.kind = 'token bucket'
	THEN (p.capacity + COALESCE(p.max_reserved, 0) + COALESCE(p.max_debt, 0)) * p.period::float8 / p.rate
	ELSE pg_catalog.ceil((p.capacity + COALESCE(p.max_reserved, 0) + COALESCE(p.max_debt, 0)) / p.rate) * p.period::float8 END$$;

-- rl_policy_problem (for the kinds with a rate): what is wrong, or NULL.
CREATE FUNCTION _rl_policy_problem(p _rl_policy)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE
	WHEN p.max_debt IS NOT NULL AND p.kind <> 'token bucket' AND p.kind <> 'fixed window'
		THEN 'max_debt applies only to token bucket and fixed window limits'
	WHEN p.max_debt IS NOT NULL AND NOT _rl_amount_in_range(p.max_debt, 0::float8, true)
		THEN 'max_debt must be a finite number between zero and 1e15'
	WHEN p.max_debt IS NOT NULL AND p.max_reserved IS NOT NULL
		THEN 'a limit cannot have both max_debt and max_reserved'
	WHEN p.max_debt IS NOT NULL AND p.shards <> 1
		THEN 'a sharded limit cannot have max_debt'
	WHEN NOT _rl_amount_in_range(p.rate, 0::float8, false)
		THEN 'rate must be a finite number greater than zero and at most 1e15'
	WHEN p.period <= 0 OR p.period > 3155760000000000
		THEN 'period must be greater than zero and at most 100 years'
	WHEN NOT _rl_amount_in_range(p.capacity, 0::float8, true)
		THEN 'capacity must be a finite number between zero and 1e15'
	WHEN p.max_reserved IS NOT NULL AND NOT _rl_amount_in_range(p.max_reserved, 0::float8, true)
		THEN 'max_reserved must be a finite number between zero and 1e15'
	WHEN p.shards < 1 OR p.shards > 1024
		THEN 'shards must be between 1 and 1024'
	WHEN p.start IS NOT NULL AND p.kind <> 'fixed window' AND p.kind <> 'sliding window'
		THEN 'start applies only to fixed and sliding window limits'
	WHEN p.kind = 'sliding window' AND p.capacity <> p.rate
		THEN 'the capacity of a sliding window limit is its rate'
	WHEN p.kind = 'sliding window' AND p.max_reserved IS NOT NULL
		THEN 'a sliding window limit cannot reserve'
	WHEN p.kind = 'sliding window' AND p.shards <> 1
		THEN 'a sliding window limit cannot have shards'
	WHEN _rl_fill_time(p) > 31557600000000000::float8
		THEN 'the limit would take more than 1000 years to refill'
	END$$;

-- rl_count_problem: what is wrong with a count for a valid policy, or NULL.
-- LANGUAGE sql, so that a call's check inlines it: nothing is called when
-- the count is fine.
CREATE FUNCTION _rl_count_problem(p _rl_policy, count float8, reserve boolean)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE
	WHEN NOT _rl_amount_in_range(count, 0::float8, false)
		THEN 'count must be a finite number greater than zero and at most 1e15'
	WHEN p.max_debt IS NOT NULL AND reserve
		THEN 'a limit with max_debt cannot reserve'
	WHEN p.max_debt IS NOT NULL
		THEN CASE WHEN count > p.capacity + p.max_debt
			THEN 'count exceeds the capacity plus max_debt of the limit' END
	WHEN reserve AND p.kind = 'sliding window'
		THEN 'a sliding window limit cannot reserve'
	WHEN p.shards > 1 AND count > 2::float8 * (p.capacity
			+ CASE WHEN reserve THEN _rl_reserve_depth(p) ELSE 0::float8 END) / p.shards::float8
		THEN 'count exceeds what two shards of the limit can hold'
	WHEN NOT reserve AND count > p.capacity
		THEN 'count exceeds the capacity of the limit'
	WHEN reserve AND count > p.capacity + _rl_reserve_depth(p)
		THEN CASE WHEN p.max_reserved IS NOT NULL
			THEN 'count exceeds the capacity plus max_reserved of the limit'
			ELSE 'count exceeds what the limit can reserve without max_reserved' END
	END$$;

-- rl_initial_state: a key never seen before, full, counted from now (token
-- bucket) or from the start of now's window.
CREATE FUNCTION _rl_initial_state(p _rl_policy, origin bigint, now bigint)
RETURNS _rl_stored
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	s _rl_stored;
BEGIN
	IF NOT _rl_valid_time(now) THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	s.value := p.capacity;
	s.ts := CASE WHEN p.kind = 'token bucket' THEN now
		ELSE _rl_window_of(p, origin, now) END;
	s.prev := CASE WHEN p.kind = 'sliding window' THEN 0 END;
	IF NOT _rl_valid_time(s.ts) THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	RETURN s;
END
$$;

-- The exact difference b - a (b > a) of two valid times, as a double.
CREATE FUNCTION _rl_elapsed(b bigint, a bigint)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN a >= 0 OR b <= 9000000000000000000 THEN (b - a)::float8
	ELSE (b::numeric - a::numeric)::float8 END$$;

-- rl_refill: a state brought forward to now without consuming.
CREATE FUNCTION _rl_refill(p _rl_policy, origin bigint, s _rl_stored, now bigint)
RETURNS _rl_stored
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	o _rl_stored := s;
	w_from bigint;
	w_to bigint;
BEGIN
	IF p.kind = 'sliding window' THEN
		-- sliding_refill
		w_from := _rl_window_start(s.ts, origin, p.period);
		w_to := _rl_window_start(now, origin, p.period);
		IF o.prev IS NULL OR o.prev < 0::float8 THEN
			o.prev := p.capacity;
		END IF;
		IF w_to > w_from THEN
			o.prev := CASE WHEN w_to - p.period = w_from
				THEN GREATEST(p.capacity - LEAST(s.value, p.capacity), 0) ELSE 0 END;
			o.value := p.capacity;
			o.ts := w_to;
		END IF;
		o.value := LEAST(o.value, p.capacity);
		RETURN o;
	END IF;
	-- a sliding window's count, left by a redefinition, is not kept
	IF s.prev IS NULL OR NOT s.prev < 0::float8 THEN
		o.prev := NULL;
	END IF;
	IF p.kind = 'token bucket' THEN
		IF now > s.ts THEN
			o.value := s.value + _rl_elapsed(now, s.ts) * p.rate / p.period::float8;
			o.ts := now;
		END IF;
	ELSE
		w_from := _rl_window_start(s.ts, origin, p.period);
		w_to := _rl_window_start(now, origin, p.period);
		IF w_to > w_from THEN
			o.value := s.value + (CASE WHEN w_from >= 0 OR w_to <= 9000000000000000000
					THEN (w_to - w_from) / p.period
					ELSE ((w_to::numeric - w_from::numeric) / p.period::numeric)::bigint END)::float8 * p.rate;
			o.ts := w_to;
		END IF;
	END IF;
	o.value := LEAST(o.value, p.capacity);
	-- the offence score, forgotten up to the new ts
	IF _rl_escalates(p) AND o.ts > s.ts THEN
		o.prev := _rl_score_prev(_rl_offence_score(p, s, o.ts));
	END IF;
	RETURN o;
END
$$;

-- sliding_available: what a sliding window's state, brought forward to t,
-- lets a call take at t.
CREATE FUNCTION _rl_sliding_available(p _rl_policy, s _rl_stored, t bigint)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	prev float8 := s.prev;
	into_ bigint;
BEGIN
	IF prev IS NULL OR prev < 0::float8 THEN
		prev := p.capacity;
	END IF;
	IF NOT prev > 0::float8 THEN
		RETURN s.value;
	END IF;
	IF t <= s.ts THEN
		into_ := 0;
	ELSIF t - p.period >= s.ts THEN
		into_ := p.period;
	ELSE
		into_ := t - s.ts;
	END IF;
	RETURN s.value - prev * ((p.period - into_)::float8 / p.period::float8);
END
$$;

-- rl_available: what a call could take at now from a state left alone.
CREATE FUNCTION _rl_available(p _rl_policy, origin bigint, s _rl_stored, now bigint)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
	IF p.kind = 'sliding window' THEN
		RETURN _rl_sliding_available(p, _rl_refill(p, origin, s, now), now);
	END IF;
	RETURN (_rl_refill(p, origin, s, now)).value;
END
$$;

-- sliding_wait: a bisection for the first microsecond at which
-- rl_available reaches target.
CREATE FUNCTION _rl_sliding_wait(p _rl_policy, origin bigint, s _rl_stored,
	target float8, now bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	lo bigint := now;
	hi bigint;
	mid bigint;
BEGIN
	IF _rl_available(p, origin, s, now) >= target THEN
		RETURN 0;
	END IF;
	hi := _rl_add_before_end(GREATEST(s.ts, now), 2 * p.period);
	IF hi IS NULL THEN
		hi := 9223371331200000000 - 1;
		IF _rl_available(p, origin, s, hi) < target THEN
			PERFORM _rl_fail('time out of range', now);
		END IF;
	ELSIF _rl_available(p, origin, s, hi) < target THEN
		PERFORM _rl_fail('wait too long', now);
	END IF;
	WHILE hi - lo > 1 LOOP
		mid := lo + (hi - lo) / 2;
		IF _rl_available(p, origin, s, mid) >= target THEN
			hi := mid;
		ELSE
			lo := mid;
		END IF;
	END LOOP;
	RETURN _rl_wait_to(hi, now);
END
$$;

-- wait_for: how long from now until the state, left alone, holds at least
-- target tokens: a closed form, confirmed and then narrowed by the refill
-- itself, so rounding never makes a retry at retry_after fail.
CREATE FUNCTION _rl_wait_for(p _rl_policy, origin bigint, s _rl_stored,
	target float8, now bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	missing float8 := target - s.value;
	base bigint;
	step bigint;
	t bigint;
	before bigint;
	ahead bigint;
	guess float8;
	windows float8;
	mid bigint;
BEGIN
	IF p.kind = 'sliding window' THEN
		RETURN _rl_sliding_wait(p, origin, s, target, now);
	END IF;
	IF missing <= 0::float8 THEN
		RETURN 0;
	END IF;
	IF p.kind = 'token bucket' THEN
		base := s.ts;
		step := 1;
		guess := pg_catalog.ceil(_rl_div(missing * p.period::float8, p.rate));
		IF NOT guess <= 31557600000000000::float8 THEN
			PERFORM _rl_fail('wait too long', now);
		END IF;
		ahead := guess::bigint;
	ELSE
		windows := pg_catalog.ceil(_rl_div(missing, p.rate));
		base := _rl_window_start(s.ts, origin, p.period);
		step := p.period;
		IF NOT windows <= (31557600000000000 / p.period)::float8 + 1::float8 THEN
			PERFORM _rl_fail('wait too long', now);
		END IF;
		ahead := windows::bigint * p.period;
	END IF;
	t := COALESCE(_rl_add_before_end(base, ahead), 9223371331200000000 - 1);
	before := base;
	WHILE (_rl_refill(p, origin, s, t)).value < target LOOP
		before := t;
		t := _rl_add_before_end(t, step);
		IF t IS NULL THEN
			PERFORM _rl_fail('time out of range', now);
		END IF;
		IF step < 31557600000000000 THEN
			step := step * 2;
		END IF;
		PERFORM _rl_wait_to(t, now);
	END LOOP;
	step := CASE WHEN p.kind = 'token bucket' THEN 1 ELSE p.period END;
	IF before > t - step THEN
		before := t - step;
	END IF;
	WHILE (t - before) / step > 1 LOOP
		mid := before + ((t - before) / step / 2) * step;
		IF (_rl_refill(p, origin, s, mid)).value >= target THEN
			t := mid;
		ELSE
			before := mid;
		END IF;
	END LOOP;
	RETURN _rl_wait_to(t, now);
END
$$;

-- window_reset: how long from now until the next window starts.
CREATE FUNCTION _rl_window_reset(p _rl_policy, origin bigint, now bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	next_start bigint := _rl_add_before_end(_rl_window_start(now, origin, p.period), p.period);
BEGIN
	IF next_start IS NULL THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	RETURN next_start - now;
END
$$;

-- x / y (x > 0, y > 0) as C divides: 0 where the quotient is below the
-- least float8 (PostgreSQL raises underflow there).  A subnormal x is m
-- times 2^-1074, m a whole number, so the quotient rounds to 0 when 2m <=
-- y.  Under max_debt a refused call's target is the least float8 above
-- zero, and a key at 0 misses just that.
CREATE FUNCTION _rl_div(x float8, y float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN x < 2.2250738585072014e-308::float8
		AND x * pg_catalog.power(2::float8, 537::float8) * pg_catalog.power(2::float8, 537::float8)
			* 2::float8 <= y
	THEN 0::float8 ELSE x / y END$$;

-- x > y ? x : y: of two equal values y, where the sign of a zero
-- matters (GREATEST keeps x).  Not given a NaN.
CREATE FUNCTION _rl_fmax(x float8, y float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN x > y THEN x ELSE y END$$;

-- admission_need: the tokens a key must hold for a call of count to be
-- granted: count, less the depth reservations may go to.  Under
-- max_debt, a positive balance (the least float8 above zero) from which
-- count goes no deeper than -max_debt.  _rl_decide's test and the target
-- of its wait alike.
CREATE FUNCTION _rl_admission_need(p _rl_policy, count float8, reserve boolean)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN p.max_debt IS NOT NULL
	THEN GREATEST(count - p.max_debt, '4.9406564584124654e-324'::float8)
	ELSE count - CASE WHEN reserve THEN _rl_reserve_depth(p) ELSE 0::float8 END END$$;

-- rl_decide (and sliding_decide): a call of count tokens at now against a
-- state (NULL for a key with no stored state).  The policy and count must
-- have passed _rl_policy_problem and _rl_count_problem.
CREATE FUNCTION _rl_decide(p _rl_policy, origin bigint, s _rl_stored, now bigint,
	count float8, reserve boolean)
RETURNS _rl_decision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	cur _rl_stored;
	after _rl_stored;
	d _rl_decision;
	need float8;
	available float8;
BEGIN
	IF NOT _rl_valid_time(now) OR (s.ts IS NOT NULL AND NOT _rl_valid_time(s.ts)) THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	IF s.ts IS NULL THEN
		cur := _rl_initial_state(p, origin, now);
	ELSE
		cur := _rl_refill(p, origin, s, now);
	END IF;
	after := cur;
	after.value := cur.value - count;
	d.state := after;
	d.retry_after := 0;
	IF p.kind = 'sliding window' THEN
		available := _rl_sliding_available(p, cur, now);
		d.ok := available >= count;
		d.has_retry := NOT d.ok;
		IF d.ok THEN
			d.remaining := available - count;
		ELSE
			d.remaining := available;
			d.retry_after := _rl_wait_for(p, origin, CASE WHEN s.ts IS NULL THEN cur ELSE s END, count, now);
		END IF;
		d.reset_after := _rl_wait_for(p, origin,
			CASE WHEN d.ok THEN after ELSE cur END, p.capacity, now);
		RETURN d;
	END IF;
	need := _rl_admission_need(p, count, reserve);
	d.ok := cur.value >= need;
	-- a debt is no reservation (act at once); its bound holds exactly
	-- (-max_debt when equal: under max_debt 0 a key taken to zero holds -0
	-- in the C edition, as built here)
	IF d.ok AND p.max_debt IS NOT NULL THEN
		after.value := _rl_fmax(after.value, -p.max_debt);
		d.state := after;
	END IF;
	d.has_retry := after.value < 0::float8 AND NOT (d.ok AND p.max_debt IS NOT NULL);
	IF d.ok THEN
		d.remaining := after.value;
		IF d.has_retry THEN
			d.retry_after := _rl_wait_for(p, origin, after, 0::float8, now);
		END IF;
	ELSE
		-- nothing is written: a retry refills from the stored state
		d.remaining := cur.value;
		d.retry_after := _rl_wait_for(p, origin, CASE WHEN s.ts IS NULL THEN cur ELSE s END, need, now);
	END IF;
	IF p.kind = 'token bucket' THEN
		d.reset_after := _rl_wait_for(p, origin,
			CASE WHEN d.ok THEN after ELSE cur END, p.capacity, now);
	ELSE
		d.reset_after := _rl_window_reset(p, origin, now);
	END IF;
	RETURN d;
END
$$;

-- rl_jitter: a retry delay spread over [0, period) from a draw in [0, 1).
CREATE FUNCTION _rl_jitter(period bigint, unit_random float8)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$SELECT LEAST(pg_catalog.trunc(unit_random * period::float8)::bigint, period - 1)$$;

-- rl_ceil_ms: a duration in whole milliseconds, rounded up; 0 if none.
CREATE FUNCTION _rl_ceil_ms(us bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN us <= 0 THEN 0
	ELSE us / 1000 + CASE WHEN us % 1000::bigint <> 0 THEN 1 ELSE 0 END END$$;

-- current_state: the state a refund, penalty or block starts from: the
-- stored one brought forward to now, or a full bucket for a key with none.
CREATE FUNCTION _rl_current_state(p _rl_policy, origin bigint, s _rl_stored, now bigint)
RETURNS _rl_stored
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
	IF NOT _rl_valid_time(now) OR (s.ts IS NOT NULL AND NOT _rl_valid_time(s.ts)) THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	IF s.ts IS NULL THEN
		RETURN _rl_initial_state(p, origin, now);
	END IF;
	RETURN _rl_refill(p, origin, s, now);
END
$$;

-- check_refillable: a state a penalty or block may store is full again
-- within RL_MAX_WAIT of now, at a time before RL_END_TIME.
CREATE FUNCTION _rl_check_refillable(p _rl_policy, origin bigint, s _rl_stored, now bigint)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
	IF NOT _rl_valid_time(s.ts) THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	PERFORM _rl_wait_for(p, origin, s, p.capacity, now);
END
$$;

-- rl_charge_state: settle's charge of amount tokens (amount > 0), the
-- part of a cost found after the work: a penalty, but under max_debt one
-- that goes no deeper than -max_debt, taking what it can there (nothing
-- from a key already as deep, which it never lifts); charged: what it
-- took.
CREATE FUNCTION _rl_charge_state(p _rl_policy, origin bigint, s _rl_stored,
	now bigint, amount float8, OUT state _rl_stored, OUT charged float8)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
	state := _rl_current_state(p, origin, s, now);
	charged := amount;
	IF p.max_debt IS NOT NULL AND state.value - amount < -p.max_debt THEN
		charged := GREATEST(state.value + p.max_debt, 0::float8);
		-- the value when equal: +0 stays +0 under max_debt 0, as in the
		-- C edition
		state.value := LEAST(state.value, -p.max_debt);
	ELSE
		state.value := state.value - amount;
	END IF;
	PERFORM _rl_check_refillable(p, origin, state, now);
END
$$;

-- rl_refund_state, rl_penalize_state and rl_block_state: a key's state
-- after a refund of amount tokens (never above capacity), a penalty of
-- amount tokens (no check: the value may go below zero, as long as the
-- key is full again within RL_MAX_WAIT), or a block of duration
-- microseconds from now (every call refused until then; the key refills
-- from empty afterwards, and a deficit it owes is kept).  rl_adjust_state
-- adds settle's charge (_rl_charge_state) and its return: a refund that
-- gives nothing while the stored state is blocked (routine settling never
-- lifts a block).
CREATE FUNCTION _rl_adjust_state(p _rl_policy, origin bigint, adjustment text,
	s _rl_stored, now bigint, amount float8, duration bigint)
RETURNS _rl_stored
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	cur _rl_stored := _rl_current_state(p, origin, s, now);
	o _rl_stored;
	until_ bigint;
	ts bigint;
	start_ bigint;
BEGIN
	IF adjustment = 'return' THEN
		IF s.ts IS NOT NULL AND _rl_state_is_blocked(p, origin, s, now) THEN
			amount := 0;
		END IF;
		adjustment := 'refund';
	END IF;
	IF adjustment = 'refund' THEN
		cur.value := LEAST(cur.value + amount, p.capacity);
		RETURN cur;
	END IF;
	IF adjustment = 'charge' THEN
		RETURN (_rl_charge_state(p, origin, s, now, amount)).state;
	END IF;
	IF adjustment = 'penalize' THEN
		cur.value := cur.value - amount;
		PERFORM _rl_check_refillable(p, origin, cur, now);
		RETURN cur;
	END IF;
	until_ := CASE WHEN duration > 0 THEN _rl_add_before_end(now, duration) END;
	IF until_ IS NULL THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	IF p.kind = 'token bucket' THEN
		ts := until_;
	ELSE
		-- the window before the first start at or after until
		start_ := _rl_window_start(until_, origin, p.period);
		ts := CASE WHEN start_ = until_ THEN until_ - p.period ELSE start_ END;
	END IF;
	IF p.kind = 'token bucket' THEN
		o := CASE WHEN cur.ts >= ts THEN cur ELSE _rl_refill(p, origin, cur, ts) END;
	ELSIF cur.ts >= until_ - 1 THEN
		o := cur;	-- a block that lasts longer
	ELSE
		-- stored at its last microsecond, in the window it empties
		o := _rl_refill(p, origin, cur, ts);
		o.ts := until_ - 1;
	END IF;
	o.value := LEAST(o.value, 0);
	-- one offence more, forgotten only from the block's end on
	IF _rl_escalates(p) THEN
		o.prev := _rl_score_prev(_rl_offence_score(p, cur, now) + 1::float8);
	END IF;
	PERFORM _rl_check_refillable(p, origin, o, now);
	RETURN o;
END
$$;
