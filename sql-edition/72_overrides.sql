-- A key's own policy (src/plans.c, src/storage_overrides.c,
-- src/target.c): overrides (rl_override, rl_unoverride), plans (rl_plan,
-- rl_unplan) and keys assigned to plans (rl_assign, rl_unassign).  An
-- override is a row of rl_overrides with a key's rate, period, capacity
-- and max_reserved; an assignment is a row there that names a plan of
-- rl_plans instead.  Every call on a key of a defined limit reads its row
-- (_rl_with_override).  Not yet: the C edition's time_zone of a plan or a
-- key (a calendar limit's, which the SQL edition does not have).

-- Plans: named classes of a defined rate limit ("free", "pro"), each with
-- the rate, period, capacity and max_reserved an override has.
CREATE TABLE rl_plans (
	name text COLLATE "C" NOT NULL,
	plan text COLLATE "C" NOT NULL
		CHECK (octet_length(plan) OPERATOR(pg_catalog.>=) 1
			AND octet_length(plan) OPERATOR(pg_catalog.<=) 256),
	rate float8 NOT NULL,
	period interval,
	capacity float8 NOT NULL,
	max_reserved float8,
	PRIMARY KEY (name, plan)
);
COMMENT ON TABLE rl_plans IS
	'plans of named rate limits: a named policy for the keys assigned to it; write them with rl_plan() and rl_unplan(), assign keys with rl_assign() and rl_unassign()';
COMMENT ON COLUMN rl_plans.period IS
	'NULL: the definition''s period, whatever it becomes';
REVOKE ALL ON TABLE rl_plans FROM PUBLIC;

-- Per-key overrides: a key of a defined rate limit may carry its own rate,
-- period, capacity and max_reserved; every other column is the
-- definition's.  Its state is the key's own row, read under the
-- definition with the override in, so it is kept across changes of
-- either.
CREATE TABLE rl_overrides (
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL
		CHECK (octet_length(key) OPERATOR(pg_catalog.>=) 1
			AND octet_length(key) OPERATOR(pg_catalog.<=) 1024),
	rate float8,
	period interval,
	capacity float8,
	max_reserved float8,
	plan text COLLATE "C",
	PRIMARY KEY (name, key),
	-- rl_unplan refuses a plan that keys are assigned to; so does this
	FOREIGN KEY (name, plan) REFERENCES rl_plans (name, plan),
	-- a key has numbers of its own or a plan, not both
	CONSTRAINT rl_overrides_own_or_plan CHECK (
		(plan IS NULL AND rate IS NOT NULL AND capacity IS NOT NULL)
		OR (plan IS NOT NULL AND rate IS NULL AND period IS NULL
			AND capacity IS NULL AND max_reserved IS NULL))
);
COMMENT ON TABLE rl_overrides IS
	'per-key overrides of named rate limits: the policy of one key of a defined limit, its own numbers or a plan of rl_plans; write them with rl_override() and rl_unoverride(), rl_assign() and rl_unassign()';
COMMENT ON COLUMN rl_overrides.plan IS
	'the plan (rl_plans) whose numbers the key has; NULL for an override with numbers of its own';
COMMENT ON COLUMN rl_overrides.key IS
	'the key, as rl_limit takes it (text; a number as its text)';
COMMENT ON COLUMN rl_overrides.period IS
	'NULL: the definition''s period, whatever it becomes';
REVOKE ALL ON TABLE rl_overrides FROM PUBLIC;

-- What a key's last move to another policy left to remember, until
-- covered_until: how far the refills it had were paid for, at what rate,
-- and what the move charged for a refill it brought forward.
CREATE TABLE rl_moves (
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	moved_at timestamptz NOT NULL,
	moved_xact xid8,
	refill_at timestamptz,
	covered_until timestamptz NOT NULL,
	covered_per_us float8 NOT NULL CHECK (covered_per_us OPERATOR(pg_catalog.>=) 0),
	near_until timestamptz,
	near_per_us float8 CHECK (near_per_us OPERATOR(pg_catalog.>=) 0),
	debt float8 NOT NULL CHECK (debt OPERATOR(pg_catalog.>=) 0),
	PRIMARY KEY (name, key)
);
COMMENT ON TABLE rl_moves IS
	'the last move of a key to another policy (rl_override, rl_assign and their inverses), kept until covered_until so that a later move pays for the refill it brings forward; rl_gc deletes rows past covered_until';
COMMENT ON COLUMN rl_moves.moved_at IS
	'when the key moved';
COMMENT ON COLUMN rl_moves.moved_xact IS
	'the transaction that moved the key: a later move in the same transaction gives no payment back';
COMMENT ON COLUMN rl_moves.refill_at IS
	'the end of the fixed window the key moved into, as it was then; NULL for a token bucket or sliding window';
COMMENT ON COLUMN rl_moves.covered_until IS
	'the end of the latest fixed window whose refill the key had when it moved';
COMMENT ON COLUMN rl_moves.covered_per_us IS
	'the highest rate, in tokens per microsecond, of the windows that refilled the key, from near_until (if any) up to covered_until';
COMMENT ON COLUMN rl_moves.near_until IS
	'where the refills were paid for at a higher rate first: up to near_until at near_per_us, then up to covered_until at covered_per_us; NULL for one rate throughout';
COMMENT ON COLUMN rl_moves.near_per_us IS
	'the rate, in tokens per microsecond, up to near_until';
COMMENT ON COLUMN rl_moves.debt IS
	'tokens the move charged for a refill it brought forward, still owed while the key''s window at moved_at lasts';
REVOKE ALL ON TABLE rl_moves FROM PUBLIC;

-- Overrides and plans are configuration, as definitions are.
DO $rl$
BEGIN
	PERFORM pg_catalog.pg_extension_config_dump('rl_plans', '');
	PERFORM pg_catalog.pg_extension_config_dump('rl_overrides', '');
	PERFORM pg_catalog.pg_extension_config_dump('rl_moves', '');
EXCEPTION WHEN feature_not_supported OR object_not_in_prerequisite_state THEN
	NULL;
END
$rl$;

-- rl_period_usecs: 0 when not in (0, 100 years].
CREATE FUNCTION _rl_period_usecs(period interval)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$SELECT CASE WHEN _rl_interval_usecs(period) > 0::float8
		AND _rl_interval_usecs(period) <= 3155760000000000::float8
	THEN pg_catalog.trunc(_rl_interval_usecs(period))::bigint ELSE 0::bigint END$$;

-- apply_override (src/target.c): the policy of a call's key, a key of a
-- defined rate limit with an override or a plan: its rate, period (when
-- given), capacity and max_reserved in the definition's policy.  Read
-- again whenever the call reads its definition again, so a change of the
-- override while the call waited for its row is adopted, as a change of
-- the definition is.  lenient (rl_reset): an override its definition no
-- longer admits is left out rather than refused.
CREATE FUNCTION _rl_with_override(t _rl_target, lenient boolean)
RETURNS _rl_policy
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	p _rl_policy := t.policy;
	o record;
	problem text;
BEGIN
	IF NOT t.defined OR t.key IS NULL OR t.definition IS NULL
			OR p.kind IN ('concurrency', 'concurrency lease') THEN
		RETURN p;
	END IF;
	-- the definition's own numbers (t.policy may have an override's in)
	p.rate := (t.definition).rate;
	p.period := _rl_period_usecs((t.definition).period);
	p.capacity := (t.definition).capacity;
	p.max_reserved := (t.definition).max_reserved;
	SELECT COALESCE(v.rate, pl.rate) AS rate, COALESCE(v.period, pl.period) AS period,
		COALESCE(v.capacity, pl.capacity) AS capacity,
		COALESCE(v.max_reserved, pl.max_reserved) AS max_reserved
	INTO o
	FROM ONLY rl_overrides v LEFT JOIN ONLY rl_plans pl
		ON pl.name = v.name AND pl.plan = v.plan
	WHERE v.name = t.label AND v.key = t.key;
	IF NOT FOUND THEN
		RETURN p;
	END IF;
	DECLARE
		q _rl_policy := p;
	BEGIN
		q.rate := o.rate;
		IF o.period IS NOT NULL THEN
			q.period := _rl_period_usecs(o.period);
		END IF;
		q.capacity := o.capacity;
		q.max_reserved := o.max_reserved;
		problem := _rl_policy_problem(q);
		IF problem IS NULL THEN
			RETURN q;
		END IF;
	END;
	IF lenient THEN
		RETURN p;
	END IF;
	RAISE EXCEPTION 'invalid override of rate limit "%" for key "%"', t.label, t.key
		USING ERRCODE = 'invalid_parameter_value', DETAIL = problem;
END
$$;

-- overridable (src/plans.c): the definition row of an override's or a
-- plan's name, a defined rate limit.
CREATE FUNCTION _rl_overridable(name text)
RETURNS rl_definitions
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	d rl_definitions := _rl_definition_row(name, false);
BEGIN
	IF d.name IS NULL THEN
		RAISE EXCEPTION 'rate limit "%" does not exist', name
			USING ERRCODE = 'undefined_object',
			HINT = 'Define it with rl_define() first: overrides and plans change keys of a defined limit.';
	END IF;
	IF d.kind IN ('concurrency', 'concurrency lease') THEN
		RAISE EXCEPTION 'rate limit "%" is a concurrency limit', name
			USING ERRCODE = 'wrong_object_type',
			DETAIL = 'Only a rate limit''s keys can have overrides or plans.';
	END IF;
	RETURN d;
END
$$;

-- own_numbers (src/plans.c): an override's or a plan's numbers, checked
-- as the whole policy a key then has; capacity NULL is the rate.
CREATE FUNCTION _rl_own_numbers(name text, rate float8, period interval,
	capacity float8, max_reserved float8)
RETURNS float8
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	p _rl_policy := _rl_definition(_rl_overridable(name));
	problem text;
BEGIN
	p.rate := rate;
	IF period IS NOT NULL THEN
		p.period := _rl_period_usecs(period);
	END IF;
	p.capacity := COALESCE(capacity, rate);
	p.max_reserved := max_reserved;
	problem := _rl_policy_problem(p);
	IF problem IS NOT NULL THEN
		RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN p.capacity;
END
$$;

-- rl_check_name_bytes for a plan's name.
CREATE FUNCTION _rl_check_plan(plan text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF plan IS NULL THEN
		RAISE EXCEPTION 'plan must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF plan = '' THEN
		RAISE EXCEPTION 'plan name must not be empty' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF pg_catalog.octet_length(plan) > 256 THEN
		RAISE EXCEPTION 'plan name is too long'
			USING ERRCODE = 'program_limit_exceeded',
			DETAIL = pg_catalog.format('The name is %s bytes; the limit is 256.', pg_catalog.octet_length(plan));
	END IF;
END
$$;

-- rl_move_state (src/adjust.c): a row moved to another policy, from its
-- state brought forward to now under the old one, where a call could take
-- held: what a call can take stays at most held, and the row gains
-- nothing for the time before now.  A negative value (a debt, a
-- reservation) stays; a blocked row is not touched.
CREATE FUNCTION _rl_move_state(p _rl_policy, origin bigint, s _rl_stored, now bigint,
	held float8)
RETURNS _rl_stored
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	cur _rl_stored := _rl_current_state(p, origin, s, now);
	excess float8;
BEGIN
	-- rl_state_is_blocked: counted from a time, or a window, after now's
	IF s.ts IS NOT NULL AND (s.ts > now OR (p.kind <> 'token bucket'
			AND _rl_window_of(p, origin, s.ts) > _rl_window_of(p, origin, now))) THEN
		RETURN s;
	END IF;
	excess := _rl_available(p, origin, cur, now) - held;
	IF excess > 0::float8 THEN
		cur.value := cur.value - excess;
	END IF;
	-- a debt the new policy would take more than RL_MAX_WAIT to repay
	PERFORM _rl_check_refillable(p, origin, cur, now);
	RETURN cur;
END
$$;

-- What a key holds as it leaves a policy (KeyHeld, src/plans.c).
CREATE TYPE _rl_held AS (
	held float8,		-- what a call could take
	cov_until bigint[],	-- the time its refills paid for: spans until these ends
	cov_per_us float8[],	-- at these rates (its window's, its last move's)
	owed float8,		-- what its last move charged, unspent
	refundable boolean,	-- and whether it may come back (another transaction's)
	count float8,		-- a sliding window's count in its window
	prev float8,		-- and in the window before since
	since bigint
);

-- rl_cover_steps (src/adjust.c): the upper envelope of spans, each until
-- an end at a rate, cut to the part after after: steps in order of their
-- ends, each ending later and at a lower rate than the one before.
CREATE FUNCTION _rl_cover_steps(untils bigint[], rates float8[], after bigint,
	OUT s_until bigint[], OUT s_rate float8[])
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	su bigint[] := '{}';
	sr float8[] := '{}';
	m integer := 0;
	j integer;
	rate float8 := 0;
BEGIN
	s_until := '{}';
	s_rate := '{}';
	FOR i IN 1 .. COALESCE(pg_catalog.array_length(untils, 1), 0) LOOP
		CONTINUE WHEN untils[i] <= after;
		m := m + 1;
		j := m;
		-- insertion by end
		WHILE j > 1 AND su[j - 1] > untils[i] LOOP
			su[j] := su[j - 1];
			sr[j] := sr[j - 1];
			j := j - 1;
		END LOOP;
		su[j] := untils[i];
		sr[j] := rates[i];
	END LOOP;
	-- from the last end back: the highest rate of the spans still on
	FOR j2 IN REVERSE m .. 1 LOOP
		rate := GREATEST(rate, sr[j2]);
		sr[j2] := rate;
	END LOOP;
	-- a step at the rate of the next adds nothing; one as long, its rate
	FOR j2 IN 1 .. m LOOP
		IF j2 < m AND su[j2] = su[j2 + 1] THEN
			sr[j2 + 1] := sr[j2];
		END IF;
		CONTINUE WHEN j2 < m AND sr[j2] = sr[j2 + 1];
		s_until := pg_catalog.array_append(s_until, su[j2]);
		s_rate := pg_catalog.array_append(s_rate, sr[j2]);
	END LOOP;
END
$$;

-- rl_cover_payment (src/adjust.c): what a refill at e pays for the steps
-- that run past it: each step's rate, at most per_us, over its part after e.
CREATE FUNCTION _rl_cover_payment(s_until bigint[], s_rate float8[], e bigint, per_us float8)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	pay float8 := 0;
	from_ bigint := e;
BEGIN
	FOR i IN 1 .. COALESCE(pg_catalog.array_length(s_until, 1), 0) LOOP
		CONTINUE WHEN s_until[i] <= from_;
		pay := pay + LEAST(s_rate[i], per_us) * (s_until[i] - from_)::float8;
		from_ := s_until[i];
	END LOOP;
	RETURN pay;
END
$$;

-- rl_cover_compress (src/adjust.c): steps cut to at most two, the two
-- neighbours that add the least covered time at the higher rate made one.
CREATE FUNCTION _rl_cover_compress(INOUT s_until bigint[], INOUT s_rate float8[])
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	first float8;
	second float8;
BEGIN
	IF COALESCE(pg_catalog.array_length(s_until, 1), 0) < 3 THEN
		RETURN;
	END IF;
	first := (s_rate[1] - s_rate[2]) * (s_until[2] - s_until[1])::float8;
	second := (s_rate[2] - s_rate[3]) * (s_until[3] - s_until[2])::float8;
	IF first <= second THEN
		s_until := ARRAY[s_until[2], s_until[3]];
		s_rate := ARRAY[s_rate[1], s_rate[3]];
	ELSE
		s_until := ARRAY[s_until[1], s_until[3]];
		s_rate := ARRAY[s_rate[1], s_rate[2]];
	END IF;
END
$$;

-- leave_policy (src/plans.c): the key's row (created full when missing,
-- then held until the transaction ends) brought to now under the policy
-- it has, so the time since its last call refills at the old rate; what a
-- call could then take, how far its refills were paid for (its fixed
-- window's, if that refilled it, and its last move's, from rl_moves,
-- while they last), its sliding counts.
CREATE FUNCTION _rl_leave_key(name text, key text)
RETURNS _rl_held
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target := _rl_resolve(name, key, NULL::rl_policy, false, true);
	s _rl_stored;
	o _rl_stored;
	now bigint;
	h _rl_held;
	origin bigint;
	m rl_moves;
	refilled boolean := true;
	w_end bigint;
	cur_end bigint;
BEGIN
	IF (t.policy).shards > 1 THEN
		RAISE EXCEPTION 'moving a key of a sharded limit is not in the SQL edition of ratelimit yet'
			USING ERRCODE = 'feature_not_supported',
			HINT = 'Use the C edition, or a limit without shards.';
	END IF;
	-- a penalty of nothing, then a refund of nothing
	FOR step IN 1 .. 2 LOOP
		s := _rl_hold(t, key);
		t := _rl_reread(t);
		now := _rl_us(_rl_now());
		o := _rl_adjust_state(t.policy, _rl_origin(t, key),
			CASE WHEN step = 1 THEN 'penalize' ELSE 'refund' END, s, now, 0::float8, 0::bigint);
		PERFORM _rl_check_state_time(o, now);
		UPDATE ONLY rate_limits r SET value = o.value, ts = _rl_ts(o.ts), prev = o.prev
		WHERE r.name = t.stored AND r.key = _rl_leave_key.key AND r.shard = 0;
	END LOOP;
	origin := _rl_origin(t, key);
	h.held := _rl_available(t.policy, origin, o, now);
	h.owed := 0;
	h.refundable := true;
	h.cov_until := '{}';
	h.cov_per_us := '{}';
	SELECT * INTO m FROM ONLY rl_moves x
	WHERE x.name = _rl_leave_key.name AND x.key = _rl_leave_key.key;
	IF FOUND AND _rl_us(m.covered_until) > now THEN
		-- the window it moved into has begun again since: by its end as
		-- it was then, or as the policy now has it
		IF (t.policy).kind = 'fixed window' THEN
			w_end := _rl_window_of(t.policy, origin, _rl_us(m.moved_at)) + (t.policy).period;
			refilled := (_rl_valid_time(w_end) AND w_end <= now)
				OR COALESCE(_rl_us(m.refill_at) <= now, false);
		ELSE
			refilled := COALESCE(_rl_us(m.refill_at) <= now, false);
		END IF;
		h.cov_until := pg_catalog.array_append(h.cov_until, _rl_us(m.covered_until));
		h.cov_per_us := pg_catalog.array_append(h.cov_per_us, m.covered_per_us);
		IF m.near_until IS NOT NULL THEN
			h.cov_until := pg_catalog.array_append(h.cov_until, _rl_us(m.near_until));
			h.cov_per_us := pg_catalog.array_append(h.cov_per_us, COALESCE(m.near_per_us, 0::float8));
		END IF;
		h.owed := m.debt;
		IF refilled THEN
			-- the refills since have repaid part of the charge: at most its
			-- highest rate over the time they paid for, where the policy
			-- still has the windows the move saw
			cur_end := _rl_window_of(t.policy, origin, now) + (t.policy).period;
			IF (t.policy).kind = 'fixed window' AND m.refill_at IS NOT NULL
					AND _rl_valid_time(w_end) AND w_end = _rl_us(m.refill_at)
					AND _rl_valid_time(cur_end) AND cur_end > _rl_us(m.refill_at) THEN
				h.owed := GREATEST(m.debt - GREATEST(m.covered_per_us, COALESCE(m.near_per_us, 0::float8))
					* (cur_end - _rl_us(m.refill_at))::float8, 0::float8);
			ELSE
				h.owed := 0;
			END IF;
		END IF;
		h.refundable := NOT refilled AND NOT COALESCE(m.moved_xact OPERATOR(pg_catalog.=)
			pg_catalog.pg_current_xact_id_if_assigned(), false);
	END IF;
	IF refilled AND (t.policy).kind = 'fixed window' THEN
		w_end := _rl_window_of(t.policy, origin, now) + (t.policy).period;
		IF _rl_valid_time(w_end) THEN
			h.cov_until := pg_catalog.array_append(h.cov_until, w_end);
			h.cov_per_us := pg_catalog.array_append(h.cov_per_us, (t.policy).rate / (t.policy).period::float8);
		END IF;
	END IF;
	h.count := 0;
	h.prev := 0;
	IF (t.policy).kind = 'sliding window' THEN
		h.count := (t.policy).capacity - o.value;
		h.prev := CASE WHEN o.prev IS NULL OR o.prev = 'NaN'::float8 OR o.prev < 0::float8
			THEN (t.policy).capacity ELSE o.prev END;
		h.since := _rl_window_start(now, origin, (t.policy).period);
	END IF;
	RETURN h;
END
$$;

-- enter_policy (src/plans.c): once rl_overrides says the new policy, the
-- row keeps what a call could take (table_adjust's move), at most the new
-- capacity; a sliding window's counts in the new current window stay
-- counted.  A fixed window that ends before the key's refills were paid
-- for pays, as a penalty, for the time it overlaps them, at the lower of
-- their rate and its own, less what the key gives up above the new
-- capacity; a charge of its last move for a refill that has not come is
-- part of it, and what that charged beyond it comes back.  rl_moves
-- remembers how far the refills were paid for.
CREATE FUNCTION _rl_enter_key(name text, key text, h _rl_held)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target := _rl_resolve(name, key, NULL::rl_policy, false, true);
	s _rl_stored;
	o _rl_stored;
	now bigint;
	origin bigint;
	counted float8;
	w_end bigint;
	given_up float8;
	pay float8 := 0;
	c record;
	n integer;
BEGIN
	s := _rl_hold(t, key);
	t := _rl_reread(t);
	IF (t.policy).shards > 1 THEN
		RAISE EXCEPTION 'moving a key of a sharded limit is not in the SQL edition of ratelimit yet'
			USING ERRCODE = 'feature_not_supported',
			HINT = 'Use the C edition, or a limit without shards.';
	END IF;
	now := _rl_us(_rl_now());
	origin := _rl_origin(t, key);
	given_up := GREATEST(h.held - (t.policy).capacity, 0::float8);
	IF (t.policy).kind = 'sliding window' AND (h.count > 0::float8 OR h.prev > 0::float8) THEN
		counted := h.count + CASE WHEN h.since > _rl_window_start(now, origin, (t.policy).period)
			THEN h.prev ELSE 0::float8 END;
		h.held := LEAST(h.held, (t.policy).capacity - counted);
	END IF;
	o := _rl_move_state(t.policy, origin, s, now, h.held);
	PERFORM _rl_check_state_time(o, now);
	IF (t.policy).kind = 'fixed window' THEN
		w_end := _rl_window_of(t.policy, origin, now) + (t.policy).period;
		IF _rl_valid_time(w_end) THEN
			c := _rl_cover_steps(h.cov_until, h.cov_per_us, w_end);
			pay := GREATEST(_rl_cover_payment(c.s_until, c.s_rate, w_end,
				(t.policy).rate / (t.policy).period::float8) - given_up, 0::float8);
		END IF;
	END IF;
	-- what the last move charged for a refill that has not come counts
	-- towards this payment, and what it charged beyond it comes back
	IF pay > h.owed THEN
		o := _rl_adjust_state(t.policy, origin, 'penalize', o, now, pay - h.owed, 0::bigint);
		PERFORM _rl_check_state_time(o, now);
	ELSIF pay < h.owed AND h.refundable THEN
		o := _rl_adjust_state(t.policy, origin, 'refund', o, now, h.owed - pay, 0::bigint);
		PERFORM _rl_check_state_time(o, now);
	ELSE
		-- this transaction's last move: the key keeps owing the larger
		pay := h.owed;
	END IF;
	UPDATE ONLY rate_limits r SET value = o.value, ts = _rl_ts(o.ts), prev = o.prev
	WHERE r.name = t.stored AND r.key = _rl_enter_key.key AND r.shard = 0;
	-- how far the refills were paid for, while that is to come
	c := _rl_cover_steps(h.cov_until, h.cov_per_us, now);
	c := _rl_cover_compress(c.s_until, c.s_rate);
	n := COALESCE(pg_catalog.array_length(c.s_until, 1), 0);
	IF n > 0 THEN
		INSERT INTO rl_moves AS m (name, key, moved_at, moved_xact, refill_at, covered_until,
			covered_per_us, near_until, near_per_us, debt)
		VALUES (_rl_enter_key.name, _rl_enter_key.key, _rl_ts(now), pg_catalog.pg_current_xact_id(),
			CASE WHEN (t.policy).kind = 'fixed window' AND _rl_valid_time(w_end) THEN _rl_ts(w_end) END,
			_rl_ts(c.s_until[n]), c.s_rate[n],
			CASE WHEN n > 1 THEN _rl_ts(c.s_until[1]) END, CASE WHEN n > 1 THEN c.s_rate[1] END,
			pay)
		ON CONFLICT ON CONSTRAINT rl_moves_pkey DO UPDATE SET moved_at = excluded.moved_at,
			moved_xact = excluded.moved_xact,
			refill_at = excluded.refill_at, near_until = excluded.near_until,
			near_per_us = excluded.near_per_us,
			covered_until = excluded.covered_until, covered_per_us = excluded.covered_per_us,
			debt = excluded.debt;
	END IF;
END
$$;

-- What policy a key has (rl_storage_lock_assignments), after locking its
-- definition's row so that the assignments of its keys change one at a
-- time: 'definition', 'plan' or 'override'.
CREATE FUNCTION _rl_lock_assignments(name text, key text)
RETURNS text
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
	PERFORM FROM ONLY rl_definitions d WHERE d.name = _rl_lock_assignments.name
	FOR NO KEY UPDATE;
	RETURN COALESCE((SELECT CASE WHEN o.plan IS NOT NULL THEN 'plan' ELSE 'override' END
		FROM ONLY rl_overrides o
		WHERE o.name = _rl_lock_assignments.name AND o.key = _rl_lock_assignments.key),
		'definition');
END
$$;

-- The name and key arguments of rl_override, rl_unoverride, rl_assign and
-- rl_unassign (name_arg, rl_target_init), checked.
CREATE FUNCTION _rl_key_args(name text, key text)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
	PERFORM _rl_check_name_key(name, NULL::text);
	IF key IS NULL THEN
		RAISE EXCEPTION 'key must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM _rl_check_name_key(name, key);
END
$$;

-- rl_override: create or replace the override of one key of a defined
-- rate limit (replacing its assignment to a plan).  A key's first
-- override takes effect at its next call, its state kept; a key that has
-- an override or a plan moves (write_override, src/plans.c).
CREATE FUNCTION _rl_override(name text, key text, rate float8, period interval,
	capacity float8, max_reserved float8)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	moving boolean;
	h _rl_held;
	d rl_definitions;
BEGIN
	PERFORM _rl_key_args(name, key);
	IF rate IS NULL THEN
		RAISE EXCEPTION 'rate must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM _rl_require_writable('rl_override()');
	capacity := _rl_own_numbers(name, rate, period, capacity, max_reserved);
	d := _rl_overridable(name);
	moving := _rl_lock_assignments(name, key) <> 'definition';
	-- a key that follows the definition moves once it has used some of
	-- its capacity (what a call could take); a full one takes the
	-- override at once
	IF NOT moving THEN
		moving := (SELECT v.value < d.capacity FROM rl_value(name, key) v);
	END IF;
	IF moving THEN
		h := _rl_leave_key(name, key);
	END IF;
	INSERT INTO rl_overrides AS o (name, key, rate, period, capacity, max_reserved)
	VALUES (name, key, rate, period, capacity, max_reserved)
	ON CONFLICT ON CONSTRAINT rl_overrides_pkey DO UPDATE SET rate = excluded.rate,
		period = excluded.period, capacity = excluded.capacity,
		max_reserved = excluded.max_reserved, plan = excluded.plan;
	IF moving THEN
		PERFORM _rl_enter_key(name, key, h);
	END IF;
END
$$;

CREATE FUNCTION rl_override(
	name text,
	key text,
	rate float8,
	period interval DEFAULT NULL,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$BEGIN PERFORM _rl_override(name, key, rate, period, capacity, max_reserved); END$$;
COMMENT ON FUNCTION rl_override(text, text, float8, interval, float8, float8) IS
	'create or replace the override of one key of a named rate limit: its rate per period (default: the definition''s period), capacity (default: the rate), max_reserved and, for a calendar limit, time zone';
REVOKE ALL ON FUNCTION rl_override(text, text, float8, interval, float8, float8) FROM PUBLIC;

-- rl_unoverride: drop the override of one key (not an assignment): it
-- moves back to the definition.  False, nothing changed, when it had none.
CREATE FUNCTION _rl_unoverride(name text, key text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	h _rl_held;
BEGIN
	PERFORM _rl_key_args(name, key);
	PERFORM _rl_require_writable('rl_unoverride()');
	PERFORM _rl_overridable(name);
	IF _rl_lock_assignments(name, key) <> 'override' THEN
		RETURN false;
	END IF;
	h := _rl_leave_key(name, key);
	DELETE FROM ONLY rl_overrides o
	WHERE o.name = _rl_unoverride.name AND o.key = _rl_unoverride.key AND o.plan IS NULL;
	PERFORM _rl_enter_key(name, key, h);
	RETURN true;
END
$$;

CREATE FUNCTION rl_unoverride(name text, key text)
RETURNS boolean
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_unoverride(name, key)$$;
COMMENT ON FUNCTION rl_unoverride(text, text) IS
	'drop the override of one key: it follows the definition again; false when it had none';
REVOKE ALL ON FUNCTION rl_unoverride(text, text) FROM PUBLIC;

-- rl_plan: create or replace a plan of a defined rate limit, checked as
-- rl_override checks an override.  Its keys take the new numbers at their
-- next call, each keeping what it has left.  The definition's row is
-- locked, as for a key's move, so no key is assigned to the plan
-- meanwhile.
CREATE FUNCTION _rl_plan(name text, plan text, rate float8, period interval,
	capacity float8, max_reserved float8)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
	PERFORM _rl_check_name_key(name, NULL::text);
	PERFORM _rl_check_plan(plan);
	IF rate IS NULL THEN
		RAISE EXCEPTION 'rate must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM _rl_require_writable('rl_plan()');
	capacity := _rl_own_numbers(name, rate, period, capacity, max_reserved);
	PERFORM FROM ONLY rl_definitions d WHERE d.name = _rl_plan.name FOR NO KEY UPDATE;
	INSERT INTO rl_plans AS p (name, plan, rate, period, capacity, max_reserved)
	VALUES (name, plan, rate, period, capacity, max_reserved)
	ON CONFLICT ON CONSTRAINT rl_plans_pkey DO UPDATE SET rate = excluded.rate,
		period = excluded.period, capacity = excluded.capacity,
		max_reserved = excluded.max_reserved;
END
$$;

CREATE FUNCTION rl_plan(
	name text,
	plan text,
	rate float8,
	period interval DEFAULT NULL,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$BEGIN PERFORM _rl_plan(name, plan, rate, period, capacity, max_reserved); END$$;
COMMENT ON FUNCTION rl_plan(text, text, float8, interval, float8, float8) IS
	'create or replace a plan of a named rate limit: its rate per period (default: the definition''s period), capacity (default: the rate), max_reserved and, for a calendar limit, time zone, for every key assigned to it';
REVOKE ALL ON FUNCTION rl_plan(text, text, float8, interval, float8, float8) FROM PUBLIC;

-- rl_unplan: drop a plan; whether there was one.  Refused while keys are
-- assigned to it: dropping it would move them all to the definition at
-- once, unasked.
CREATE FUNCTION _rl_unplan(name text, plan text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	assigned bigint;
BEGIN
	PERFORM _rl_check_name_key(name, NULL::text);
	PERFORM _rl_check_plan(plan);
	PERFORM _rl_require_writable('rl_unplan()');
	PERFORM _rl_overridable(name);
	SELECT pg_catalog.count(*) INTO assigned FROM ONLY rl_overrides o
	WHERE o.name = _rl_unplan.name AND o.plan = _rl_unplan.plan;
	IF assigned > 0 THEN
		RAISE EXCEPTION 'plan "%" of rate limit "%" has keys assigned to it', plan, name
			USING ERRCODE = 'dependent_objects_still_exist',
			DETAIL = pg_catalog.format('Keys assigned to it: %s.', assigned),
			HINT = 'Move them with rl_assign() or rl_unassign() first.';
	END IF;
	DELETE FROM ONLY rl_plans p WHERE p.name = _rl_unplan.name AND p.plan = _rl_unplan.plan;
	RETURN FOUND;
END
$$;

CREATE FUNCTION rl_unplan(name text, plan text)
RETURNS boolean
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_unplan(name, plan)$$;
COMMENT ON FUNCTION rl_unplan(text, text) IS
	'drop a plan that no key is assigned to; false when there was none';
REVOKE ALL ON FUNCTION rl_unplan(text, text) FROM PUBLIC;

-- change_plan (src/plans.c): move a key to plan (NULL: off its plan, to
-- the definition), keeping what it has left, at most the new capacity;
-- false, nothing changed, when it had no plan to leave.  The definition's
-- row is locked first, so that the assignments of its keys change one at
-- a time.
CREATE FUNCTION _rl_change_plan(name text, key text, plan text, cmdname text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	n integer;
	h _rl_held;
BEGIN
	PERFORM _rl_key_args(name, key);
	PERFORM _rl_require_writable(cmdname);
	PERFORM _rl_overridable(name);
	IF _rl_lock_assignments(name, key) <> 'plan' AND plan IS NULL THEN
		-- nothing to leave: the key's state is not touched either
		RETURN false;
	END IF;
	h := _rl_leave_key(name, key);
	IF plan IS NULL THEN
		DELETE FROM ONLY rl_overrides o
		WHERE o.name = _rl_change_plan.name AND o.key = _rl_change_plan.key
			AND o.plan IS NOT NULL;
	ELSE
		-- the plan must exist; the foreign key keeps it while assigned
		INSERT INTO rl_overrides AS o (name, key, plan)
		SELECT p.name, _rl_change_plan.key, p.plan FROM ONLY rl_plans p
		WHERE p.name = _rl_change_plan.name AND p.plan = _rl_change_plan.plan
		ON CONFLICT ON CONSTRAINT rl_overrides_pkey DO UPDATE SET rate = NULL, period = NULL,
			capacity = NULL, max_reserved = NULL, plan = excluded.plan;
		GET DIAGNOSTICS n = ROW_COUNT;
		IF n = 0 THEN
			RAISE EXCEPTION 'plan "%" of rate limit "%" does not exist', plan, name
				USING ERRCODE = 'undefined_object',
				HINT = 'Create it with rl_plan() first.';
		END IF;
	END IF;
	PERFORM _rl_enter_key(name, key, h);
	RETURN true;
END
$$;

-- rl_assign: assign one key of a defined rate limit to a plan, replacing
-- its plan or its override; it keeps what it has left, at most the plan's
-- capacity.  The plan is checked first.
CREATE FUNCTION rl_assign(name text, key text, plan text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
	PERFORM _rl_check_plan(plan);
	PERFORM _rl_change_plan(name, key, plan, 'rl_assign()');
END
$$;
COMMENT ON FUNCTION rl_assign(text, text, text) IS
	'assign one key of a named rate limit to a plan (and, for a calendar limit, a time zone of its own), replacing its plan or override; the key keeps what it has left, at most the plan''s capacity';
REVOKE ALL ON FUNCTION rl_assign(text, text, text) FROM PUBLIC;

-- rl_unassign: take a key off its plan; it follows the definition again,
-- keeping what it has left, at most its capacity.  False when it had no
-- plan (an override of its own stays).
CREATE FUNCTION rl_unassign(name text, key text)
RETURNS boolean
LANGUAGE sql VOLATILE STRICT SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_change_plan(name, key, NULL::text, 'rl_unassign()')$$;
COMMENT ON FUNCTION rl_unassign(text, text) IS
	'take one key off its plan: it follows the definition again and keeps what it has left, at most its capacity; false when it had no plan';
REVOKE ALL ON FUNCTION rl_unassign(text, text) FROM PUBLIC;
