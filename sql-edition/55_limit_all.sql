-- rl_limit_all: consume from several limits, all or nothing (src/limit.c,
-- consume_all).  Limits named more than once consume their counts summed.
-- Every limit is first decided on its committed state without a lock, and
-- a refusal there ends the call; otherwise the rows are locked in one
-- canonical order (stored name, then the NULL key, then the key, bytewise
-- as COLLATE "C" compares), so that two calls naming the same limits in
-- any order queue instead of deadlocking; then every limit is decided
-- again, and all are written, or none.

-- longest_refusal: refused, or limit i when it refused with a longer
-- retry_after.
CREATE FUNCTION _rl_longest_refusal(d _rl_decision[], i integer, refused integer)
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$SELECT CASE WHEN (d[i]).ok THEN refused
	WHEN refused IS NULL OR (d[i]).retry_after > (d[refused]).retry_after THEN i
	ELSE refused END$$;

-- array_elements: an array argument's elements from 1, checked.
CREATE FUNCTION _rl_array_check(a anyarray, argname text)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF a IS NULL THEN
		RAISE EXCEPTION '% must not be null', argname USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF pg_catalog.array_ndims(a) > 1 THEN
		RAISE EXCEPTION '% must be a one-dimensional array', argname
			USING ERRCODE = 'array_subscript_error';
	END IF;
	IF COALESCE(pg_catalog.cardinality(a), 0) > 1000 THEN
		RAISE EXCEPTION 'too many limits in one rl_limit_all call'
			USING ERRCODE = 'program_limit_exceeded',
			DETAIL = pg_catalog.format('The %s array has %s elements; the limit is 1000.',
				argname, pg_catalog.cardinality(a));
	END IF;
	RETURN COALESCE(pg_catalog.cardinality(a), 0);
END
$$;

CREATE FUNCTION _rl_limit_all(names text[], keys text[], counts float8[],
	reserve boolean, throws boolean, jitter boolean)
RETURNS rl_all_result
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	n integer := _rl_array_check(names, 'names');
	t _rl_target[];
	total float8[];
	first integer[];
	ord integer[];
	st _rl_stored[];
	d _rl_decision[];
	sd _rl_shard_decision[];
	holding text[];
	s _rl_stored;
	now bigint;
	refused integer;
	tightest integer;
	longest bigint := -1;
	allowed boolean;
	i integer;
	j integer;
BEGIN
	IF _rl_array_check(keys, 'keys') <> n OR _rl_array_check(counts, 'counts') <> n THEN
		RAISE EXCEPTION 'names, keys and counts must have the same length'
			USING ERRCODE = 'array_subscript_error';
	END IF;
	IF n = 0 THEN
		RAISE EXCEPTION 'rl_limit_all needs at least one limit'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM _rl_require_flags(reserve, throws, jitter);
	names := ARRAY(SELECT pg_catalog.unnest(names));
	keys := ARRAY(SELECT pg_catalog.unnest(keys));
	counts := ARRAY(SELECT pg_catalog.unnest(counts));
	FOR i IN 1 .. n LOOP
		IF names[i] IS NULL THEN
			RAISE EXCEPTION 'names must not contain null' USING ERRCODE = 'null_value_not_allowed';
		END IF;
		IF counts[i] IS NULL THEN
			RAISE EXCEPTION 'counts must not contain null' USING ERRCODE = 'null_value_not_allowed';
		END IF;
		PERFORM _rl_check_name_key(names[i], keys[i]);
	END LOOP;
	FOR i IN 1 .. n LOOP
		t[i] := _rl_resolve(names[i], keys[i], NULL::rl_policy, false, true);
	END LOOP;
	PERFORM _rl_require_writable('rl_limit_all()');

	-- canonical order; a limit named twice merges into its first occurrence
	ord := ARRAY(SELECT g.i FROM pg_catalog.generate_series(1, n) AS g(i)
		ORDER BY (t[g.i]).stored COLLATE "C", keys[g.i] IS NOT NULL,
			keys[g.i] COLLATE "C", g.i);
	FOR j IN 1 .. n LOOP
		i := ord[j];
		first[i] := CASE WHEN j > 1 AND (t[ord[j - 1]]).stored = (t[i]).stored
				AND keys[ord[j - 1]] IS NOT DISTINCT FROM keys[i]
			THEN first[ord[j - 1]] ELSE i END;
		total[i] := 0;
	END LOOP;
	FOR i IN 1 .. n LOOP
		PERFORM _rl_check_count((t[i]).policy, counts[i], reserve);
		total[first[i]] := total[first[i]] + counts[i];
	END LOOP;

	-- peek_all: refused on the committed state, without a lock
	FOREACH i IN ARRAY ord LOOP
		CONTINUE WHEN first[i] <> i;
		PERFORM _rl_check_count((t[i]).policy, total[i], reserve);
		t[i] := _rl_reread(t[i]);
		PERFORM _rl_check_count((t[i]).policy, total[i], reserve);
		s := _rl_read((t[i]).stored, keys[i], false);
		now := _rl_us(_rl_now());
		d[i] := CASE WHEN ((t[i]).policy).shards > 1
			THEN _rl_peek_shards(t[i], keys[i], total[i], reserve)
			ELSE _rl_decide((t[i]).policy, _rl_origin(t[i], keys[i]), s, now, total[i], reserve) END;
		d[i] := _rl_apply_shadow(t[i], d[i]);
		refused := _rl_longest_refusal(d, i, refused);
	END LOOP;

	IF refused IS NULL THEN
		-- hold every row in canonical order, a missing one created full
		FOREACH i IN ARRAY ord LOOP
			CONTINUE WHEN first[i] <> i;
			PERFORM _rl_check_count((t[i]).policy, total[i], reserve);
			IF ((t[i]).policy).shards > 1 THEN
				holding[i] := _rl_hold_shards_all(t[i], keys[i], total[i])::text;
				CONTINUE;
			END IF;
			st[i] := _rl_hold(t[i], keys[i]);
		END LOOP;
		FOREACH i IN ARRAY ord LOOP
			CONTINUE WHEN first[i] <> i;
			t[i] := _rl_reread(t[i]);
			PERFORM _rl_check_count((t[i]).policy, total[i], reserve);
		END LOOP;
		FOREACH i IN ARRAY ord LOOP
			CONTINUE WHEN first[i] <> i;
			IF holding[i] IS NOT NULL THEN
				sd[i] := _rl_decide_held_shards(t[i], keys[i], holding[i]::integer[], total[i], reserve);
				d[i] := _rl_apply_shadow(t[i], _rl_shard_answer(sd[i]));
				refused := _rl_longest_refusal(d, i, refused);
				CONTINUE;
			END IF;
			now := _rl_us(_rl_now());
			d[i] := _rl_decide((t[i]).policy, _rl_origin(t[i], keys[i]), st[i], now, total[i], reserve);
			PERFORM _rl_check_state_time((d[i]).state, now);
			d[i] := _rl_apply_shadow(t[i], d[i]);
			refused := _rl_longest_refusal(d, i, refused);
		END LOOP;
		IF refused IS NULL THEN
			FOREACH i IN ARRAY ord LOOP
				CONTINUE WHEN first[i] <> i OR (d[i]).shadowed;
				IF holding[i] IS NOT NULL THEN
					PERFORM _rl_write_held_shards(t[i], keys[i], holding[i]::integer[], sd[i]);
					CONTINUE;
				END IF;
				UPDATE ONLY rate_limits r SET value = ((d[i]).state).value,
					ts = _rl_ts(((d[i]).state).ts), prev = ((d[i]).state).prev
				WHERE r.name = (t[i]).stored AND r.key = COALESCE(keys[i], '') AND r.shard = 0;
			END LOOP;
		END IF;
	END IF;
	-- block_all: each limit that refused by itself blocks its key
	IF refused IS NOT NULL AND NOT throws THEN
		refused := NULL;
		FOREACH i IN ARRAY ord LOOP
			CONTINUE WHEN first[i] <> i OR (d[i]).ok;
			d[i] := _rl_apply_block(t[i], keys[i], total[i], reserve, d[i]);
			refused := _rl_longest_refusal(d, i, refused);
		END LOOP;
	END IF;
	FOR i IN 1 .. n LOOP
		d[i] := d[first[i]];
	END LOOP;

	IF refused IS NOT NULL THEN
		IF jitter THEN
			d[refused].retry_after := (d[refused]).retry_after
				+ _rl_jitter(((t[refused]).policy).period, pg_catalog.random());
		END IF;
		IF throws THEN
			RAISE EXCEPTION 'rate limit "%" exceeded', names[refused]
				USING ERRCODE = 'RL001',
				DETAIL = CASE WHEN keys[refused] IS NULL
					THEN pg_catalog.format('The shared limit has %s tokens; the call asked for %s.',
						_rl_printf_g((d[refused]).remaining, 6), _rl_printf_g(counts[refused], 6))
					ELSE pg_catalog.format('Key "%s" has %s tokens; the call asked for %s.',
						keys[refused], _rl_printf_g((d[refused]).remaining, 6), _rl_printf_g(counts[refused], 6)) END,
				HINT = pg_catalog.format('Retry after %s.', _rl_interval((d[refused]).retry_after));
		END IF;
	END IF;

	-- all_result_datum: the longest retry_after; remaining, reset_after and
	-- capacity of the refusing limit, or, all granted, of the one with the
	-- fewest tokens left
	allowed := refused IS NULL;
	tightest := refused;
	FOR i IN 1 .. n LOOP
		IF (d[i]).has_retry AND (d[i]).retry_after > longest THEN
			longest := (d[i]).retry_after;
		END IF;
		allowed := allowed AND (d[i]).ok
			AND ((d[i]).shadowed IS TRUE OR NOT (d[i]).has_retry OR (d[i]).retry_after <= 0);
		IF refused IS NULL AND (tightest IS NULL OR (d[i]).remaining < (d[tightest]).remaining) THEN
			tightest := i;
		END IF;
	END LOOP;
	RETURN ROW(refused IS NULL,
		CASE WHEN longest >= 0 THEN _rl_interval(longest) END,
		names[refused],
		keys[refused],
		(_rl_result((t[tightest]).policy, counts[tightest], d[tightest])).remaining,
		_rl_interval((d[tightest]).reset_after),
		((t[tightest]).policy).capacity,
		allowed,
		CASE WHEN longest >= 0 THEN _rl_ceil_ms(longest) END,
		_rl_ceil_ms((d[tightest]).reset_after))::rl_all_result;
END
$$;

CREATE FUNCTION rl_limit_all(
	names text[],
	keys text[],
	counts float8[],
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	jitter boolean DEFAULT false)
RETURNS rl_all_result
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$SELECT _rl_limit_all(names, keys, counts, reserve, throws, jitter)$$;
COMMENT ON FUNCTION rl_limit_all(text[], text[], float8[], boolean, boolean, boolean) IS
	'consume from several limits at once, all or nothing; rows are locked in one canonical order';
