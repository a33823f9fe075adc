-- Policies: SQL values checked into a _rl_policy with the C edition's
-- errors (src/policy.c), the constructors, and the stored name of a limit
-- used with an inline config (src/names.c).

-- rl_policy_from_values, after rl_policy_fill_defaults: check the nine
-- columns of a policy and convert them.  A concurrency kind comes back
-- with its kind alone, for the caller to refuse.  What the SQL edition
-- does not have yet (the memory store, calendar windows) is
-- refused last, once the policy is known to be valid.
CREATE FUNCTION _rl_policy_of(kind text, rate float8, period interval,
	capacity float8, max_reserved float8, shards integer, start timestamptz,
	storage text, time_zone text)
RETURNS _rl_policy
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	p _rl_policy;
	problem text;
	months numeric;
	days numeric;
	usecs numeric;
BEGIN
	IF kind IS NULL THEN
		RAISE EXCEPTION 'kind must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF kind NOT IN ('token bucket', 'fixed window', 'sliding window',
			'concurrency', 'concurrency lease') THEN
		IF pg_catalog.left(kind, 1) = '(' THEN
			RAISE EXCEPTION 'invalid rate limit kind "%"', kind
				USING ERRCODE = 'invalid_parameter_value',
				DETAIL = 'The kind holds a whole rl_policy value.',
				HINT = 'In PL/pgSQL, assign a policy with p := rl_fixed_window(...), or SELECT (rl_fixed_window(...)).* INTO p.';
		END IF;
		RAISE EXCEPTION 'invalid rate limit kind "%"', kind
			USING ERRCODE = 'invalid_parameter_value',
			HINT = 'The kind is "token bucket", "fixed window" or "sliding window".';
	END IF;
	p.kind := kind;
	IF kind IN ('concurrency', 'concurrency lease') THEN
		-- concurrency_from_values, then rl_policy_problem
		IF capacity IS NULL THEN
			RAISE EXCEPTION 'capacity must not be null' USING ERRCODE = 'null_value_not_allowed';
		END IF;
		IF rate IS NOT NULL OR period IS NOT NULL OR start IS NOT NULL
				OR time_zone IS NOT NULL OR shards <> 1 THEN
			RAISE EXCEPTION 'a concurrency limit has only a number of permits'
				USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Define it with rl_define_concurrency().';
		END IF;
		IF storage IS NOT NULL AND storage NOT IN ('table', 'memory') THEN
			RAISE EXCEPTION 'invalid rate limit storage "%"', storage
				USING ERRCODE = 'invalid_parameter_value',
				HINT = 'The storage is "table" or "memory".';
		END IF;
		IF storage = 'memory' THEN
			RAISE EXCEPTION 'a concurrency limit cannot use the memory store'
				USING ERRCODE = 'feature_not_supported',
				DETAIL = 'Its permits are row locks and rows of rl_leases.';
		END IF;
		IF NOT (capacity >= 1::float8 AND capacity <= 1000::float8
				AND capacity = pg_catalog.floor(capacity)) THEN
			RAISE EXCEPTION 'permits must be between 1 and 1000'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		IF max_reserved IS NOT NULL AND NOT (kind = 'concurrency'
				AND max_reserved > capacity AND max_reserved <= 1000::float8
				AND max_reserved = pg_catalog.floor(max_reserved)) THEN
			RAISE EXCEPTION 'a concurrency limit has only a number of permits'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		RETURN p;
	END IF;
	IF rate IS NULL THEN
		RAISE EXCEPTION 'rate must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF period IS NULL THEN
		RAISE EXCEPTION 'period must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF capacity IS NULL THEN
		RAISE EXCEPTION 'capacity must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF shards IS NULL THEN
		RAISE EXCEPTION 'shards must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	p.rate := rate;
	-- rl_period_usecs: 0 when not in (0, 100 years]
	p.period := CASE WHEN _rl_interval_usecs(period) > 0::float8
			AND _rl_interval_usecs(period) <= 3155760000000000::float8
		THEN pg_catalog.trunc(_rl_interval_usecs(period))::bigint ELSE 0 END;
	p.capacity := capacity;
	p.max_reserved := max_reserved;
	p.shards := shards;
	IF start IS NOT NULL THEN
		IF NOT pg_catalog.isfinite(start) THEN
			RAISE EXCEPTION 'start must be a finite timestamp'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		p.start := _rl_us(start);
	END IF;
	IF storage IS NOT NULL AND storage NOT IN ('table', 'memory') THEN
		RAISE EXCEPTION 'invalid rate limit storage "%"', storage
			USING ERRCODE = 'invalid_parameter_value',
			HINT = 'The storage is "table" or "memory".';
	END IF;
	IF time_zone IS NOT NULL THEN
		IF kind <> 'fixed window' THEN
			RAISE EXCEPTION 'time_zone applies only to fixed window limits'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		-- calendar_unit: 1 day, 1 week (7 days), 1 month or 1 year exactly.
		-- Every operand numeric (literals with a point), so each operator
		-- is pg_catalog's numeric one exactly: one of mixed types made in
		-- the schema would match better and run here
		months := extract(year FROM period) * 12.0 + extract(month FROM period);
		days := extract(day FROM period);
		usecs := extract(epoch FROM period) * 1000000.0
			- ((pg_catalog.trunc(months / 12.0) * 36525.0 / 100.0
				+ pg_catalog.mod(months, 12.0) * 30.0 + days) * 86400000000.0);
		IF NOT (usecs = 0.0 AND ((months = 0.0 AND days IN (1.0, 7.0))
				OR (months IN (1.0, 12.0) AND days = 0.0))) THEN
			RAISE EXCEPTION 'with a time_zone, period must be 1 day, 1 week, 1 month or 1 year'
				USING ERRCODE = 'invalid_parameter_value',
				DETAIL = pg_catalog.format('The period is %s.', period);
		END IF;
	END IF;
	IF storage = 'memory' AND shards <> 1 THEN
		RAISE EXCEPTION 'a memory limit cannot have shards'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = 'Shards spread row locks; the memory store takes no row lock, and a hot key needs none.';
	END IF;
	problem := _rl_policy_problem(p);
	IF problem IS NOT NULL THEN
		RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF storage = 'memory' THEN
		RAISE EXCEPTION 'the memory store is not in the SQL edition of ratelimit'
			USING ERRCODE = 'feature_not_supported',
			DETAIL = 'The memory store keeps state in shared memory, which only the C edition reaches.',
			HINT = 'Use storage ''table'', or install the C edition.';
	END IF;
	IF time_zone IS NOT NULL THEN
		RAISE EXCEPTION 'calendar windows (time_zone) are not in the SQL edition of ratelimit yet'
			USING ERRCODE = 'feature_not_supported',
			HINT = 'Use a fixed window of a period, or the C edition.';
	END IF;
	RETURN p;
END
$$;

-- A number as PostgreSQL's printf("%.<digits>g") writes it (NaN and
-- Infinity spelt as it spells them): to_char gives the
-- digits of %.<digits - 1>e, placed here as %g places them.
CREATE FUNCTION _rl_printf_g(x float8, digits integer)
RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
	e text := pg_catalog.btrim(pg_catalog.to_char(x,
		'9.' || pg_catalog.repeat('9', digits - 1) || 'EEEE'));
	neg boolean := pg_catalog.left(e, 1) = '-';
	mantissa text;
	exponent integer;
	out text;
BEGIN
	IF x = 'Infinity' THEN RETURN 'Infinity'; END IF;
	IF x = '-Infinity' THEN RETURN '-Infinity'; END IF;
	IF x = 'NaN' THEN RETURN 'NaN'; END IF;
	IF neg THEN
		e := pg_catalog.substr(e, 2);
	END IF;
	mantissa := pg_catalog.replace(pg_catalog.split_part(e, 'e', 1), '.', '');
	exponent := pg_catalog.split_part(e, 'e', 2)::integer;
	IF exponent < -4 OR exponent >= digits THEN
		out := pg_catalog.left(mantissa, 1);
		IF pg_catalog.rtrim(pg_catalog.substr(mantissa, 2), '0') <> '' THEN
			out := out || '.' || pg_catalog.rtrim(pg_catalog.substr(mantissa, 2), '0');
		END IF;
		out := out || 'e' || CASE WHEN exponent < 0 THEN '-' ELSE '+' END
			|| pg_catalog.lpad(pg_catalog.abs(exponent)::text, 2, '0');
	ELSIF exponent >= 0 THEN
		out := pg_catalog.left(mantissa, exponent + 1);
		IF pg_catalog.rtrim(pg_catalog.substr(mantissa, exponent + 2), '0') <> '' THEN
			out := out || '.' || pg_catalog.rtrim(pg_catalog.substr(mantissa, exponent + 2), '0');
		END IF;
	ELSE
		out := '0.' || pg_catalog.repeat('0', -exponent - 1) || pg_catalog.rtrim(mantissa, '0');
	END IF;
	RETURN CASE WHEN neg THEN '-' ELSE '' END || out;
END
$$;

-- A positive double as m * 2^e with m odd (frexp, then the odd part).
CREATE FUNCTION _rl_odd_mantissa(x float8, OUT m bigint, OUT e integer)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
	bits bigint := ('x' || pg_catalog.encode(pg_catalog.float8send(x), 'hex'))::bit(64)::bigint;
	biased integer := ((bits >> 52) & 2047::bigint)::integer;
BEGIN
	m := bits & 4503599627370495;
	IF biased = 0 THEN
		e := -1074;
	ELSE
		m := m + 4503599627370496;
		e := biased - 1075;
	END IF;
	WHILE m & 1::bigint = 0 LOOP
		m := m >> 1;
		e := e + 1;
	END LOOP;
END
$$;

-- n * 2^e, exact where a double holds it; NULL far outside the range a
-- valid rate can have (where C's ldexp would lose it too).
CREATE FUNCTION _rl_ldexp(n float8, e integer)
RETURNS float8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$SELECT CASE WHEN e BETWEEN -1000 AND 1000
	THEN n * pg_catalog.power(2::float8, e) END$$;

-- The odd part of x (not 0), and the power of two it had.
CREATE FUNCTION _rl_odd_part(x numeric, OUT odd numeric, OUT twos integer)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
	odd := x;
	twos := 0;
	WHILE pg_catalog.mod(odd, 2::numeric) = 0::numeric LOOP
		odd := pg_catalog.div(odd, 2);
		twos := twos + 1;
	END LOOP;
END
$$;

-- canonical_rate (src/names.c): a token bucket's rate and period in one
-- form for each ratio rate / period: the rate per second, minute, hour or
-- day, the first a double holds exactly; else the reduced fraction.
CREATE FUNCTION _rl_canonical_rate(p _rl_policy)
RETURNS _rl_policy
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	mm record;
	unit bigint;
	g numeric;
	numerator numeric;
	denominator numeric;
	factor numeric;
	n numeric;
	dp record;
	np record;
	ex integer;
	friendly _rl_policy;
	a numeric;
	rate float8;
BEGIN
	IF NOT p.rate > 0::float8 OR p.rate = 'Infinity' OR p.period <= 0 THEN
		RETURN p;
	END IF;
	mm := _rl_odd_mantissa(p.rate);
	FOREACH unit IN ARRAY ARRAY[1000000, 60000000, 3600000000, 86400000000]::bigint[] LOOP
		-- rate_per_unit
		g := pg_catalog.gcd(unit, p.period);
		numerator := unit::numeric / g;
		denominator := p.period::numeric / g;
		factor := pg_catalog.gcd(mm.m::numeric, denominator);
		dp := _rl_odd_part(pg_catalog.div(denominator, factor));
		CONTINUE WHEN dp.odd <> 1::numeric;
		np := _rl_odd_part(numerator);
		n := pg_catalog.div(mm.m::numeric, factor) * np.odd;
		CONTINUE WHEN n > 9007199254740992::numeric;
		ex := mm.e + np.twos - dp.twos;
		friendly := p;
		friendly.rate := _rl_ldexp(n::float8, ex);
		friendly.period := unit;
		CONTINUE WHEN friendly.rate IS NULL OR NOT friendly.rate > 0::float8
			OR friendly.rate = 'Infinity'
			OR _rl_ldexp(friendly.rate, -ex) IS DISTINCT FROM n::float8
			OR _rl_policy_problem(friendly) IS NOT NULL;
		RETURN friendly;
	END LOOP;
	dp := _rl_odd_part(p.period::numeric);
	a := pg_catalog.gcd(mm.m::numeric, dp.odd);
	rate := _rl_ldexp(pg_catalog.div(mm.m::numeric, a)::float8, mm.e - dp.twos);
	IF rate IS NULL OR NOT rate > 0::float8
			OR _rl_ldexp(rate, dp.twos) IS NULL
			OR _rl_ldexp(rate, dp.twos) * a::float8 <> p.rate THEN
		RETURN p;
	END IF;
	p.rate := rate;
	p.period := pg_catalog.div(dp.odd, a)::bigint;
	RETURN p;
END
$$;

-- rl_inline_row_name: the name the state of a limit used with an inline
-- config is stored under: the name, U+001F, and the policy in canonical
-- form, each number exactly, so one policy spelled two ways has one state
-- and two policies never share one.
CREATE FUNCTION _rl_inline_row_name(name text, p _rl_policy)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
	IF p.start IS NOT NULL THEN
		p.start := _rl_floor_mod(p.start, p.period);
	END IF;
	IF p.kind = 'token bucket' THEN
		p := _rl_canonical_rate(p);
	END IF;
	RETURN name || E'\x1f'
		|| CASE p.kind WHEN 'fixed window' THEN 'f' WHEN 'sliding window' THEN 's' ELSE 't' END
		|| '/' || _rl_printf_g(p.rate + 0::float8, 17)
		|| '/' || p.period::text
		|| '/' || _rl_printf_g(p.capacity + 0::float8, 17)
		|| '/' || COALESCE(_rl_printf_g(p.max_reserved + 0::float8, 17), '-')
		|| '/' || p.shards::text
		|| '/' || COALESCE(p.start::text, '-');
END
$$;

-- policy_datum: a checked policy as an rl_policy value, defaults filled.
CREATE FUNCTION _rl_policy_datum(kind text, rate float8, period interval,
	capacity float8, max_reserved float8, shards integer, start timestamptz,
	storage text, time_zone text)
RETURNS rl_policy
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	capacity := COALESCE(capacity, rate);
	storage := COALESCE(storage, 'table');
	PERFORM _rl_policy_of(kind, rate, period, capacity, max_reserved, shards,
		start, storage, time_zone);
	RETURN ROW(kind, rate, period, capacity, max_reserved, shards, start,
		storage, time_zone)::rl_policy;
END
$$;

-- Policy constructors: pure, checked, as the C edition's.  They run as
-- the owner, who alone may call the _rl_ helpers.

CREATE FUNCTION rl_token_bucket(
	rate float8,
	period interval,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1,
	storage text DEFAULT 'table')
RETURNS rl_policy
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_policy_datum('token bucket', rate, period, capacity,
	max_reserved, shards, NULL, storage, NULL)$$;
COMMENT ON FUNCTION rl_token_bucket(float8, interval, float8, float8, integer, text) IS
	'an inline token bucket policy: rate tokens per period, up to capacity (default rate)';

CREATE FUNCTION rl_fixed_window(
	rate float8,
	period interval,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1,
	start timestamptz DEFAULT NULL,
	storage text DEFAULT 'table',
	time_zone text DEFAULT NULL)
RETURNS rl_policy
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_policy_datum('fixed window', rate, period, capacity,
	max_reserved, shards, start, storage, time_zone)$$;
COMMENT ON FUNCTION rl_fixed_window(float8, interval, float8, float8, integer, timestamptz, text, text) IS
	'an inline fixed window policy: rate tokens at each window start, up to capacity (default rate)';

CREATE FUNCTION rl_sliding_window(
	rate float8,
	period interval,
	start timestamptz DEFAULT NULL,
	storage text DEFAULT 'table')
RETURNS rl_policy
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_policy_datum('sliding window', rate, period, rate,
	NULL, 1, start, storage, NULL)$$;
COMMENT ON FUNCTION rl_sliding_window(float8, interval, timestamptz, text) IS
	'an inline sliding window policy: at most rate per period, estimated from the counts of the current and the previous window (windows as a fixed window''s)';
