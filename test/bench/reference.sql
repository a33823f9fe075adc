-- The baselines rl_limit is measured against (make bench), on a table laid
-- out like rate_limits (LIKE copies columns, collations and the primary
-- key, not storage parameters, so the fillfactor is repeated):
--   bench_bare_update(n): one bare UPDATE per key, the cheapest durable
--     row change PostgreSQL can make;
--   bench_plpgsql_limit(name, key, count): the token bucket of the seed
--     article written the way people paste it: SELECT ... FOR UPDATE,
--     compute, UPDATE (or INSERT for a new key).
CREATE TABLE bench_state (LIKE rate_limits INCLUDING ALL) WITH (fillfactor = 90);

CREATE FUNCTION bench_bare_update(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	FOR k IN 1..n LOOP
		UPDATE bench_state SET value = value - 1, ts = clock_timestamp()
		WHERE name = 'keys' AND key = k::text AND shard = 0;
	END LOOP;
END
$$;

CREATE FUNCTION bench_plpgsql_limit(p_name text, p_key text, p_count float8,
	OUT ok boolean, OUT retry_after interval)
LANGUAGE plpgsql AS $$
DECLARE
	rate constant float8 := 1e9;		-- tokens per period
	period constant float8 := 1;		-- seconds
	capacity constant float8 := 1e9;
	cur record;
	now_ts timestamptz;
	v float8;
BEGIN
	SELECT value, ts INTO cur FROM bench_state
	WHERE name = p_name AND key = p_key AND shard = 0 FOR UPDATE;
	now_ts := clock_timestamp();
	IF NOT FOUND THEN
		v := capacity - p_count;
	ELSE
		v := least(cur.value + greatest(extract(epoch FROM now_ts - cur.ts), 0)
				   * rate / period, capacity) - p_count;
	END IF;
	ok := v >= 0;
	IF NOT ok THEN
		retry_after := make_interval(secs => -v * period / rate);
		RETURN;
	END IF;
	IF FOUND THEN
		UPDATE bench_state SET value = v, ts = now_ts
		WHERE name = p_name AND key = p_key AND shard = 0;
	ELSE
		INSERT INTO bench_state VALUES (p_name, p_key, 0, v, now_ts);
	END IF;
END
$$;

-- milliseconds a statement takes
CREATE FUNCTION bench_ms(sql text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	EXECUTE sql;
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END
$$;
