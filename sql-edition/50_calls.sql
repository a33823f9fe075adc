-- The per-key calls: rl_limit, rl_check, rl_value, rl_reset.  A call
-- checks its arguments before it reads or writes anything, finds its
-- policy (a definition, or an inline config whose state has a name of its
-- own), and decides with the algebra at a time read after its row lock.
--
-- Locking: a consuming call locks its key's row FOR NO KEY UPDATE, then
-- reads the definition again (it may have changed while the call waited)
-- and the clock, decides, and writes in the caller's transaction, so two
-- sessions never both take the last token and a rollback returns what the
-- call took.  A key without a row is inserted by the call that is granted
-- (ON CONFLICT DO NOTHING); when another transaction inserted it first,
-- the call locks that row and decides again.  rl_check and rl_value lock
-- nothing.

-- rl_target_init: check a name and a key (NULL: the key shared by the name).
CREATE FUNCTION _rl_check_name_key(name text, key text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF name IS NULL THEN
		RAISE EXCEPTION 'name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF name = '' THEN
		RAISE EXCEPTION 'rate limit name must not be empty'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF pg_catalog.octet_length(name) > 256 THEN
		RAISE EXCEPTION 'rate limit name is too long'
			USING ERRCODE = 'program_limit_exceeded',
			DETAIL = pg_catalog.format('The name is %s bytes; the limit is 256.', pg_catalog.octet_length(name));
	END IF;
	IF pg_catalog.strpos(name, E'\x1f') > 0 THEN
		RAISE EXCEPTION 'rate limit name must not contain the character U+001F'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = 'It separates a name from its inline policy in stored state.';
	END IF;
	IF key = '' THEN
		RAISE EXCEPTION 'rate limit key must not be empty'
			USING ERRCODE = 'invalid_parameter_value',
			HINT = 'Pass NULL as the key for the limit shared by the whole name.';
	END IF;
	IF pg_catalog.octet_length(key) > 1024 THEN
		RAISE EXCEPTION 'rate limit key is too long'
			USING ERRCODE = 'program_limit_exceeded',
			DETAIL = pg_catalog.format('The key is %s bytes; the limit is 1024.', pg_catalog.octet_length(key));
	END IF;
END
$$;

-- Whether _rl_check_name_key would raise: LANGUAGE sql, so that rl_limit
-- calls nothing for a name and a key that are fine.
CREATE FUNCTION _rl_name_key_bad(name text, key text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT name IS NULL OR name = '' OR pg_catalog.octet_length(name) > 256
	OR pg_catalog.strpos(name, E'\x1f') > 0
	OR (key IS NOT NULL AND (key = '' OR pg_catalog.octet_length(key) > 1024))$$;

-- rl_inet_key: an inet key as the text of its host address, an
-- IPv4-mapped IPv6 address (::ffff:0:0/96) as its IPv4 address, as
-- src/access.c keys it; an inet with a netmask is refused.
CREATE FUNCTION _rl_inet_key(key inet)
RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT
AS $$
BEGIN
	IF (pg_catalog.masklen(key) <> CASE pg_catalog.family(key) WHEN 4 THEN 32 ELSE 128 END) THEN
		RAISE EXCEPTION 'an inet rate limit key must be a host address'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('The key has a netmask of %s bits.', pg_catalog.masklen(key)),
			HINT = 'Pass the caller''s address; define the limit with ipv4_prefix or ipv6_prefix to count its network as one key.';
	END IF;
	IF key OPERATOR(pg_catalog.<<) '::ffff:0:0/96'::inet THEN
		RETURN pg_catalog.host('0.0.0.0'::inet OPERATOR(pg_catalog.+)
			(key OPERATOR(pg_catalog.-) '::ffff:0.0.0.0'::inet));
	END IF;
	RETURN pg_catalog.host(key);
END
$$;

-- A call's limit: its label (the name called), the name its state is
-- stored under, its definition's row (NULL for an inline config) and its
-- policy.
CREATE TYPE _rl_target AS (
	label text,
	stored text,
	key text,
	defined boolean,
	definition rl_definitions,
	policy _rl_policy
);

-- The definition row of a name (all NULL for none).  READ COMMITTED reads
-- the newest committed row, as the C edition does.  A REPEATABLE READ or
-- SERIALIZABLE transaction reads it as of its snapshot; a call that writes
-- (writing) then locks it FOR SHARE, which fails with 40001 when the row
-- was changed or deleted since the snapshot: a call never consumes under
-- a definition that is no longer the newest.  (FOR KEY SHARE would not
-- fail: rl_define changes no key column.)  rl_define and rl_undefine of
-- the name wait for such a transaction to end.
CREATE FUNCTION _rl_definition_row(name text, writing boolean)
RETURNS rl_definitions
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	d rl_definitions;
BEGIN
	IF writing AND pg_catalog.current_setting('transaction_isolation') <> 'read committed'
			AND pg_catalog.current_setting('transaction_read_only') = 'off' THEN
		SELECT * INTO d FROM ONLY rl_definitions
		WHERE rl_definitions.name = _rl_definition_row.name FOR SHARE;
	ELSE
		SELECT * INTO d FROM ONLY rl_definitions WHERE rl_definitions.name = _rl_definition_row.name;
	END IF;
	RETURN d;
END
$$;

-- The policy of a definition row with its options, or NULL for no
-- definition; what the SQL edition does not have yet is refused (0A000).
CREATE FUNCTION _rl_definition(d rl_definitions)
RETURNS _rl_policy
LANGUAGE plpgsql STABLE
AS $$
BEGIN
	IF d.name IS NULL THEN
		RETURN NULL;
	END IF;
	IF d.ipv4_prefix IS NOT NULL OR d.ipv6_prefix IS NOT NULL THEN
		RAISE EXCEPTION 'rate limit "%" uses an address prefix, which the SQL edition of ratelimit does not have yet', d.name
			USING ERRCODE = 'feature_not_supported',
			HINT = 'Define it without them, or use the C edition.';
	END IF;
	RETURN _rl_definition_debt(d, _rl_definition_options(d, _rl_policy_of(d.kind,
		d.rate, d.period, d.capacity, d.max_reserved, d.shards, d.start, d.storage,
		d.time_zone)));
END
$$;

-- rl_target_require_rate: a concurrency limit has no tokens to take.
CREATE FUNCTION _rl_require_rate(t _rl_target)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF (t.policy).kind NOT IN ('concurrency', 'concurrency lease') THEN
		RETURN;
	END IF;
	IF NOT t.defined THEN
		RAISE EXCEPTION 'an inline config cannot be a concurrency limit'
			USING ERRCODE = 'invalid_parameter_value',
			HINT = 'Define it with rl_define_concurrency() and call rl_acquire() or rl_lease().';
	END IF;
	RAISE EXCEPTION 'rate limit "%" is a concurrency limit', t.label
		USING ERRCODE = 'wrong_object_type',
		HINT = pg_catalog.format('Take its permits with %s.',
			CASE WHEN (t.policy).kind = 'concurrency' THEN 'rl_acquire()' ELSE 'rl_lease()' END);
END
$$;

-- resolve (src/target.c): the definition, or the inline config for a name
-- that has none.  for_reset: NULL, rather than an error, for a name with
-- neither, and a concurrency limit is not refused.  writing: the call
-- writes state (see _rl_definition_row).  A key with an override has it
-- in its policy (_rl_with_override).
CREATE FUNCTION _rl_resolve(name text, key text, config rl_policy,
	for_reset boolean, writing boolean)
RETURNS _rl_target
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target;
BEGIN
	t.label := name;
	t.key := key;
	t.definition := _rl_definition_row(name, writing);
	t.policy := _rl_definition(t.definition);
	t.defined := (t.policy).kind IS NOT NULL;
	IF config IS DISTINCT FROM NULL THEN
		IF t.defined THEN
			RAISE EXCEPTION 'rate limit "%" is already defined', name
				USING ERRCODE = 'duplicate_object',
				DETAIL = 'An inline config would apply a second policy to the same state.',
				HINT = 'Call it without config, or use another name.';
		END IF;
		t.policy := _rl_policy_of(config.kind, config.rate, config.period,
			CASE WHEN config.capacity IS NULL THEN config.rate ELSE config.capacity END,
			config.max_reserved, config.shards, config.start,
			COALESCE(config.storage, 'table'), config.time_zone);
	ELSIF NOT t.defined THEN
		IF for_reset THEN
			RETURN NULL;
		END IF;
		RAISE EXCEPTION 'rate limit "%" does not exist', name
			USING ERRCODE = 'undefined_object',
			DETAIL = 'No limit of that name is defined, and the call''s config is NULL.',
			HINT = 'Define it with rl_define(), or pass an inline config.';
	END IF;
	IF NOT for_reset AND (t.policy).kind IN ('concurrency', 'concurrency lease') THEN
		PERFORM _rl_require_rate(t);
	END IF;
	t.policy := _rl_with_override(t, for_reset);
	t.stored := CASE WHEN config IS DISTINCT FROM NULL
		THEN _rl_inline_row_name(name, t.policy) ELSE name END;
	RETURN t;
END
$$;

-- reread (src/target.c): once a call holds its row, the definition as it
-- is now; a call never decides under a definition that no longer exists.
-- An unchanged row keeps the policy already checked.
CREATE FUNCTION _rl_reread(t _rl_target)
RETURNS _rl_target
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	d rl_definitions := _rl_definition_row(t.label, true);
	now_policy _rl_policy;
BEGIN
	IF NOT t.defined THEN
		IF d.name IS NOT NULL THEN
			RAISE EXCEPTION 'rate limit "%" is already defined', t.label
				USING ERRCODE = 'duplicate_object',
				DETAIL = 'It was defined while the call waited for its state; an inline config would apply a second policy to the same state.';
		END IF;
		RETURN t;
	END IF;
	-- OPERATOR(pg_catalog.=): an "=" on rl_definitions made in the schema
	-- would win over pg_catalog's record comparison.  A NULL name is no
	-- row (name is the primary key): a test that prints neither row.
	IF (CASE WHEN d.name IS NULL OR (t.definition).name IS NULL
		THEN d.name IS NULL AND (t.definition).name IS NULL
		ELSE d OPERATOR(pg_catalog.=) t.definition END) THEN
		t.policy := _rl_with_override(t, false);
		RETURN t;
	END IF;
	t.definition := d;
	now_policy := _rl_definition(d);
	IF now_policy.kind IS NULL THEN
		RAISE EXCEPTION 'rate limit "%" does not exist', t.label
			USING ERRCODE = 'undefined_object',
			DETAIL = 'It was undefined while the call waited for its state.';
	END IF;
	t.policy := now_policy;
	IF now_policy.kind IN ('concurrency', 'concurrency lease') THEN
		PERFORM _rl_require_rate(t);
	END IF;
	t.policy := _rl_with_override(t, false);
	RETURN t;
END
$$;

-- set_origin: a call's window origin.  A token bucket has no windows,
-- and reads no origin: its hash is not computed.
CREATE FUNCTION _rl_origin(t _rl_target, key text)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$SELECT CASE WHEN (t.policy).kind = 'token bucket' THEN 0
	ELSE _rl_window_origin(t.policy, t.label, key) END$$;

-- rl_target_check_count: refuse a count the limit can never grant.
CREATE FUNCTION _rl_check_count(p _rl_policy, count float8, reserve boolean)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
	problem text := _rl_count_problem(p, count, reserve);
BEGIN
	IF problem IS NULL THEN
		RETURN;
	END IF;
	IF p.max_debt IS NOT NULL THEN
		RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value',
			DETAIL = CASE WHEN reserve
				THEN 'Under max_debt a call may take the key below zero without a reservation.'
				ELSE pg_catalog.format('The count is %s; the capacity is %s and max_debt is %s.',
					_rl_printf_g(count, 6), _rl_printf_g(p.capacity, 6), _rl_printf_g(p.max_debt, 6)) END;
	END IF;
	IF reserve AND p.kind = 'sliding window' THEN
		RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value',
			DETAIL = 'A call counts in the window it is made in; a reservation would count in one not yet begun.';
	END IF;
	IF p.shards > 1 THEN
		RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('The count is %s; each of the %s shards holds %s.',
				_rl_printf_g(count, 6), p.shards, _rl_printf_g(p.capacity / p.shards::float8, 6));
	END IF;
	IF reserve AND p.max_reserved IS NULL THEN
		RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('The count is %s; the capacity is %s, and without max_reserved a reservation goes no deeper than %s below zero (the capacity, or less if the limit would take over 500 years to refill).',
				_rl_printf_g(count, 6), _rl_printf_g(p.capacity, 6), _rl_printf_g(_rl_reserve_depth(p), 6)),
			HINT = 'Deeper reservations need a max_reserved in the limit''s definition or inline policy.';
	END IF;
	IF NOT reserve THEN
		RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('The count is %s; the capacity is %s.',
				_rl_printf_g(count, 6), _rl_printf_g(p.capacity, 6));
	END IF;
	RAISE EXCEPTION '%', problem USING ERRCODE = 'invalid_parameter_value',
		DETAIL = pg_catalog.format('The count is %s; the capacity is %s and max_reserved is %s.',
			_rl_printf_g(count, 6), _rl_printf_g(p.capacity, 6), _rl_printf_g(p.max_reserved, 6));
END
$$;

-- PreventCommandIfReadOnly: the error an UPDATE would raise, named for
-- the call.
CREATE FUNCTION _rl_require_writable(cmdname text)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
	IF pg_catalog.current_setting('transaction_read_only') = 'on' THEN
		RAISE EXCEPTION 'cannot execute % in a read-only transaction', cmdname
			USING ERRCODE = 'read_only_sql_transaction';
	END IF;
END
$$;

-- A stored state that timestamptz cannot hold is refused before it is
-- written or returned (rl_check_state_time).
CREATE FUNCTION _rl_check_state_time(s _rl_stored, now bigint)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF NOT _rl_valid_time(s.ts) THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
END
$$;

-- The stored state of a row, NULL when there is none; locking = take the
-- row lock an UPDATE takes.
CREATE FUNCTION _rl_read(stored text, key text, locking boolean)
RETURNS _rl_stored
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	s _rl_stored;
BEGIN
	IF locking THEN
		SELECT r.value, _rl_us(r.ts), r.prev INTO s FROM ONLY rate_limits r
		WHERE r.name = stored AND r.key = COALESCE(_rl_read.key, '') AND r.shard = 0
		FOR NO KEY UPDATE;
	ELSE
		SELECT r.value, _rl_us(r.ts), r.prev INTO s FROM ONLY rate_limits r
		WHERE r.name = stored AND r.key = COALESCE(_rl_read.key, '') AND r.shard = 0;
	END IF;
	RETURN s;
END
$$;

-- required_bool: reserve, throws and jitter must be given.
CREATE FUNCTION _rl_require_flags(reserve boolean, throws boolean, jitter boolean)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF reserve IS NULL THEN
		RAISE EXCEPTION 'reserve must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF throws IS NULL THEN
		RAISE EXCEPTION 'throws must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF jitter IS NULL THEN
		RAISE EXCEPTION 'jitter must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
END
$$;

-- hold_rows: lock a key's row, a missing one first created full (which
-- is what no row means), and return its state.
CREATE FUNCTION _rl_hold(t _rl_target, key text)
RETURNS _rl_stored
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	s _rl_stored;
	now bigint;
BEGIN
	LOOP
		s := _rl_read(t.stored, key, true);
		EXIT WHEN s.ts IS NOT NULL;
		now := _rl_us(_rl_now());
		s := _rl_initial_state(t.policy, _rl_origin(t, key), now);
		PERFORM _rl_check_state_time(s, now);
		INSERT INTO rate_limits AS r (name, key, shard, value, ts, prev)
		VALUES (t.stored, COALESCE(_rl_hold.key, ''), 0, s.value, _rl_ts(s.ts), s.prev)
		ON CONFLICT DO NOTHING;
	END LOOP;
	RETURN s;
END
$$;

-- The rl_result of an answer (result_datum in src/functions.c): remaining
-- in whole tokens when the limit and the count are whole.
CREATE FUNCTION _rl_result(p _rl_policy, count float8, d _rl_decision)
RETURNS rl_result
LANGUAGE sql IMMUTABLE
AS $$
SELECT ROW(d.ok,
	CASE WHEN d.has_retry THEN _rl_interval(d.retry_after) END,
	CASE WHEN p.rate = pg_catalog.floor(p.rate) AND p.capacity = pg_catalog.floor(p.capacity)
			AND (p.max_reserved IS NULL OR p.max_reserved = pg_catalog.floor(p.max_reserved))
			AND (p.max_debt IS NULL OR p.max_debt = pg_catalog.floor(p.max_debt))
			AND count = pg_catalog.floor(count)
		THEN pg_catalog.floor(d.remaining) ELSE d.remaining END,
	_rl_interval(d.reset_after),
	p.capacity,
	d.ok AND (d.shadowed IS TRUE OR NOT d.has_retry OR d.retry_after <= 0),
	CASE WHEN d.has_retry THEN _rl_ceil_ms(d.retry_after) END,
	_rl_ceil_ms(d.reset_after),
	CASE WHEN d.ok THEN COALESCE(d.granted, count) ELSE 0 END)::rl_result
$$;

-- rl_limit and rl_check: decide a call, consuming or not.
CREATE FUNCTION _rl_limit_or_check(name text, key text, count float8,
	reserve boolean, throws boolean, config rl_policy, jitter boolean,
	wait interval, partial boolean, consuming boolean)
RETURNS rl_result
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target;
	s _rl_stored;
	d _rl_decision;
	now bigint;
	wait_us float8;
	n integer;
	sharded boolean := false;
BEGIN
	-- the checks below call their helper only to raise its error
	IF _rl_name_key_bad(name, key) IS NOT FALSE THEN
		PERFORM _rl_check_name_key(name, key);
	END IF;
	IF count IS NULL THEN
		RAISE EXCEPTION 'count must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF reserve IS NULL OR throws IS NULL OR jitter IS NULL THEN
		PERFORM _rl_require_flags(reserve, throws, jitter);
	END IF;
	IF consuming AND wait IS NOT NULL THEN
		wait_us := _rl_interval_usecs(wait);
		IF NOT (wait_us >= 0 AND wait_us <= 31557600000000000::float8) THEN
			RAISE EXCEPTION 'wait must be between 0 and 1000 years'
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
	END IF;
	IF consuming AND partial IS NULL THEN
		RAISE EXCEPTION 'partial must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF consuming AND partial AND reserve THEN
		RAISE EXCEPTION 'partial and reserve cannot be combined'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = 'A partial call takes only what the key holds now; a reservation takes what it does not hold yet.';
	END IF;
	IF consuming AND wait_us > 0::float8 THEN
		RAISE EXCEPTION 'rl_limit''s wait is not in the SQL edition of ratelimit yet'
			USING ERRCODE = 'feature_not_supported',
			HINT = 'Retry after retry_after in the application, or use the C edition.';
	END IF;
	t := _rl_resolve(name, key, config, false, consuming);
	IF consuming AND pg_catalog.current_setting('transaction_read_only') = 'on' THEN
		PERFORM _rl_require_writable('rl_limit()');
	END IF;
	PERFORM _rl_check_count(t.policy, _rl_partial_checked(t, count, consuming AND partial), reserve);
	IF (t.policy).shards > 1 THEN
		d := CASE WHEN consuming THEN _rl_consume_shards(t, key, count, reserve)
			ELSE _rl_peek_shards(t, key, count, reserve) END;
		sharded := true;
	END IF;
	WHILE NOT sharded LOOP
		s := _rl_read(t.stored, key, consuming);
		IF consuming THEN
			t := _rl_reread(t);
			PERFORM _rl_check_count(t.policy, _rl_partial_checked(t, count, partial), reserve);
		END IF;
		now := _rl_us(_rl_now());
		d := _rl_decide(CASE WHEN consuming AND partial THEN _rl_without_debt(t.policy)
			ELSE t.policy END, _rl_origin(t, key), s, now, CASE WHEN consuming AND partial
			THEN _rl_partial_count(t.policy, _rl_origin(t, key), s, now, count) ELSE count END, reserve);
		d.granted := CASE WHEN consuming AND partial
			THEN _rl_partial_count(t.policy, _rl_origin(t, key), s, now, count) END;
		EXIT WHEN NOT consuming OR NOT d.ok;
		IF NOT _rl_valid_time((d.state).ts) THEN
			PERFORM _rl_fail('time out of range', now);
		END IF;
		IF s.ts IS NOT NULL THEN
			UPDATE ONLY rate_limits r SET value = (d.state).value,
				ts = _rl_ts((d.state).ts), prev = (d.state).prev
			WHERE r.name = t.stored AND r.key = COALESCE(_rl_limit_or_check.key, '')
				AND r.shard = 0;
			EXIT;
		END IF;
		INSERT INTO rate_limits AS r (name, key, shard, value, ts, prev)
		VALUES (t.stored, COALESCE(_rl_limit_or_check.key, ''), 0, (d.state).value,
			_rl_ts((d.state).ts), (d.state).prev)
		ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS n = ROW_COUNT;
		EXIT WHEN n = 1;
		-- another transaction created the row and committed: lock it
	END LOOP;
	d := _rl_apply_shadow(t, d);
	IF NOT throws AND pg_catalog.current_setting('transaction_read_only') = 'off' THEN
		d := _rl_apply_block(t, key, count, reserve, d);
	END IF;
	IF jitter AND NOT d.ok THEN
		d.retry_after := d.retry_after + _rl_jitter((t.policy).period, pg_catalog.random());
	END IF;
	IF throws AND NOT d.ok THEN
		RAISE EXCEPTION 'rate limit "%" exceeded', name
			USING ERRCODE = 'RL001',
			DETAIL = CASE WHEN key IS NULL
				THEN pg_catalog.format('The shared limit has %s tokens; the call asked for %s.',
					_rl_printf_g(d.remaining, 6), _rl_printf_g(count, 6))
				ELSE pg_catalog.format('Key "%s" has %s tokens; the call asked for %s.',
					key, _rl_printf_g(d.remaining, 6), _rl_printf_g(count, 6)) END,
			HINT = pg_catalog.format('Retry after %s.', _rl_interval(d.retry_after));
	END IF;
	RETURN _rl_result(t.policy, count, d);
END
$$;

-- rl_value: the state brought forward to now (for a sliding window, what
-- a call could take now), locking nothing.
CREATE FUNCTION _rl_value(name text, key text, config rl_policy)
RETURNS rl_state
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
	PERFORM _rl_check_name_key(name, key);
	RETURN _rl_current(_rl_resolve(name, key, config, false, false), key);
END
$$;

-- rl_current (src/store_table.c table_current): a resolved key's state
-- brought forward to now, as rl_value reports it, locking nothing.
CREATE FUNCTION _rl_current(t _rl_target, key text)
RETURNS rl_state
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	s _rl_stored;
	total _rl_stored;
	origin bigint;
	now bigint;
BEGIN
	IF (t.policy).shards > 1 THEN
		RETURN _rl_current_shards(t, key);
	END IF;
	origin := _rl_origin(t, key);
	s := _rl_read(t.stored, key, false);
	now := _rl_us(_rl_now());
	IF s.ts IS NOT NULL THEN
		total := _rl_refill(t.policy, origin, s, now);
		total.value := _rl_available(t.policy, origin, s, now);
	ELSE
		total := _rl_initial_state(t.policy, origin, now);
		total.value := 0::float8 + (t.policy).capacity;
	END IF;
	PERFORM _rl_check_state_time(total, now);
	RETURN ROW(total.value, _rl_ts(total.ts))::rl_state;
END
$$;

-- rl_reset: forget one key's state.  With a config, the state rl_limit
-- with that config uses; without, a defined limit's key or the key under
-- every inline policy of the name.
CREATE FUNCTION _rl_reset(name text, key text, config rl_policy)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target;
	n bigint;
BEGIN
	PERFORM _rl_check_name_key(name, key);
	t := _rl_resolve(name, key, config, true, false);
	PERFORM _rl_require_writable('rl_reset()');
	IF t.label IS NOT NULL AND config IS DISTINCT FROM NULL THEN
		DELETE FROM ONLY rate_limits r
		WHERE r.name = t.stored AND r.key = COALESCE(_rl_reset.key, '');
		RETURN;
	END IF;
	DELETE FROM ONLY rate_limits r
	WHERE r.key = COALESCE(_rl_reset.key, '')
		AND (r.name = _rl_reset.name
			OR (r.name > _rl_reset.name || E'\x1f' AND r.name < _rl_reset.name || E'\x20'));
	GET DIAGNOSTICS n = ROW_COUNT;
	IF t.label IS NULL AND n = 0 THEN
		RAISE EXCEPTION 'rate limit "%" does not exist', name
			USING ERRCODE = 'undefined_object',
			DETAIL = 'No limit of that name is defined, and no inline config of that name has state for the key.',
			HINT = 'Reset a key of an inline config with storage ''memory'' by passing its config.';
	END IF;
	-- a fresh key owes nothing for the refills it had (rl_moves)
	IF config IS NULL AND key IS NOT NULL THEN
		DELETE FROM ONLY rl_moves m WHERE m.name = _rl_reset.name AND m.key = _rl_reset.key;
	END IF;
END
$$;

-- rl_refund, rl_penalize and rl_block: hold the key's row (a missing one
-- is first created full, which is what no row means), read the definition
-- again and the clock, and write the adjusted state (src/store_table.c,
-- table_adjust).  The count is never checked against the capacity: a
-- refund is capped there, a penalty may exceed it.
CREATE FUNCTION _rl_adjust(adjustment text, name text, key text,
	amount float8, duration interval, config rl_policy)
RETURNS rl_state
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target;
	r record;
	usecs float8;
	dur bigint := 0;
BEGIN
	PERFORM _rl_check_name_key(name, key);
	IF adjustment = 'block' THEN
		IF duration IS NULL THEN
			RAISE EXCEPTION 'duration must not be null' USING ERRCODE = 'null_value_not_allowed';
		END IF;
		usecs := _rl_interval_usecs(duration);
		IF NOT (usecs >= 1::float8 AND usecs <= 31557600000000000::float8) THEN
			RAISE EXCEPTION 'duration must be greater than zero and at most 1000 years'
				USING ERRCODE = 'invalid_parameter_value',
				HINT = 'rl_reset() lifts a block.';
		END IF;
		dur := pg_catalog.trunc(usecs)::bigint;
	ELSE
		IF amount IS NULL THEN
			RAISE EXCEPTION 'count must not be null' USING ERRCODE = 'null_value_not_allowed';
		END IF;
		IF NOT (amount > 0::float8 AND amount <= 1e15::float8) THEN
			RAISE EXCEPTION 'count must be a finite number greater than zero and at most 1e15'
				USING ERRCODE = 'invalid_parameter_value',
				DETAIL = pg_catalog.format('The count is %s.', _rl_printf_g(amount, 6));
		END IF;
	END IF;
	t := _rl_resolve(name, key, config, false, true);
	PERFORM _rl_require_writable('rl_' || adjustment || '()');
	IF (t.policy).shards > 1 THEN
		RETURN _rl_adjust_shards(t, key, adjustment, amount, dur);
	END IF;
	SELECT * INTO r FROM _rl_adjust_row(t, key, adjustment, amount, dur);
	RETURN ROW((r.state).value, _rl_ts((r.state).ts))::rl_state;
END
$$;

-- table_adjust of an unsharded key: hold its row (a missing one is first
-- created full), read the definition again (target: the target then) and
-- the clock, and write the adjusted state; charged: what a settlement's
-- charge took (_rl_charge_state), the amount for the others.
CREATE FUNCTION _rl_adjust_row(t _rl_target, key text, adjustment text,
	amount float8, dur bigint, OUT target _rl_target, OUT state _rl_stored,
	OUT charged float8)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	s _rl_stored;
	now bigint;
	c record;
BEGIN
	s := _rl_hold(t, key);
	target := _rl_reread(t);
	now := _rl_us(_rl_now());
	IF adjustment = 'charge' THEN
		SELECT * INTO c
		FROM _rl_charge_state(target.policy, _rl_origin(target, key), s, now, amount);
		state := c.state;
		charged := c.charged;
	ELSE
		state := _rl_adjust_state(target.policy, _rl_origin(target, key), adjustment,
			s, now, amount, dur);
		charged := amount;
	END IF;
	PERFORM _rl_check_state_time(state, now);
	UPDATE ONLY rate_limits r SET value = state.value, ts = _rl_ts(state.ts), prev = state.prev
	WHERE r.name = target.stored AND r.key = COALESCE(_rl_adjust_row.key, '') AND r.shard = 0;
END
$$;

-- One of rl_settle's costs (src/functions.c settle_cost): a finite number
-- from zero to 1e15.
CREATE FUNCTION _rl_settle_cost(cost float8, argname text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF cost IS NULL THEN
		RAISE EXCEPTION '% must not be null', argname USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT (cost >= 0::float8 AND cost <= 1e15::float8) THEN
		RAISE EXCEPTION '% must be a finite number between zero and 1e15', argname
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('The %s cost is %s.', argname, _rl_printf_g(cost, 6));
	END IF;
END
$$;

-- rl_settle (src/limit.c rl_settle_key): a call admitted on estimated
-- turned out to cost actual.  The difference is taken (a charge: below
-- zero too, never past -max_debt) or given back (a return: never above
-- capacity, nothing while the key is blocked), in one step under the
-- key's lock, in the caller's transaction.  unsettled: what a charge
-- could not take at the bound of max_debt (0 otherwise).  The SQL
-- edition has no allow lists, so every address is settled.
CREATE FUNCTION _rl_settle(name text, key text, estimated float8,
	actual float8, config rl_policy,
	OUT value float8, OUT ts timestamptz, OUT unsettled float8)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t _rl_target;
	difference float8;
	r record;
	st rl_state;
BEGIN
	PERFORM _rl_check_name_key(name, key);
	PERFORM _rl_settle_cost(estimated, 'estimated');
	PERFORM _rl_settle_cost(actual, 'actual');
	t := _rl_resolve(name, key, config, false, true);
	PERFORM _rl_require_writable('rl_settle()');
	difference := actual - estimated;
	unsettled := 0;
	IF difference = 0::float8 THEN
		st := _rl_current(t, key);
	ELSIF (t.policy).shards > 1 THEN
		st := _rl_adjust_shards(t, key,
			CASE WHEN difference > 0::float8 THEN 'charge' ELSE 'return' END,
			pg_catalog.abs(difference), 0::bigint);
	ELSE
		SELECT * INTO r FROM _rl_adjust_row(t, key,
			CASE WHEN difference > 0::float8 THEN 'charge' ELSE 'return' END,
			pg_catalog.abs(difference), 0::bigint);
		st := ROW((r.state).value, _rl_ts((r.state).ts))::rl_state;
		IF difference > 0::float8 AND ((r.target).policy).max_debt IS NOT NULL THEN
			unsettled := difference - r.charged;
		END IF;
	END IF;
	value := st.value;
	ts := st.ts;
END
$$;
