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

-- Overrides and plans are configuration, as definitions are.
DO $rl$
BEGIN
	PERFORM pg_catalog.pg_extension_config_dump('rl_plans', '');
	PERFORM pg_catalog.pg_extension_config_dump('rl_overrides', '');
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
-- state brought forward to now under the old one: it keeps what it held,
-- at most the new capacity, and gains nothing for the time before now; a
-- negative value (a debt, a reservation) stays; a blocked row is not
-- touched.
CREATE FUNCTION _rl_move_state(p _rl_policy, origin bigint, s _rl_stored, now bigint,
	held float8)
RETURNS _rl_stored
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	cur _rl_stored := _rl_current_state(p, origin, s, now);
BEGIN
	-- rl_state_is_blocked: counted from a time, or a window, after now's
	IF s.ts IS NOT NULL AND (s.ts > now OR (p.kind <> 'token bucket'
			AND _rl_window_of(p, origin, s.ts) > _rl_window_of(p, origin, now))) THEN
		RETURN s;
	END IF;
	cur.value := LEAST(cur.value, held);
	RETURN cur;
END
$$;

-- leave_policy and enter_policy (src/plans.c), the two halves of a key's
-- move to another policy, each on the key's row (created full when
-- missing, then held until the transaction ends), under the policy in
-- force when it runs: leaving brings the state to now, so the time since
-- the key's last call refills at the old rate; entering keeps what the
-- row held (table_adjust's move: the row's value), at most the new
-- capacity, and gives nothing for the time before the move.
CREATE FUNCTION _rl_move_key(name text, key text, entering boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target := _rl_resolve(name, key, NULL::rl_policy, false, true);
	s _rl_stored;
	o _rl_stored;
	now bigint;
BEGIN
	-- leaving: a penalty of nothing, then a refund of nothing
	FOR step IN 1 .. CASE WHEN entering THEN 1 ELSE 2 END LOOP
		s := _rl_hold(t, key);
		t := _rl_reread(t);
		now := _rl_us(_rl_now());
		IF entering THEN
			o := _rl_move_state(t.policy, _rl_origin(t, key), s, now, s.value);
		ELSE
			o := _rl_adjust_state(t.policy, _rl_origin(t, key),
				CASE WHEN step = 1 THEN 'penalize' ELSE 'refund' END, s, now, 0::float8, 0::bigint);
		END IF;
		PERFORM _rl_check_state_time(o, now);
		UPDATE ONLY rate_limits r SET value = o.value, ts = _rl_ts(o.ts), prev = o.prev
		WHERE r.name = t.stored AND r.key = _rl_move_key.key AND r.shard = 0;
	END LOOP;
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
-- rate limit (replacing its assignment to a plan).  Its numbers take
-- effect at the key's next call, its state kept.
CREATE FUNCTION _rl_override(name text, key text, rate float8, period interval,
	capacity float8, max_reserved float8)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
	PERFORM _rl_key_args(name, key);
	IF rate IS NULL THEN
		RAISE EXCEPTION 'rate must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM _rl_require_writable('rl_override()');
	capacity := _rl_own_numbers(name, rate, period, capacity, max_reserved);
	INSERT INTO rl_overrides AS o (name, key, rate, period, capacity, max_reserved)
	VALUES (name, key, rate, period, capacity, max_reserved)
	ON CONFLICT ON CONSTRAINT rl_overrides_pkey DO UPDATE SET rate = excluded.rate,
		period = excluded.period, capacity = excluded.capacity,
		max_reserved = excluded.max_reserved, plan = excluded.plan;
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
-- follows the definition again.  False when it had none.
CREATE FUNCTION _rl_unoverride(name text, key text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
	PERFORM _rl_key_args(name, key);
	PERFORM _rl_require_writable('rl_unoverride()');
	PERFORM _rl_overridable(name);
	DELETE FROM ONLY rl_overrides o
	WHERE o.name = _rl_unoverride.name AND o.key = _rl_unoverride.key AND o.plan IS NULL;
	RETURN FOUND;
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
BEGIN
	PERFORM _rl_key_args(name, key);
	PERFORM _rl_require_writable(cmdname);
	PERFORM _rl_overridable(name);
	PERFORM FROM ONLY rl_definitions d WHERE d.name = _rl_change_plan.name FOR NO KEY UPDATE;
	IF plan IS NULL AND NOT EXISTS (SELECT FROM ONLY rl_overrides o
			WHERE o.name = _rl_change_plan.name AND o.key = _rl_change_plan.key
				AND o.plan IS NOT NULL) THEN
		-- nothing to leave: the key's state is not touched either
		RETURN false;
	END IF;
	PERFORM _rl_move_key(name, key, false);
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
	PERFORM _rl_move_key(name, key, true);
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
