-- Blocks and their escalation (src/algebra.c): a defined limit's block_for
-- blocks a refused key; with block_factor each block lasts longer by the
-- key's offences, an offence score kept in the state's third number as
-- -(1 + score) (NULL: none) and forgotten one per block_horizon.

-- RL_POLICY_ESCALATES: a policy escalates its automatic blocks.
CREATE FUNCTION _rl_escalates(p _rl_policy)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT COALESCE(p.block_factor >= 1::float8 AND p.kind <> 'sliding window'
	AND p.block_horizon > 0, false)$$;

-- rl_score_prev: the prev that stores an offence score.
CREATE FUNCTION _rl_score_prev(score float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT CASE WHEN score > 0::float8 THEN -(1::float8 + score) END$$;

-- rl_offence_score: the offence score of a state at time t, less one per
-- block_horizon since ts (not before: a block's ts is its end).
CREATE FUNCTION _rl_offence_score(p _rl_policy, s _rl_stored, t bigint)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	score float8 := CASE WHEN s.prev <= -1::float8 THEN -s.prev - 1::float8 ELSE 0::float8 END;
BEGIN
	IF NOT score > 0::float8 OR NOT _rl_escalates(p) THEN
		RETURN GREATEST(score, 0::float8);
	END IF;
	IF t > s.ts THEN
		score := score - _rl_elapsed(t, s.ts) / p.block_horizon::float8;
	END IF;
	RETURN GREATEST(score, 0::float8);
END
$$;

-- rl_escalated_block_for: block_for, times block_factor for every offence
-- the score still holds (a part counting whole), at most block_max.
CREATE FUNCTION _rl_escalated_block_for(p _rl_policy, s _rl_stored, now bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
	duration float8;
BEGIN
	IF NOT _rl_escalates(p) OR s.ts IS NULL THEN
		RETURN p.block_for;
	END IF;
	duration := p.block_for::float8 * pg_catalog.power(p.block_factor,
		pg_catalog.ceil(_rl_offence_score(p, s, now)));
	IF NOT duration < p.block_max::float8 THEN
		RETURN p.block_max;
	END IF;
	RETURN pg_catalog.trunc(duration)::bigint;
END
$$;

-- rl_state_is_blocked: counted from a time after now, or from a window
-- after now's.
CREATE FUNCTION _rl_state_is_blocked(p _rl_policy, origin bigint, s _rl_stored, now bigint)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT s.ts > now OR (p.kind <> 'token bucket'
	AND _rl_window_of(p, origin, s.ts) > _rl_window_of(p, origin, now))$$;
