-- rl_limit's partial: a call that takes only what the key holds now, up
-- to its count (src/algebra.c rl_partial_count, src/target.c
-- rl_target_check_count).

-- The count a partial call is checked with: at most the capacity, since a
-- partial call may ask for more than a full key holds; a sharded limit
-- cannot grant part of a call.
CREATE FUNCTION _rl_partial_checked(t _rl_target, count float8, partial boolean)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF NOT partial THEN
		RETURN count;
	END IF;
	IF (t.policy).shards > 1 THEN
		RAISE EXCEPTION 'a sharded limit cannot grant part of a call'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('Limit "%s" has %s shards; a call takes from one or two of them, so what the key holds is not what a call could take.',
				t.label, (t.policy).shards);
	END IF;
	IF count > (t.policy).capacity AND count <= 1e15::float8 THEN
		RETURN (t.policy).capacity;
	END IF;
	RETURN count;
END
$$;

-- The policy a partial call decides under (rl_decide_held): never a debt,
-- so it is refused until the tokens it takes are held.
CREATE FUNCTION _rl_without_debt(p _rl_policy)
RETURNS _rl_policy
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	p.max_debt := NULL;
	RETURN p;
END
$$;

-- rl_partial_count: count, or what the state lets a call take now when
-- that is less, in whole tokens when count is whole; when that is
-- nothing, min(count, 1): a refusal whose retry_after is the time until
-- one token (or the whole count, when less) is there.
CREATE FUNCTION _rl_partial_count(p _rl_policy, origin bigint, s _rl_stored,
	now bigint, count float8)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
	available float8;
	take float8;
BEGIN
	IF NOT _rl_valid_time(now) THEN
		RETURN count;			-- _rl_decide says why
	END IF;
	IF s.ts IS NULL THEN
		available := p.capacity;
	ELSIF NOT _rl_valid_time(s.ts) THEN
		RETURN count;
	ELSE
		available := _rl_available(p, origin, s, now);
	END IF;
	take := LEAST(count, available);
	IF count = pg_catalog.floor(count) THEN
		take := pg_catalog.floor(take);
	END IF;
	RETURN CASE WHEN take > 0::float8 THEN take ELSE LEAST(count, 1::float8) END;
END
$$;
