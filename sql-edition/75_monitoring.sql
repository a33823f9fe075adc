-- Monitoring and upkeep: the HTTP fields of an answer (rl_headers), idle
-- rows (rl_gc) and every stored row brought forward to now (rl_status).

-- rl_http_fields (src/fields.c): the numbers of RateLimit-Policy,
-- RateLimit and Retry-After for an answer under a policy (the whole
-- limit's): amounts rounded down, times up.  (A NaN is above every number
-- in SQL; in C no comparison holds for it.)
CREATE FUNCTION _rl_sf_amount(x float8)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN x IS NULL OR x = 'NaN'::float8 OR NOT x > 0::float8 THEN 0::bigint
	WHEN x >= 999999999999999::float8 THEN 999999999999999::bigint
	ELSE pg_catalog.floor(x)::bigint END$$;

-- rl_ceil_seconds: a duration in whole seconds, rounded up; 0 if none.
CREATE FUNCTION _rl_ceil_seconds(us bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$SELECT CASE WHEN us <= 0 THEN 0
	ELSE us / 1000000 + CASE WHEN us % 1000000::bigint <> 0 THEN 1 ELSE 0 END END$$;

-- result_usecs (src/http.c): an interval of a result in microseconds, a
-- negative one counting as 0, at most RL_MAX_WAIT.
CREATE FUNCTION _rl_result_usecs(span interval)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	us float8 := _rl_interval_usecs(span);
BEGIN
	IF NOT COALESCE(us > 0::float8, false) THEN
		RETURN 0;
	END IF;
	IF us >= 31557600000000000::float8 THEN
		RETURN 31557600000000000;
	END IF;
	RETURN pg_catalog.ceil(us)::bigint;
END
$$;

-- append_sf_string (src/http.c): a name as a structured-field String:
-- printable ASCII, '"' and '\' escaped, any other byte '_'.
CREATE FUNCTION _rl_sf_string(name text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
	c text;
	out text := '';
BEGIN
	IF name OPERATOR(pg_catalog.~) '^[ -~]*$' THEN
		RETURN '"' || pg_catalog.regexp_replace(name, '(["\\])', '\\\1', 'g') || '"';
	END IF;
	FOREACH c IN ARRAY pg_catalog.regexp_split_to_array(name, '') LOOP
		IF c OPERATOR(pg_catalog.~) '^[ -~]$' THEN
			out := out || CASE WHEN c = '"' OR c = '\' THEN '\' ELSE '' END || c;
		ELSE
			out := out || pg_catalog.repeat('_', pg_catalog.octet_length(c));
		END IF;
	END LOOP;
	RETURN '"' || out || '"';
END
$$;

-- rl_headers (src/http.c): the HTTP fields for an answer of rl_limit or
-- rl_check on name, whose policy is its definition or, for a name with
-- none, config.
CREATE FUNCTION _rl_headers(name text, result rl_result, config rl_policy, key text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target;
	p _rl_policy;
	quota bigint;
	win bigint;
	w float8;
	remaining bigint;
	retry bigint;
	reset bigint;
	label text;
BEGIN
	IF name IS NULL THEN
		RAISE EXCEPTION 'name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF result IS NULL THEN
		RAISE EXCEPTION 'result must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM _rl_check_name_key(name, key);
	t := _rl_resolve(name, key, config, false, false);
	p := t.policy;
	-- in the order the C edition's build reads them (the arguments of
	-- rl_http_fields, last first)
	IF result.reset_after IS NULL THEN
		RAISE EXCEPTION 'result.reset_after must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF result.remaining IS NULL THEN
		RAISE EXCEPTION 'result.remaining must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF result.ok IS NULL THEN
		RAISE EXCEPTION 'result.ok must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	quota := _rl_sf_amount(p.rate);
	win := _rl_ceil_seconds(p.period);
	IF quota = 0 THEN
		-- less than one token per period: one token per the time it takes
		w := pg_catalog.ceil(p.period::float8 / p.rate / 1000000::float8);
		quota := 1;
		win := CASE WHEN w >= 999999999999999::float8 THEN 999999999999999::bigint
			ELSE w::bigint END;
	END IF;
	IF win < 1 THEN
		win := 1;
	END IF;
	remaining := _rl_sf_amount(result.remaining);
	retry := CASE WHEN NOT result.ok AND result.retry_after IS NOT NULL
		THEN _rl_ceil_seconds(_rl_result_usecs(result.retry_after)) ELSE 0 END;
	reset := CASE WHEN result.ok
		THEN _rl_ceil_seconds(_rl_result_usecs(result.reset_after)) ELSE retry END;
	label := _rl_sf_string(t.label);
	IF result.ok THEN
		RETURN pg_catalog.jsonb_build_object(
			'RateLimit-Policy', label || ';q=' || quota::text || ';w=' || win::text,
			'RateLimit', label || ';r=' || remaining::text || ';t=' || reset::text);
	END IF;
	RETURN pg_catalog.jsonb_build_object(
		'RateLimit-Policy', label || ';q=' || quota::text || ';w=' || win::text,
		'RateLimit', label || ';r=' || remaining::text || ';t=' || reset::text,
		'Retry-After', retry::text);
END
$$;

CREATE FUNCTION rl_headers(
	name text,
	result rl_result,
	config rl_policy DEFAULT NULL,
	key text DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_headers(name, result, config, key)$$;
COMMENT ON FUNCTION rl_headers(text, rl_result, rl_policy, text) IS
	'the HTTP fields RateLimit-Policy, RateLimit and (when denied) Retry-After for an answer of rl_limit or rl_check on name (and key, for a key with an override), as a jsonb object';
REVOKE ALL ON FUNCTION rl_headers(text, rl_result, rl_policy, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rl_headers(text, rl_result, rl_policy, text) TO PUBLIC;

-- rl_state_is_idle (src/algebra.c): whether a stored state is one no
-- decision can tell from a missing row, now and at every later time.
-- Where no missing row can start (before RL_MIN_TIME), the row is kept.
CREATE FUNCTION _rl_state_is_idle(p _rl_policy, origin bigint, s _rl_stored, now bigint)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	cur _rl_stored := _rl_refill(p, origin, s, now);
	fresh_ts bigint;
BEGIN
	IF NOT _rl_valid_time(now) THEN
		RETURN false;
	END IF;
	fresh_ts := CASE WHEN p.kind = 'token bucket' THEN now ELSE _rl_window_of(p, origin, now) END;
	IF NOT _rl_valid_time(fresh_ts) THEN
		RETURN false;
	END IF;
	RETURN cur.value >= p.capacity AND cur.ts = fresh_ts
		AND NOT (p.kind = 'sliding window' AND COALESCE(cur.prev > 0::float8, false))
		-- an offence score that still counts keeps the row
		AND NOT (_rl_escalates(p) AND _rl_offence_score(p, s, now) > 0::float8);
END
$$;

-- rl_inline_row (src/names.c): the policy of a stored name that
-- _rl_inline_row_name made; NULL for the name of a defined limit, or for
-- anything it cannot have made (a hand-made name).
CREATE FUNCTION _rl_inline_row(stored text)
RETURNS _rl_policy
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
	f text[];
	p _rl_policy;
BEGIN
	IF pg_catalog.strpos(stored, E'\x1f') = 0 THEN
		RETURN NULL;
	END IF;
	f := pg_catalog.regexp_match(stored,
		E'^[^\\x1f]*\\x1f([tfs])/([^/]+)/([-+]?[0-9]+)/([^/]+)/([^/]+)/([-+]?[0-9]+)/([-+]?[0-9]+|-)$');
	IF f IS NULL THEN
		RETURN NULL;
	END IF;
	BEGIN
		p.kind := CASE f[1] WHEN 't' THEN 'token bucket' WHEN 'f' THEN 'fixed window'
			ELSE 'sliding window' END;
		p.rate := f[2]::float8;
		p.period := f[3]::bigint;
		p.capacity := f[4]::float8;
		p.max_reserved := CASE WHEN f[5] = '-' THEN NULL ELSE f[5]::float8 END;
		p.shards := f[6]::integer;
		p.start := CASE WHEN f[7] = '-' THEN NULL ELSE f[7]::bigint END;
	EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
		RETURN NULL;
	END;
	IF p.shards < 1 OR p.shards > 1024 OR _rl_policy_problem(p) IS NOT NULL THEN
		RETURN NULL;
	END IF;
	RETURN p;
END
$$;

-- rl_inline_policy: the same as an rl_policy, for the view rl_status.
CREATE FUNCTION rl_inline_policy(name text)
RETURNS rl_policy
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
	p _rl_policy := _rl_inline_row(name);
BEGIN
	IF p.kind IS NULL THEN
		RETURN NULL;
	END IF;
	RETURN ROW(p.kind, p.rate, _rl_interval(p.period), p.capacity, p.max_reserved,
		p.shards, _rl_ts(p.start), 'table', NULL)::rl_policy;
END
$$;
COMMENT ON FUNCTION rl_inline_policy(text) IS
	'the inline policy a stored state name carries (name, U+001F, policy); NULL for the name of a defined limit; used by the view rl_status';
REVOKE ALL ON FUNCTION rl_inline_policy(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rl_inline_policy(text) TO PUBLIC;

-- The policy a stored row is judged under: its name's definition as it
-- is now, with its key's override in (rl_key_policy), or the policy in an
-- inline name; NULL for a row the SQL edition cannot judge (a hand-made
-- name; a definition with what it does not have yet) and for a
-- concurrency limit's name (no tokens).
CREATE FUNCTION _rl_row_policy(stored text, key text)
RETURNS _rl_policy
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	d rl_definitions;
	p _rl_policy;
	t _rl_target;
BEGIN
	IF pg_catalog.strpos(stored, E'\x1f') > 0 THEN
		RETURN _rl_inline_row(stored);
	END IF;
	SELECT * INTO d FROM ONLY rl_definitions WHERE rl_definitions.name = stored;
	IF d.name IS NULL OR d.kind IN ('concurrency', 'concurrency lease') THEN
		RETURN NULL;
	END IF;
	BEGIN
		p := _rl_definition(d);
	EXCEPTION WHEN feature_not_supported OR invalid_parameter_value
			OR null_value_not_allowed OR numeric_value_out_of_range THEN
		RETURN NULL;
	END;
	t.label := stored;
	t.key := NULLIF(key, '');
	t.defined := true;
	t.definition := d;
	t.policy := p;
	RETURN _rl_with_override(t, false);
END
$$;

-- rl_gc_run (src/gc.c): delete up to max_rows idle state rows.  The scan
-- reads without locking; a row that looks idle is locked with SKIP LOCKED
-- (rl_gc never waits for a caller), judged again under its name's newest
-- definition at a time read after the lock, and deleted if still idle.
CREATE FUNCTION _rl_gc(max_rows integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	r record;
	p _rl_policy;
	locked _rl_stored;
	tid tid;
	tid_count bigint;
	removed bigint := 0;
BEGIN
	IF max_rows IS NULL THEN
		RAISE EXCEPTION 'max_rows must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF max_rows <= 0 THEN
		RAISE EXCEPTION 'max_rows must be positive'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('max_rows is %s.', max_rows);
	END IF;
	PERFORM _rl_require_writable('rl_gc()');
	FOR r IN SELECT s.name, s.key, s.shard, s.value, _rl_us(s.ts) AS ts, s.prev
			FROM ONLY rate_limits s LOOP
		EXIT WHEN removed >= max_rows::bigint;
		p := _rl_row_policy(r.name, r.key);
		CONTINUE WHEN p.kind IS NULL OR r.shard >= p.shards;
		IF p.shards > 1 THEN
			p := _rl_policy_shard(p);	-- each row holds a shard's share
		END IF;
		CONTINUE WHEN NOT _rl_state_is_idle(p,
			_rl_row_origin(p, r.name, r.key),
			ROW(r.value, r.ts, r.prev)::_rl_stored, _rl_us(_rl_now()));
		SELECT s.ctid, s.value, _rl_us(s.ts), s.prev INTO tid, locked.value, locked.ts, locked.prev
		FROM ONLY rate_limits s
		WHERE s.name = r.name AND s.key = r.key AND s.shard = r.shard
		FOR UPDATE SKIP LOCKED;
		CONTINUE WHEN NOT FOUND;
		p := _rl_row_policy(r.name, r.key);
		CONTINUE WHEN p.kind IS NULL OR r.shard >= p.shards;
		IF p.shards > 1 THEN
			p := _rl_policy_shard(p);	-- each row holds a shard's share
		END IF;
		CONTINUE WHEN NOT _rl_state_is_idle(p, _rl_row_origin(p, r.name, r.key),
			locked, _rl_us(_rl_now()));
		DELETE FROM ONLY rate_limits s WHERE s.ctid = tid;
		removed := removed + 1;
	END LOOP;
	-- then leases whose ttl has passed, released or not, up to the rest
	IF removed < max_rows::bigint THEN
		DELETE FROM ONLY rl_leases l WHERE l.id OPERATOR(pg_catalog.=) ANY (ARRAY(
			SELECT x.id FROM ONLY rl_leases x WHERE x.expires <= _rl_now()
			LIMIT max_rows::bigint - removed FOR UPDATE SKIP LOCKED));
		GET DIAGNOSTICS tid_count = ROW_COUNT;
		removed := removed + tid_count;
	END IF;
	-- then records of moves whose covered time has passed
	IF removed < max_rows::bigint THEN
		DELETE FROM ONLY rl_moves m WHERE (m.name, m.key) IN (
			SELECT x.name, x.key FROM ONLY rl_moves x WHERE x.covered_until <= _rl_now()
			LIMIT max_rows::bigint - removed FOR UPDATE SKIP LOCKED);
		GET DIAGNOSTICS tid_count = ROW_COUNT;
		removed := removed + tid_count;
	END IF;
	RETURN removed;
END
$$;

-- A stored row's window origin: its name up to U+001F, and its key ('' is
-- the NULL key).
CREATE FUNCTION _rl_row_origin(p _rl_policy, stored text, key text)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$SELECT CASE WHEN p.kind = 'token bucket' THEN 0
	ELSE _rl_window_origin(p, pg_catalog.split_part(stored, E'\x1f', 1), NULLIF(key, '')) END$$;

CREATE FUNCTION rl_gc(max_rows integer DEFAULT 10000)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_gc(max_rows)$$;
COMMENT ON FUNCTION rl_gc(integer) IS
	'delete up to max_rows state rows that have refilled to full (indistinguishable from no row), skipping locked rows, then expired leases and records of moves (rl_moves) within the same max_rows, then up to max_rows idle entries of the memory store; returns how many in all';
REVOKE ALL ON FUNCTION rl_gc(integer) FROM PUBLIC;

-- rl_status_row (src/functions.c, rl_row_now in src/limit.c): one stored
-- row brought forward to now; reset_after NULL when it lies beyond the
-- longest wait or past the end of the timestamp range.
CREATE FUNCTION rl_status_row(
	config rl_policy,
	name text,
	key text,
	stored_value float8,
	stored_ts timestamptz,
	stored_prev float8,
	OUT value float8,
	OUT ts timestamptz,
	OUT remaining float8,
	OUT reset_after interval,
	OUT idle boolean)
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
	p _rl_policy;
	origin bigint;
	s _rl_stored;
	cur _rl_stored;
	now bigint := _rl_us(_rl_now());
	d _rl_decision;
	dd rl_definitions;
BEGIN
	-- rows left from a rate under a name now a concurrency limit
	IF config.kind IN ('concurrency', 'concurrency lease') THEN
		RETURN;
	END IF;
	p := _rl_policy_of(config.kind, config.rate, config.period, config.capacity,
		config.max_reserved, config.shards, config.start,
		COALESCE(config.storage, 'table'), config.time_zone);
	-- definition_escalation (src/functions.c): a defined limit's
	-- escalation, which the view's policy does not carry
	IF pg_catalog.strpos(name, E'\x1f') = 0 THEN
		SELECT * INTO dd FROM ONLY rl_definitions WHERE rl_definitions.name = rl_status_row.name;
		IF dd.name IS NOT NULL AND dd.kind = p.kind THEN
			BEGIN
				p := _rl_definition_options(dd, p);
			EXCEPTION WHEN invalid_parameter_value THEN
				NULL;
			END;
		END IF;
	END IF;
	IF p.shards > 1 THEN
		p := _rl_policy_shard(p);	-- each row holds a shard's share
	END IF;
	origin := _rl_row_origin(p, name, key);
	s := ROW(stored_value, _rl_us(stored_ts),
		CASE WHEN stored_prev = 'NaN'::float8 THEN NULL ELSE stored_prev END)::_rl_stored;
	cur := _rl_refill(p, origin, s, now);
	value := _rl_available(p, origin, s, now);
	ts := _rl_ts(cur.ts);
	remaining := _rl_fmax(value, 0::float8);	-- value > 0 ? value : 0: +0 for -0, as the C edition
	idle := _rl_state_is_idle(p, origin, s, now);
	BEGIN
		d := _rl_decide(p, origin, s, now, 0::float8, false);
		reset_after := _rl_interval(d.reset_after);
	EXCEPTION WHEN datetime_field_overflow OR numeric_value_out_of_range THEN
		reset_after := NULL;
	END;
END
$$;
COMMENT ON FUNCTION rl_status_row(rl_policy, text, text, float8, timestamptz, float8) IS
	'one state row (stored key, '''' for NULL; stored_prev NaN for NULL) brought forward to now under a policy; used by the view rl_status';
REVOKE ALL ON FUNCTION rl_status_row(rl_policy, text, text, float8, timestamptz, float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rl_status_row(rl_policy, text, text, float8, timestamptz, float8) TO PUBLIC;

-- Monitoring.  Reads without locking; not granted to PUBLIC, since it
-- lists every key (user ids, addresses) the limiter has seen.
CREATE VIEW rl_status AS
SELECT pg_catalog.split_part(s.name, E'\x1f', 1) AS name,
	NULLIF(s.key, '') AS key,
	s.shard,
	(p.p).kind,
	(p.p).rate,
	(p.p).period,
	(p.p).capacity,
	(p.p).shards,
	n.value,
	n.ts,
	n.remaining,
	n.reset_after,
	n.idle,
	s.value AS stored_value,
	s.ts AS stored_ts,
	(p.p).max_reserved,
	(p.p).start,
	(p.p).time_zone,
	s.prev AS stored_prev,
	o.plan
FROM ONLY rate_limits s
LEFT JOIN ONLY rl_definitions d ON d.name OPERATOR(pg_catalog.=) s.name
LEFT JOIN ONLY rl_overrides o ON o.name OPERATOR(pg_catalog.=) d.name
	AND o.key OPERATOR(pg_catalog.=) s.key
LEFT JOIN ONLY rl_plans pl ON pl.name OPERATOR(pg_catalog.=) o.name
	AND pl.plan OPERATOR(pg_catalog.=) o.plan
CROSS JOIN LATERAL (SELECT CASE WHEN o.name IS NOT NULL THEN
		ROW(d.kind, COALESCE(o.rate, pl.rate),
			COALESCE(o.period, pl.period, d.period),
			COALESCE(o.capacity, pl.capacity),
			COALESCE(o.max_reserved, pl.max_reserved), d.shards, d.start,
			d.storage, d.time_zone)::rl_policy
	WHEN d.name IS NOT NULL THEN
		ROW(d.kind, d.rate, d.period, d.capacity, d.max_reserved, d.shards,
			d.start, d.storage, d.time_zone)::rl_policy
	ELSE rl_inline_policy(s.name)
	END AS p) p
LEFT JOIN LATERAL rl_status_row(p.p, s.name, s.key, s.value, s.ts,
	COALESCE(s.prev, 'NaN'::pg_catalog.float8)) n ON true;
COMMENT ON VIEW rl_status IS
	'every stored (name, key, shard) with its definition and its state brought forward to now; locks nothing';
COMMENT ON COLUMN rl_status.key IS 'the key; NULL for the limit shared by the whole name';
COMMENT ON COLUMN rl_status.shard IS 'the shard, 0 for an unsharded limit';
COMMENT ON COLUMN rl_status.capacity IS 'the whole limit''s capacity (a shard holds capacity / shards)';
COMMENT ON COLUMN rl_status.value IS 'tokens now (negative while a reservation is outstanding; a sliding window: what a call could take now); NULL for a row with no known policy (a name used with an inline config before 1.3)';
COMMENT ON COLUMN rl_status.name IS 'the limit''s name; the rows of each inline policy used with it are told apart by the policy columns';
COMMENT ON COLUMN rl_status.max_reserved IS 'how far below zero reservations may go; NULL for no bound of its own';
COMMENT ON COLUMN rl_status.start IS 'fixed and sliding window: a window start given with the policy; NULL for a phase derived from the name and key';
COMMENT ON COLUMN rl_status.time_zone IS 'fixed window: the time zone of its calendar windows; NULL for windows of a period';
COMMENT ON COLUMN rl_status.ts IS 'the time value is counted at';
COMMENT ON COLUMN rl_status.remaining IS 'tokens a call could take now without reserving';
COMMENT ON COLUMN rl_status.reset_after IS 'token bucket and sliding window: until full again; fixed window: until the next window';
COMMENT ON COLUMN rl_status.idle IS 'full, so rl_gc would delete the row without changing any answer';
COMMENT ON COLUMN rl_status.stored_value IS 'value as stored in rate_limits';
COMMENT ON COLUMN rl_status.stored_ts IS 'ts as stored in rate_limits';
COMMENT ON COLUMN rl_status.stored_prev IS 'sliding window: prev as stored in rate_limits, the count of the window before ts''s; NULL for the other kinds';
COMMENT ON COLUMN rl_status.plan IS 'the plan the key is assigned to (rl_assign); NULL for none';
REVOKE ALL ON rl_status FROM PUBLIC;
