-- Shards: a limit's rate, capacity and max_reserved split evenly over N
-- rows of one key (src/algebra.c rl_policy_shard, rl_decide_shards; the
-- table store's picks, src/store_table.c; rl_refund_spread, src/adjust.c).
--
-- A call probes up to 8 of the key's shards in random order, each read
-- without a lock, and takes the first that serves it alone (its tokens,
-- brought forward to now, cover the count) and that it can lock without
-- waiting; a missing shard is full, and the lowest missing one is created
-- in its place.  When none serves alone, the two fullest probed decide the
-- call together and, when they would grant it, are locked and decide it
-- again.  When the shards that could serve it are in use by other
-- transactions, a call locks a pair without waiting, or waits for the
-- fuller of a pair only when its transaction holds no shard of the key
-- (held.c; here a transaction-local setting, undone with the locks by a
-- rollback to a savepoint); else it is refused, with retry_after zero
-- when the busy shards could serve it.  Refunds, penalties and blocks
-- hold every shard, waiting in ascending shard order, so two of them
-- queue rather than deadlock.

-- A decision over the one or two shards a call holds (RlShardDecision).
CREATE TYPE _rl_shard_decision AS (
	ok boolean,
	has_retry boolean,
	retry_after bigint,
	remaining float8,
	reset_after bigint,
	write boolean[],
	state _rl_stored[]
);

-- rl_policy_shard: the policy each shard enforces.
CREATE FUNCTION _rl_policy_shard(p _rl_policy)
RETURNS _rl_policy
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
	p.rate := p.rate / p.shards::float8;
	p.capacity := p.capacity / p.shards::float8;
	p.max_reserved := p.max_reserved / p.shards::float8;
	p.shards := 1;
	RETURN p;
END
$$;

-- sum_at: the tokens a set of shards holds at t, left alone.
CREATE FUNCTION _rl_sum_at(p _rl_policy, origin bigint, states _rl_stored[], t bigint)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	total float8 := 0;
BEGIN
	FOR i IN 1 .. pg_catalog.array_length(states, 1) LOOP
		total := total + (_rl_refill(p, origin, states[i], t)).value;
	END LOOP;
	RETURN total;
END
$$;

-- wait_for_sum: the first microsecond from now at which the shards, left
-- alone, hold target tokens together (a bisection); -1 when not within
-- RL_MAX_WAIT (RL_WAIT_TOO_LONG), -2 when not before RL_END_TIME
-- (RL_TIME_OUT_OF_RANGE).
CREATE FUNCTION _rl_wait_for_sum(p _rl_policy, origin bigint, states _rl_stored[],
	target float8, now bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	lo bigint := now;
	hi bigint := _rl_add_before_end(now, 31557600000000000);
	cut boolean := hi IS NULL;
	mid bigint;
BEGIN
	IF _rl_sum_at(p, origin, states, lo) >= target THEN
		RETURN 0;
	END IF;
	IF cut THEN
		hi := 9223371331200000000 - 1;
	END IF;
	IF _rl_sum_at(p, origin, states, hi) < target THEN
		RETURN CASE WHEN cut THEN -2 ELSE -1 END;
	END IF;
	WHILE hi - lo > 1 LOOP
		mid := lo + (hi - lo) / 2;
		IF _rl_sum_at(p, origin, states, mid) >= target THEN
			hi := mid;
		ELSE
			lo := mid;
		END IF;
	END LOOP;
	RETURN hi - now;
END
$$;

-- _rl_wait_for_sum, failing where it has no answer.
CREATE FUNCTION _rl_wait_sum_to(p _rl_policy, origin bigint, states _rl_stored[],
	target float8, now bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	w bigint := _rl_wait_for_sum(p, origin, states, target, now);
BEGIN
	IF w = -1 THEN
		PERFORM _rl_fail('wait too long', now);
	ELSIF w = -2 THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	RETURN w;
END
$$;

-- rl_decide_shards: a call decided over the shards it holds (one, or
-- two), with the per-shard policy.  The fuller shard serves the call when
-- it can alone; otherwise both do, left balanced; a refusal reports the
-- shortest wait after which one shard, or both together, could serve it.
-- A state whose ts is NULL is a shard with no stored state.
CREATE FUNCTION _rl_decide_shards(p _rl_policy, origin bigint, states _rl_stored[],
	now bigint, count float8, reserve boolean)
RETURNS _rl_shard_decision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	d _rl_shard_decision;
	one _rl_decision;
	cur _rl_stored[];
	stored _rl_stored[];
	st _rl_stored[];
	wr boolean[] := ARRAY[false, false];
	x _rl_stored;
	floor_value float8;
	total float8;
	best integer;
	w bigint;
	any_found boolean := false;
	last_status bigint;
BEGIN
	IF NOT _rl_valid_time(now) THEN
		PERFORM _rl_fail('time out of range', now);
	END IF;
	FOR i IN 1 .. pg_catalog.array_length(states, 1) LOOP
		IF (states[i]).ts IS NOT NULL AND NOT _rl_valid_time((states[i]).ts) THEN
			PERFORM _rl_fail('time out of range', now);
		END IF;
	END LOOP;
	IF pg_catalog.array_length(states, 1) = 1 THEN
		one := _rl_decide(p, origin, states[1], now, count, reserve);
		RETURN ROW(one.ok, one.has_retry, one.retry_after, one.remaining,
			one.reset_after, ARRAY[one.ok], ARRAY[one.state])::_rl_shard_decision;
	END IF;
	FOR i IN 1 .. 2 LOOP
		cur[i] := CASE WHEN (states[i]).ts IS NOT NULL
			THEN _rl_refill(p, origin, states[i], now)
			ELSE _rl_initial_state(p, origin, now) END;
	END LOOP;
	best := CASE WHEN (cur[1]).value >= (cur[2]).value THEN 1 ELSE 2 END;
	total := (cur[1]).value + (cur[2]).value - count;
	floor_value := CASE WHEN reserve THEN -_rl_reserve_depth(p) ELSE 0::float8 END;
	d.ok := false;
	d.retry_after := 0;
	st := cur;
	IF (cur[best]).value - count >= 0::float8 THEN
		d.ok := true;
		wr[best] := true;
		x := cur[best];
		x.value := x.value - count;
		st[best] := x;
	ELSIF (cur[1]).value + (cur[2]).value >= count + 2::float8 * floor_value THEN
		-- both shards serve it, and are left holding the same
		d.ok := true;
		wr := ARRAY[true, true];
		FOR i IN 1 .. 2 LOOP
			x := cur[i];
			x.value := total / 2::float8;
			st[i] := x;
		END LOOP;
	END IF;
	d.write := wr;
	d.state := st;
	IF d.ok THEN
		d.remaining := (d.state[1]).value + (d.state[2]).value;
		d.has_retry := d.remaining < 0::float8;
		IF d.has_retry THEN
			-- a balanced reservation: both shards pay it back together
			d.retry_after := _rl_wait_sum_to(p, origin, d.state, 0::float8, now);
		END IF;
	ELSE
		FOR i IN 1 .. 2 LOOP
			stored[i] := CASE WHEN (states[i]).ts IS NOT NULL THEN states[i] ELSE cur[i] END;
		END LOOP;
		d.remaining := (cur[1]).value + (cur[2]).value;
		d.has_retry := true;
		IF count + floor_value <= p.capacity THEN
			FOR i IN 1 .. 2 LOOP
				w := _rl_wait_for_sum(p, origin, ARRAY[stored[i]], count + floor_value, now);
				last_status := w;
				IF w >= 0 AND (NOT any_found OR w < d.retry_after) THEN
					d.retry_after := w;
					any_found := true;
				END IF;
			END LOOP;
		END IF;
		w := _rl_wait_for_sum(p, origin, stored, count + 2::float8 * floor_value, now);
		last_status := w;
		IF w >= 0 AND (NOT any_found OR w < d.retry_after) THEN
			d.retry_after := w;
			any_found := true;
		END IF;
		-- every search failed for the same reason: they share now
		IF NOT any_found THEN
			PERFORM _rl_fail(CASE WHEN last_status = -1 THEN 'wait too long' ELSE 'time out of range' END, now);
		END IF;
	END IF;
	IF p.kind = 'token bucket' THEN
		d.reset_after := _rl_wait_sum_to(p, origin, CASE WHEN d.ok THEN d.state ELSE cur END,
			2::float8 * p.capacity, now);
	ELSE
		d.reset_after := _rl_window_reset(p, origin, now);
	END IF;
	RETURN d;
END
$$;

-- The answer of a shard decision, as a decision (for _rl_result).
CREATE FUNCTION _rl_shard_answer(d _rl_shard_decision)
RETURNS _rl_decision
LANGUAGE sql IMMUTABLE
AS $$SELECT ROW(d.ok, d.has_retry, d.retry_after, d.remaining, d.reset_after,
	NULL::_rl_stored, false, NULL::float8)::_rl_decision$$;

-- rl_storage_read_shards: every shard's stored state, by shard (index
-- shard + 1); ts NULL for a shard with no row.
CREATE FUNCTION _rl_read_shards(stored text, key text, nshards integer)
RETURNS _rl_stored[]
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	states _rl_stored[];
	r record;
BEGIN
	FOR i IN 1 .. nshards LOOP
		states[i] := ROW(NULL, NULL, NULL)::_rl_stored;
	END LOOP;
	FOR r IN SELECT s.shard, s.value, _rl_us(s.ts) AS ts, s.prev FROM ONLY rate_limits s
		WHERE s.name = stored AND s.key = COALESCE(_rl_read_shards.key, '')
			AND s.shard < nshards::smallint
	LOOP
		states[r.shard + 1] := ROW(r.value, r.ts, r.prev)::_rl_stored;
	END LOOP;
	RETURN states;
END
$$;

-- shard_value: a shard's tokens brought forward to now; a missing one is
-- full.
CREATE FUNCTION _rl_shard_value(p _rl_policy, origin bigint, s _rl_stored, now bigint)
RETURNS float8
LANGUAGE sql IMMUTABLE
AS $$SELECT CASE WHEN s.ts IS NULL THEN p.capacity
	ELSE (_rl_refill(p, origin, s, now)).value END$$;

-- A key's tag in the setting that lists the shards a transaction holds
-- (entries tag/shard, each ended by a comma).
CREATE FUNCTION _rl_held_tag(t _rl_target, key text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$SELECT pg_catalog.md5(t.stored || E'\x1f' || COALESCE(key, ''))$$;

-- rl_held_note: the transaction holds a shard of the key.
CREATE FUNCTION _rl_note_held(t _rl_target, key text, shard integer)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	held text := COALESCE(pg_catalog.current_setting('ratelimit_sql.held_shards', true), '');
	entry text := _rl_held_tag(t, key) || '/' || shard::text || ',';
BEGIN
	IF pg_catalog.strpos(held, entry) = 0 THEN
		PERFORM pg_catalog.set_config('ratelimit_sql.held_shards', held || entry, true);
	END IF;
END
$$;

-- rl_held_highest: the highest shard of the key, below its number of
-- shards, the transaction holds; -1 for none.
CREATE FUNCTION _rl_held_highest(t _rl_target, key text)
RETURNS integer
LANGUAGE sql STABLE
AS $$SELECT COALESCE(pg_catalog.max(m.a[1]::integer)
	FILTER (WHERE m.a[1]::integer < (t.policy).shards), -1)
	FROM pg_catalog.regexp_matches(COALESCE(pg_catalog.current_setting('ratelimit_sql.held_shards', true), ''),
		_rl_held_tag(t, key) || '/([0-9]+),', 'g') AS m(a)$$;

-- The transaction holds a shard of the key.
CREATE FUNCTION _rl_holds_key(t _rl_target, key text)
RETURNS boolean
LANGUAGE sql STABLE
AS $$SELECT _rl_held_highest(t, key) >= 0$$;

-- The two fullest of a set of shards, brought forward to now, as indexes
-- into states; a tie goes to the earlier (table_peek, fullest_probe).
CREATE FUNCTION _rl_two_fullest(sp _rl_policy, origin bigint, states _rl_stored[], now bigint)
RETURNS integer[]
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
	a integer;
	b integer;
	va float8;
	vb float8;
	v float8;
BEGIN
	FOR i IN 1 .. pg_catalog.array_length(states, 1) LOOP
		v := _rl_shard_value(sp, origin, states[i], now);
		IF a IS NULL OR v > va THEN
			b := a;
			vb := va;
			a := i;
			va := v;
		ELSIF b IS NULL OR v > vb THEN
			b := i;
			vb := v;
		END IF;
	END LOOP;
	RETURN ARRAY[a, b];
END
$$;

-- try_hold_shard: lock one shard without waiting, creating it full when
-- it has no row; its state, or NULL when another transaction holds it.
CREATE FUNCTION _rl_try_hold_shard(t _rl_target, key text, shard integer)
RETURNS _rl_stored
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	s _rl_stored;
	now bigint;
BEGIN
	FOR attempt IN 1 .. 2 LOOP
		SELECT r.value, _rl_us(r.ts), r.prev INTO s FROM ONLY rate_limits r
		WHERE r.name = t.stored AND r.key = COALESCE(_rl_try_hold_shard.key, '')
			AND r.shard = _rl_try_hold_shard.shard::smallint
		FOR NO KEY UPDATE SKIP LOCKED;
		IF s.ts IS NOT NULL THEN
			PERFORM _rl_note_held(t, key, shard);
			RETURN s;
		END IF;
		EXIT WHEN attempt = 2 OR EXISTS (SELECT FROM ONLY rate_limits r
			WHERE r.name = t.stored AND r.key = COALESCE(_rl_try_hold_shard.key, '')
				AND r.shard = _rl_try_hold_shard.shard::smallint);
		-- creating a row waits for one creating it: never one lower than a
		-- shard held, so that creations go in shard order
		EXIT WHEN _rl_held_highest(t, key) > shard;
		now := _rl_us(_rl_now());
		s := _rl_initial_state(_rl_policy_shard(t.policy), _rl_origin(t, key), now);
		PERFORM _rl_check_state_time(s, now);
		INSERT INTO rate_limits AS r (name, key, shard, value, ts, prev)
		VALUES (t.stored, COALESCE(_rl_try_hold_shard.key, ''), _rl_try_hold_shard.shard::smallint,
			s.value, _rl_ts(s.ts), s.prev)
		ON CONFLICT DO NOTHING;
	END LOOP;
	RETURN NULL;
END
$$;

-- Write a shard's new state.
CREATE FUNCTION _rl_write_shard(t _rl_target, key text, shard integer, s _rl_stored)
RETURNS void
LANGUAGE sql VOLATILE
AS $$UPDATE ONLY rate_limits r SET value = s.value, ts = _rl_ts(s.ts), prev = s.prev
	WHERE r.name = t.stored AND r.key = COALESCE(_rl_write_shard.key, '')
		AND r.shard = _rl_write_shard.shard::smallint$$;

-- decide_with_busy: a call that holds the shards held (none or one) and
-- not the busy ones, decided over both, the busy ones by their committed
-- state; nothing is written.  Granted there, it is refused with
-- retry_after zero: a shard is in use right now.
CREATE FUNCTION _rl_decide_with_busy(t _rl_target, key text, held _rl_stored[],
	busy integer[], count float8, reserve boolean)
RETURNS _rl_shard_decision
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	states _rl_stored[] := held;
	all_ _rl_stored[] := _rl_read_shards(t.stored, key, (t.policy).shards);
	d _rl_shard_decision;
	i integer;
BEGIN
	FOREACH i IN ARRAY busy LOOP
		states := pg_catalog.array_append(states, all_[i + 1]);
	END LOOP;
	d := _rl_decide_shards(_rl_policy_shard(t.policy), _rl_origin(t, key), states,
		_rl_us(_rl_now()), count, reserve);
	IF d.ok THEN
		d.ok := false;
		d.has_retry := true;
		d.retry_after := 0;
		d.remaining := CASE WHEN pg_catalog.array_length(held, 1) = 1
			THEN (held[1]).value ELSE 0::float8 END;
	END IF;
	d.write := ARRAY[false, false];
	RETURN d;
END
$$;

-- hold_shards: of a pair of shards (prefer, or two at random), the fuller
-- first, lock without waiting one that serves the call alone, or both;
-- when both are busy, wait for the fuller unless the transaction holds a
-- shard of the key (it could wait for a holder that waits for it).
-- Returns the shards held, then -1, then the shards left busy.
CREATE FUNCTION _rl_hold_shards(t _rl_target, key text, count float8, prefer integer[])
RETURNS integer[]
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	nshards integer := (t.policy).shards;
	sp _rl_policy := _rl_policy_shard(t.policy);
	origin bigint := _rl_origin(t, key);
	pick integer[];
	all_ _rl_stored[];
	now bigint;
	held integer[];
	s _rl_stored;
	i integer;
	tried boolean[];
	defer boolean[];
BEGIN
	FOR attempt IN 0 .. 100 LOOP
		IF attempt = 100 THEN
			RAISE EXCEPTION 'could not lock rate limit state after % attempts', attempt + 1
				USING ERRCODE = 'lock_not_available';
		END IF;
		IF attempt = 0 AND prefer IS NOT NULL THEN
			pick := prefer;
		ELSE
			pick[1] := pg_catalog.floor(pg_catalog.random() * nshards::float8)::integer;
			pick[2] := (pick[1] + 1 + pg_catalog.floor(pg_catalog.random()
				* (nshards - 1)::float8)::integer) % nshards;
		END IF;
		all_ := _rl_read_shards(t.stored, key, nshards);
		now := _rl_us(_rl_now());
		IF _rl_shard_value(sp, origin, all_[pick[2] + 1], now)
				> _rl_shard_value(sp, origin, all_[pick[1] + 1], now) THEN
			pick := ARRAY[pick[2], pick[1]];
		END IF;
		held := '{}';
		tried := ARRAY[false, false];
		-- rows that exist first, then the rest in shard order; stop once one
		-- serves alone.  An existing one that cannot serve alone waits for
		-- the second pass when the other is missing and lower: a call never
		-- creates a shard lower than one it holds.
		FOR k IN 1 .. 2 LOOP
			defer[k] := (all_[pick[k] + 1]).ts IS NOT NULL AND (all_[pick[3 - k] + 1]).ts IS NULL
				AND pick[3 - k] < pick[k] AND _rl_shard_value(sp, origin, all_[pick[k] + 1], now) < count;
		END LOOP;
		FOR pass IN 0 .. 1 LOOP
			FOR j IN 1 .. 2 LOOP
				i := CASE WHEN pass = 1 AND pick[2] < pick[1] THEN 3 - j ELSE j END;
				CONTINUE WHEN tried[i] OR (pass = 0 AND ((all_[pick[i] + 1]).ts IS NULL OR defer[i]));
				tried[i] := true;
				s := _rl_try_hold_shard(t, key, pick[i]);
				CONTINUE WHEN s.ts IS NULL;
				held := pg_catalog.array_append(held, pick[i]);
				IF pg_catalog.cardinality(held) = 1
						AND (_rl_refill(sp, origin, s, _rl_us(_rl_now()))).value >= count THEN
					RETURN pg_catalog.array_append(held, -1);
				END IF;
			END LOOP;
		END LOOP;
		IF pg_catalog.cardinality(held) = 2 THEN
			RETURN pg_catalog.array_append(held, -1);
		END IF;
		IF pg_catalog.cardinality(held) = 1 THEN
			RETURN pg_catalog.array_cat(held, ARRAY[-1, CASE WHEN held[1] = pick[1] THEN pick[2] ELSE pick[1] END]);
		END IF;
		-- both busy
		IF _rl_holds_key(t, key) THEN
			RETURN pg_catalog.array_prepend(-1, pick);
		END IF;
		SELECT r.value, _rl_us(r.ts), r.prev INTO s FROM ONLY rate_limits r
		WHERE r.name = t.stored AND r.key = COALESCE(_rl_hold_shards.key, '')
			AND r.shard = pick[1]::smallint
		FOR NO KEY UPDATE;
		IF s.ts IS NOT NULL THEN
			PERFORM _rl_note_held(t, key, pick[1]);
			IF (_rl_refill(sp, origin, s, _rl_us(_rl_now()))).value >= count THEN
				RETURN ARRAY[pick[1], -1];
			END IF;
			IF _rl_try_hold_shard(t, key, pick[2]) IS NULL THEN
				RETURN ARRAY[pick[1], -1, pick[2]];
			END IF;
			RETURN ARRAY[pick[1], pick[2], -1];
		END IF;
	END LOOP;
END
$$;

-- rl_limit on a sharded limit (consume_shards_unlocked, then hold_shards
-- with the pair it chose): the answer, the state written.
CREATE FUNCTION _rl_consume_shards(t _rl_target, key text, count float8, reserve boolean)
RETURNS _rl_decision
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	nshards integer := (t.policy).shards;
	probes integer := LEAST(nshards, 8);
	ord integer[];
	all_ _rl_stored[];
	seen _rl_stored[];
	busy_serves boolean[];
	free_short boolean[];
	serves boolean;
	sp _rl_policy;
	origin bigint := _rl_origin(t, key);
	now bigint;
	shard integer;
	s _rl_stored;
	d _rl_shard_decision;
	a integer;
	b integer;
	va float8;
	vb float8;
	v float8;
	pair integer[];
BEGIN
	ord := ARRAY(SELECT g.s FROM pg_catalog.generate_series(0, nshards - 1) AS g(s)
		ORDER BY pg_catalog.random());
	sp := _rl_policy_shard(t.policy);
	all_ := _rl_read_shards(t.stored, key, nshards);
	now := _rl_us(_rl_now());
	FOR p IN 1 .. probes LOOP
		shard := ord[p];
		s := all_[shard + 1];
		serves := _rl_shard_value(sp, origin, s, now) >= count;
		seen[p] := CASE WHEN s.ts IS NULL THEN _rl_initial_state(sp, origin, now) ELSE s END;
		busy_serves[p] := false;
		free_short[p] := NOT serves;
		CONTINUE WHEN NOT serves;
		IF s.ts IS NULL THEN
			-- a missing shard is full, as is every missing one: the lowest
			-- above those held is created
			SELECT pg_catalog.min(g.s) INTO shard FROM pg_catalog.generate_series(0, nshards - 1) AS g(s)
			WHERE g.s > _rl_held_highest(t, key) AND NOT EXISTS (SELECT FROM ONLY rate_limits r
				WHERE r.name = t.stored AND r.key = COALESCE(_rl_consume_shards.key, '')
					AND r.shard = g.s::smallint);
		END IF;
		s := CASE WHEN shard IS NOT NULL THEN _rl_try_hold_shard(t, key, shard) END;
		IF s.ts IS NULL THEN
			busy_serves[p] := true;
			CONTINUE;
		END IF;
		t := _rl_reread(t);
		PERFORM _rl_check_count(t.policy, count, reserve);
		sp := _rl_policy_shard(t.policy);
		now := _rl_us(_rl_now());
		IF (_rl_refill(sp, origin, s, now)).value >= count THEN
			d := _rl_decide_shards(sp, origin, ARRAY[s], now, count, reserve);
			IF d.ok THEN
				PERFORM _rl_check_state_time(d.state[1], now);
				PERFORM _rl_write_shard(t, key, shard, d.state[1]);
			END IF;
			RETURN _rl_shard_answer(d);
		END IF;
		-- ours now, and short
		IF shard = ord[p] THEN
			seen[p] := s;
		ELSE
			busy_serves[p] := true;
			free_short[p] := false;
		END IF;
	END LOOP;

	IF NOT (true = ANY (busy_serves)) THEN
		-- none serves alone: would the two fullest together?
		pair := _rl_two_fullest(sp, origin, seen, now);
		a := pair[1];
		b := pair[2];
		t := _rl_reread(t);
		PERFORM _rl_check_count(t.policy, count, reserve);
		sp := _rl_policy_shard(t.policy);
		d := _rl_decide_shards(sp, origin, ARRAY[seen[a], seen[b]], _rl_us(_rl_now()),
			count, reserve);
		IF NOT d.ok THEN
			RETURN _rl_shard_answer(d);
		END IF;
		pair := ARRAY[ord[a], ord[b]];
		RETURN _rl_consume_held(t, key, count, reserve, _rl_hold_shards(t, key, count, pair));
	END IF;

	-- the shards that serve alone are busy: refused, minding the pair of
	-- the fullest free one that cannot serve and the fullest busy; with no
	-- free one, a pair at random is held (hold_shards)
	IF NOT (true = ANY (free_short)) THEN
		RETURN _rl_consume_held(t, key, count, reserve, _rl_hold_shards(t, key, count, NULL));
	END IF;
	a := NULL;
	b := NULL;
	FOR p IN 1 .. probes LOOP
		v := (_rl_refill(sp, origin, seen[p], now)).value;
		IF free_short[p] AND (a IS NULL OR v > va) THEN
			a := p;
			va := v;
		END IF;
		IF busy_serves[p] AND (b IS NULL OR v > vb) THEN
			b := p;
			vb := v;
		END IF;
	END LOOP;
	t := _rl_reread(t);
	PERFORM _rl_check_count(t.policy, count, reserve);
	d := _rl_decide_with_busy(t, key,
		CASE WHEN a IS NULL THEN '{}'::_rl_stored[] ELSE ARRAY[seen[a]] END,
		ARRAY[ord[b]], count, reserve);
	RETURN _rl_shard_answer(d);
END
$$;

-- Decide a call over the shards _rl_hold_shards held, at a time read
-- after the locks and under the definition read again, and write a grant.
CREATE FUNCTION _rl_consume_held(t _rl_target, key text, count float8,
	reserve boolean, holding integer[])
RETURNS _rl_decision
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	d _rl_shard_decision;
BEGIN
	t := _rl_reread(t);
	PERFORM _rl_check_count(t.policy, count, reserve);
	d := _rl_decide_held_shards(t, key, holding, count, reserve);
	IF d.ok THEN
		PERFORM _rl_write_held_shards(t, key, holding, d);
	END IF;
	RETURN _rl_shard_answer(d);
END
$$;

-- rl_check on a sharded limit (table_peek): as if the call had picked
-- the two fullest shards, ties to the lower shard.
CREATE FUNCTION _rl_peek_shards(t _rl_target, key text, count float8, reserve boolean)
RETURNS _rl_decision
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	sp _rl_policy := _rl_policy_shard(t.policy);
	origin bigint := _rl_origin(t, key);
	all_ _rl_stored[] := _rl_read_shards(t.stored, key, (t.policy).shards);
	now bigint := _rl_us(_rl_now());
	pair integer[] := _rl_two_fullest(sp, origin, all_, now);
BEGIN
	RETURN _rl_shard_answer(_rl_decide_shards(sp, origin, ARRAY[all_[pair[1]], all_[pair[2]]],
		_rl_us(_rl_now()), count, reserve));
END
$$;

-- rl_value on a sharded limit (table_current): the sum over its shards,
-- counted from now.
CREATE FUNCTION _rl_current_shards(t _rl_target, key text)
RETURNS rl_state
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	sp _rl_policy := _rl_policy_shard(t.policy);
	origin bigint := _rl_origin(t, key);
	all_ _rl_stored[] := _rl_read_shards(t.stored, key, (t.policy).shards);
	now bigint := _rl_us(_rl_now());
	total _rl_stored := _rl_initial_state(sp, origin, now);
BEGIN
	total.value := 0;
	FOR s IN 1 .. (t.policy).shards LOOP
		total.value := total.value + _rl_shard_value(sp, origin, all_[s], now);
	END LOOP;
	PERFORM _rl_check_state_time(total, now);
	RETURN ROW(total.value, _rl_ts(total.ts))::rl_state;
END
$$;

-- rl_refund_spread: a refund of count tokens over shards holding values,
-- each at most capacity, in equal parts, a shard that fills up passing
-- the rest on to the others.
CREATE FUNCTION _rl_refund_spread(capacity float8, vals float8[], count float8)
RETURNS float8[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	n integer := pg_catalog.array_length(vals, 1);
	left_ float8 := count;
	nopen integer;
	share float8;
	give float8;
BEGIN
	FOR round IN 1 .. n LOOP
		EXIT WHEN NOT left_ > 0::float8;
		nopen := 0;
		FOR i IN 1 .. n LOOP
			IF vals[i] < capacity THEN
				nopen := nopen + 1;
			END IF;
		END LOOP;
		EXIT WHEN nopen = 0;
		share := left_ / nopen::float8;
		FOR i IN 1 .. n LOOP
			CONTINUE WHEN vals[i] >= capacity;
			give := LEAST(share, capacity - vals[i]);
			vals[i] := LEAST(vals[i] + give, capacity);
			left_ := left_ - give;
		END LOOP;
	END LOOP;
	RETURN vals;
END
$$;

-- rl_take_spread (src/adjust.c): take count tokens from shards holding
-- vals, the fullest first: every shard above a level is lowered to it, the
-- level chosen so that the shards give count in all.
CREATE FUNCTION _rl_take_spread(vals float8[], count float8)
RETURNS float8[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	n integer := pg_catalog.array_length(vals, 1);
	sorted float8[] := ARRAY(SELECT v FROM pg_catalog.unnest(vals) v ORDER BY v DESC);
	top float8 := 0;
	level float8 := 0;
BEGIN
	FOR k IN 1 .. n LOOP
		top := top + sorted[k];
		level := (top - count) / k::float8;
		EXIT WHEN k = n OR level >= sorted[k + 1];
	END LOOP;
	FOR i IN 1 .. n LOOP
		vals[i] := LEAST(vals[i], level);
	END LOOP;
	RETURN vals;
END
$$;

-- table_adjust on a sharded limit: hold every shard, a missing one created
-- full, waiting for each in shard order; then a refund spread over the
-- shards (a settlement's return too, which gives nothing when a shard is
-- blocked), a penalty or a settlement's charge taken from the fullest
-- shards first, or a block of each.  Returns the
-- sum over the shards, counted from now.
CREATE FUNCTION _rl_adjust_shards(t _rl_target, key text, adjustment text,
	amount float8, dur bigint)
RETURNS rl_state
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	nshards integer := (t.policy).shards;
	states _rl_stored[];
	nxt _rl_stored[];
	vals float8[];
	sp _rl_policy;
	origin bigint := _rl_origin(t, key);
	now bigint;
	total _rl_stored;
	s _rl_stored;
BEGIN
	FOR i IN 0 .. nshards - 1 LOOP
		FOR attempt IN 0 .. 100 LOOP
			IF attempt = 100 THEN
				RAISE EXCEPTION 'could not lock rate limit state after % attempts', attempt + 1
					USING ERRCODE = 'lock_not_available';
			END IF;
			SELECT r.value, _rl_us(r.ts), r.prev INTO s FROM ONLY rate_limits r
			WHERE r.name = t.stored AND r.key = COALESCE(_rl_adjust_shards.key, '')
				AND r.shard = i::smallint
			FOR NO KEY UPDATE;
			EXIT WHEN s.ts IS NOT NULL;
			now := _rl_us(_rl_now());
			s := _rl_initial_state(_rl_policy_shard(t.policy), origin, now);
			PERFORM _rl_check_state_time(s, now);
			INSERT INTO rate_limits AS r (name, key, shard, value, ts, prev)
			VALUES (t.stored, COALESCE(_rl_adjust_shards.key, ''), i::smallint,
				s.value, _rl_ts(s.ts), s.prev)
			ON CONFLICT DO NOTHING;
		END LOOP;
		states[i + 1] := s;
		PERFORM _rl_note_held(t, key, i);
	END LOOP;
	t := _rl_reread(t);
	sp := _rl_policy_shard(t.policy);
	now := _rl_us(_rl_now());
	IF adjustment IN ('refund', 'return') THEN
		FOR i IN 1 .. nshards LOOP
			nxt[i] := _rl_adjust_state(sp, origin, 'refund', states[i], now, 0::float8, 0::bigint);
			PERFORM _rl_check_state_time(nxt[i], now);
			vals[i] := (nxt[i]).value;
			-- a settlement's return gives nothing to a blocked key
			IF adjustment = 'return' AND _rl_state_is_blocked(sp, origin, states[i], now) THEN
				amount := 0;
			END IF;
		END LOOP;
		vals := _rl_refund_spread(sp.capacity, vals, amount);
		FOR i IN 1 .. nshards LOOP
			s := nxt[i];
			s.value := vals[i];
			nxt[i] := s;
		END LOOP;
	ELSIF adjustment IN ('penalize', 'charge') AND amount > 0::float8 THEN
		-- each shard's share, the fullest first (_rl_take_spread)
		FOR i IN 1 .. nshards LOOP
			nxt[i] := _rl_adjust_state(sp, origin, adjustment, states[i], now, 0::float8, 0::bigint);
			PERFORM _rl_check_state_time(nxt[i], now);
			vals[i] := (nxt[i]).value;
		END LOOP;
		vals := _rl_take_spread(vals, amount);
		FOR i IN 1 .. nshards LOOP
			nxt[i] := _rl_adjust_state(sp, origin, adjustment, states[i], now,
				(nxt[i]).value - vals[i], dur);
			PERFORM _rl_check_state_time(nxt[i], now);
		END LOOP;
	ELSE
		FOR i IN 1 .. nshards LOOP
			nxt[i] := _rl_adjust_state(sp, origin, adjustment, states[i], now,
				amount / nshards::float8, dur);
			PERFORM _rl_check_state_time(nxt[i], now);
		END LOOP;
	END IF;
	FOR i IN 1 .. nshards LOOP
		PERFORM _rl_write_shard(t, key, i - 1, nxt[i]);
	END LOOP;
	total := _rl_initial_state(sp, origin, now);
	total.value := 0;
	FOR i IN 1 .. nshards LOOP
		total.value := total.value + (_rl_refill(sp, origin, nxt[i], now)).value;
	END LOOP;
	RETURN ROW(total.value, _rl_ts(total.ts))::rl_state;
END
$$;

-- table_hold, for rl_limit_all on a sharded limit: of the shards that,
-- read without a lock, serve the call alone, up to 8 in random order are
-- locked without waiting, and the first that still serves is held;
-- otherwise the two fullest (the pair rl_check decides on) are held as
-- _rl_hold_shards holds a pair.  Returns the shards held, then -1, then the shards
-- left busy.
CREATE FUNCTION _rl_hold_shards_all(t _rl_target, key text, count float8)
RETURNS integer[]
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	nshards integer := (t.policy).shards;
	sp _rl_policy := _rl_policy_shard(t.policy);
	origin bigint := _rl_origin(t, key);
	all_ _rl_stored[] := _rl_read_shards(t.stored, key, nshards);
	now bigint := _rl_us(_rl_now());
	tries integer := 0;
	shard integer;
	s _rl_stored;
	pair integer[];
	p integer;
BEGIN
	FOR p IN SELECT g.s FROM pg_catalog.generate_series(0, nshards - 1) AS g(s)
		ORDER BY pg_catalog.random()
	LOOP
		EXIT WHEN tries >= 8;
		CONTINUE WHEN _rl_shard_value(sp, origin, all_[p + 1], now) < count;
		tries := tries + 1;
		shard := p;
		IF (all_[p + 1]).ts IS NULL THEN
			SELECT pg_catalog.min(g.s) INTO shard FROM pg_catalog.generate_series(0, nshards - 1) AS g(s)
			WHERE g.s > _rl_held_highest(t, key) AND NOT EXISTS (SELECT FROM ONLY rate_limits r
				WHERE r.name = t.stored AND r.key = COALESCE(_rl_hold_shards_all.key, '')
					AND r.shard = g.s::smallint);
			CONTINUE WHEN shard IS NULL;
		END IF;
		s := _rl_try_hold_shard(t, key, shard);
		CONTINUE WHEN s.ts IS NULL;
		IF (_rl_refill(sp, origin, s, _rl_us(_rl_now()))).value >= count THEN
			RETURN ARRAY[shard];
		END IF;
	END LOOP;
	pair := _rl_two_fullest(sp, origin, all_, now);
	RETURN _rl_hold_shards(t, key, count, ARRAY[pair[1] - 1, pair[2] - 1]);
END
$$;

-- Decide a call over the shards _rl_hold_shards_all held (decide_hold):
-- with a busy shard, as decide_with_busy.
CREATE FUNCTION _rl_decide_held_shards(t _rl_target, key text, holding integer[],
	count float8, reserve boolean)
RETURNS _rl_shard_decision
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	all_ _rl_stored[] := _rl_read_shards(t.stored, key, (t.policy).shards);
	held _rl_stored[] := '{}';
	busy integer[] := '{}';
	past boolean := false;
	shard integer;
	now bigint;
	d _rl_shard_decision;
BEGIN
	FOREACH shard IN ARRAY holding LOOP
		IF shard = -1 THEN
			past := true;
		ELSIF past THEN
			busy := pg_catalog.array_append(busy, shard);
		ELSE
			held := pg_catalog.array_append(held, all_[shard + 1]);
		END IF;
	END LOOP;
	IF pg_catalog.cardinality(busy) > 0 THEN
		RETURN _rl_decide_with_busy(t, key, held, busy, count, reserve);
	END IF;
	now := _rl_us(_rl_now());
	d := _rl_decide_shards(_rl_policy_shard(t.policy), _rl_origin(t, key), held, now,
		count, reserve);
	IF d.ok THEN
		FOR i IN 1 .. pg_catalog.array_length(held, 1) LOOP
			PERFORM _rl_check_state_time(d.state[i], now);
		END LOOP;
	END IF;
	RETURN d;
END
$$;

-- Write what a granted decision changed in the shards held.
CREATE FUNCTION _rl_write_held_shards(t _rl_target, key text, holding integer[],
	d _rl_shard_decision)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
	FOR i IN 1 .. pg_catalog.array_length(holding, 1) LOOP
		EXIT WHEN holding[i] = -1;
		IF d.write[i] THEN
			PERFORM _rl_write_shard(t, key, holding[i], d.state[i]);
		END IF;
	END LOOP;
END
$$;
