-- retry_after is exact on both stores: the same call made at
-- now + retry_after succeeds, and one made a microsecond earlier is
-- refused.  Token buckets of awkward rates, keys drained at awkward
-- times, so that a state refilled to now and one refilled from its own
-- time round differently.
CREATE TEMP TABLE retry_cases AS
SELECT s.storage, i,
       1 + (i * 7919 % 97) / 13.0 AS rate,
       make_interval(secs => 1 + (i::bigint * 104729 % 89) * (i % 1000) / 7.0) AS period,
       '2026-03-01 00:00:00+00'::timestamptz
         + make_interval(secs => (i::bigint * 15485863 % 1000003) / 1000000.0) AS t0
FROM generate_series(1, 1000) i, (VALUES ('table'), ('memory')) s(storage);

CREATE TABLE retry_outcomes (storage text, i int, outcome text);

-- each call its own transaction, as an application makes them
CREATE PROCEDURE retry_check() LANGUAGE plpgsql AS $$
DECLARE
  c record;
  r rl_result;
  t timestamptz;
  outcome text;
BEGIN
  FOR c IN SELECT * FROM retry_cases ORDER BY storage, i LOOP
    PERFORM rl_define('retry_' || c.storage, 'token bucket',
                      c.rate, c.period, 3, storage => c.storage);
    PERFORM set_config('ratelimit.now_override', c.t0::text, false);
    PERFORM rl_limit('retry_' || c.storage, 'k' || c.i, 3);
    COMMIT;
    t := c.t0 + c.period * (0.5 / c.rate);
    PERFORM set_config('ratelimit.now_override', t::text, false);
    r := rl_limit('retry_' || c.storage, 'k' || c.i, 2);
    COMMIT;
    IF r.ok THEN
      outcome := 'granted while drained';
    ELSE
      PERFORM set_config('ratelimit.now_override',
                         (t + r.retry_after - interval '1 microsecond')::text, false);
      IF (rl_limit('retry_' || c.storage, 'k' || c.i, 2)).ok THEN
        outcome := 'granted before retry_after';
      ELSE
        COMMIT;
        PERFORM set_config('ratelimit.now_override', (t + r.retry_after)::text, false);
        outcome := CASE WHEN (rl_limit('retry_' || c.storage, 'k' || c.i, 2)).ok
                        THEN 'exact' ELSE 'refused at retry_after' END;
      END IF;
    END IF;
    INSERT INTO retry_outcomes VALUES (c.storage, c.i, outcome);
    COMMIT;
  END LOOP;
END $$;

CALL retry_check();
-- every case exact, on both stores
SELECT storage, outcome, count(*) FROM retry_outcomes GROUP BY 1, 2 ORDER BY 1, 2;
RESET ratelimit.now_override;
DROP TABLE retry_outcomes;
DROP PROCEDURE retry_check();
SELECT rl_undefine('retry_table'), rl_undefine('retry_memory');
