-- The clock: the wall clock at the moment of the call (not the start of
-- the transaction), or the time ratelimit.now_override pins, as the C
-- edition's src/clock.c.  Times are integer microseconds from
-- 2000-01-01 00:00 UTC, PostgreSQL's own count, as in src/algebra.c.

-- A timestamptz as microseconds (exact: extract gives a numeric).  STABLE
-- as extract on a timestamptz is, so that the planner inlines it.
CREATE FUNCTION _rl_us(t timestamptz)
RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$SELECT (extract(epoch FROM t) * 1000000::numeric - 946684800000000::numeric)::bigint$$;

-- Microseconds as a timestamptz: hours and the rest, each exact in the
-- double an interval is multiplied in.  STABLE as timestamptz + interval
-- is, so that the planner inlines it.
CREATE FUNCTION _rl_ts(us bigint)
RETURNS timestamptz
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$SELECT '2000-01-01 00:00:00+00'::timestamptz
	+ '1 hour'::interval * (us / 3600000000)::float8
	+ '1 microsecond'::interval * (us % 3600000000)::float8$$;

-- A duration in microseconds as an interval of hours, minutes, seconds.
CREATE FUNCTION _rl_interval(us bigint)
RETURNS interval
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$SELECT '1 hour'::interval * (us / 3600000000)::float8
	+ '1 microsecond'::interval * (us % 3600000000)::float8$$;

-- An interval's length in microseconds, as extract(epoch from ...) counts
-- it (years of 365.25 days, months of 30), as a double.
CREATE FUNCTION _rl_interval_usecs(span interval)
RETURNS float8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$SELECT (extract(epoch FROM span) * 1000000::numeric)::float8$$;

-- The time decisions are made at, for the edition's own functions, which
-- run as the role that owns it.  A pinned clock is honoured for the roles
-- that could rewrite the state anyway: a superuser, and members of the
-- owner.  With the C library loaded the setting is the C edition's, which
-- only a superuser can set; without it any role could set it, and pin the
-- clock to refill a limit.
CREATE FUNCTION _rl_now()
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	pinned text := pg_catalog.current_setting('ratelimit.now_override', true);
	t timestamptz;
BEGIN
	IF pinned IS NULL OR pinned = '' THEN
		RETURN pg_catalog.clock_timestamp();
	END IF;
	IF NOT (pg_catalog.pg_has_role(session_user, current_user, 'MEMBER')
			OR (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = session_user)) THEN
		RAISE EXCEPTION 'permission denied to pin the clock with ratelimit.now_override'
			USING ERRCODE = 'insufficient_privilege',
			DETAIL = 'Only a superuser or a member of the role that owns the rate limits may set it.',
			HINT = 'Reset ratelimit.now_override.';
	END IF;
	IF pinned ~* '(^|[^a-z])(now|today|tomorrow|yesterday)($|[^a-z])' THEN
		RAISE EXCEPTION 'invalid value for parameter "ratelimit.now_override": "%"', pinned
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = 'A word relative to the clock is not allowed; the value must be empty or an absolute timestamp with time zone.';
	END IF;
	BEGIN
		t := pinned::timestamptz;
	EXCEPTION WHEN data_exception THEN
		t := NULL;
	END;
	IF t IS NULL OR NOT pg_catalog.isfinite(t) THEN
		RAISE EXCEPTION 'invalid value for parameter "ratelimit.now_override": "%"', pinned
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = 'The value must be empty or a finite timestamp with time zone.';
	END IF;
	RETURN t;
END
$$;
-- rl_now: the same, for any caller.
CREATE FUNCTION rl_now()
RETURNS timestamptz
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_now()$$;
COMMENT ON FUNCTION rl_now() IS
	'the time ratelimit computes at: ratelimit.now_override when set, else the clock';
