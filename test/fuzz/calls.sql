-- Random calls of every rl_ function with arguments drawn from hostile
-- pools (NULLs, NaN, infinities, zero, negatives, 1e308, quotes, format
-- characters, other unicode planes, long strings, bad policies), each in
-- its own subtransaction.  Errors are expected; a crash is not, and
-- whatever was granted must leave the state finite.
SELECT setseed(0.42);
CREATE TEMP TABLE outcome (fn text, sqlstate text);
DO $$
DECLARE
  names text[] := ARRAY['tb', 'fw', 'mem', 'esc', 'escm', 'inline', NULL, '', 'x''y', '%s%n', E'\\', repeat('n', 300), 'é😀'];
  keys text[] := ARRAY['1', '2', NULL, '', 'k', E'O''Brien', '%s', E'\U0001F600', repeat('k', 2000), E'\u00e9'];
  counts float8[] := ARRAY[1, 0.5, 0, -1, 'NaN', 'Infinity', '-Infinity', 1e308, 11, NULL];
  bools boolean[] := ARRAY[true, false, NULL];
  configs ratelimit.rl_policy[];
  durations interval[] := ARRAY['1 second', '0', '-1 hour', '1000 years', '999 years', '1 microsecond', '3 months', NULL];
  results ratelimit.rl_result[];
  fns text[] := ARRAY['rl_limit', 'rl_check', 'rl_value', 'rl_reset', 'rl_define', 'rl_token_bucket',
                      'rl_refund', 'rl_penalize', 'rl_block', 'rl_headers', 'rl_settle'];
  fn text;
  state text;
  r int;
BEGIN
  configs := ARRAY[
    NULL,
    ROW('token bucket', 5, '1 second', 5, NULL, 1, NULL, NULL, NULL)::ratelimit.rl_policy,
    ROW('fixed window', 5, '1 hour', 5, 2, 1, NULL, NULL, NULL)::ratelimit.rl_policy,
    ROW('token bucket', 'NaN', '1 second', 5, NULL, 1, NULL, NULL, NULL)::ratelimit.rl_policy,
    ROW('token bucket', 5, '-1 second', 5, NULL, 1, NULL, NULL, NULL)::ratelimit.rl_policy,
    ROW('nope', 5, '1 second', 5, NULL, 1, NULL, NULL, NULL)::ratelimit.rl_policy,
    ROW(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::ratelimit.rl_policy,
    ROW('token bucket', 5, '1 second', 5, NULL, 1, NULL, 'memory', NULL)::ratelimit.rl_policy,
    ROW('fixed window', 5, '1 hour', 5, 2, 1, NULL, 'memory', NULL)::ratelimit.rl_policy,
    ROW('token bucket', 5, '1 second', 5, NULL, 2, NULL, 'memory', NULL)::ratelimit.rl_policy,
    ROW('token bucket', 5, '1 second', 5, NULL, 1, NULL, 'disk', NULL)::ratelimit.rl_policy];
  results := ARRAY[
    NULL,
    ROW(true, NULL, 1, '1 second', NULL, NULL, NULL, NULL, NULL)::ratelimit.rl_result,
    ROW(false, '-1 day', 'NaN', '-100000000 years', NULL, NULL, NULL, NULL, NULL)::ratelimit.rl_result,
    ROW(false, '100000 years', '-Infinity', '1 microsecond', NULL, NULL, NULL, NULL, NULL)::ratelimit.rl_result,
    ROW(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::ratelimit.rl_result];
  FOR i IN 1..4000 LOOP
    fn := fns[1 + floor(random() * array_length(fns, 1))::int];
    BEGIN
      CASE fn
        WHEN 'rl_limit' THEN
          PERFORM ratelimit.rl_limit(names[1 + floor(random() * 11)::int], keys[1 + floor(random() * 10)::int],
            counts[1 + floor(random() * 10)::int], bools[1 + floor(random() * 3)::int],
            bools[1 + floor(random() * 3)::int], configs[1 + floor(random() * 11)::int],
            partial => bools[1 + floor(random() * 3)::int]);
        WHEN 'rl_check' THEN
          PERFORM ratelimit.rl_check(names[1 + floor(random() * 11)::int], keys[1 + floor(random() * 10)::int],
            counts[1 + floor(random() * 10)::int], bools[1 + floor(random() * 3)::int],
            bools[1 + floor(random() * 3)::int], configs[1 + floor(random() * 11)::int]);
        WHEN 'rl_value' THEN
          PERFORM ratelimit.rl_value(names[1 + floor(random() * 11)::int], keys[1 + floor(random() * 10)::int],
            configs[1 + floor(random() * 11)::int]);
        WHEN 'rl_reset' THEN
          PERFORM ratelimit.rl_reset(names[1 + floor(random() * 11)::int], keys[1 + floor(random() * 10)::int]);
        WHEN 'rl_refund' THEN
          PERFORM ratelimit.rl_refund(names[1 + floor(random() * 11)::int], keys[1 + floor(random() * 10)::int],
            counts[1 + floor(random() * 10)::int], configs[1 + floor(random() * 11)::int]);
        WHEN 'rl_penalize' THEN
          PERFORM ratelimit.rl_penalize(names[1 + floor(random() * 11)::int], keys[1 + floor(random() * 10)::int],
            counts[1 + floor(random() * 10)::int], configs[1 + floor(random() * 11)::int]);
        WHEN 'rl_block' THEN
          PERFORM ratelimit.rl_block(names[1 + floor(random() * 11)::int], keys[1 + floor(random() * 10)::int],
            durations[1 + floor(random() * 8)::int], configs[1 + floor(random() * 11)::int]);
        WHEN 'rl_settle' THEN
          PERFORM ratelimit.rl_settle((ARRAY['debt', 'debtm'] || names)[1 + floor(random() * 13)::int],
            keys[1 + floor(random() * 10)::int], counts[1 + floor(random() * 10)::int],
            counts[1 + floor(random() * 10)::int], configs[1 + floor(random() * 11)::int]);
        WHEN 'rl_headers' THEN
          PERFORM ratelimit.rl_headers(names[1 + floor(random() * 11)::int], results[1 + floor(random() * 5)::int],
            configs[1 + floor(random() * 11)::int]);
        WHEN 'rl_define' THEN
          PERFORM ratelimit.rl_define(names[1 + floor(random() * 11)::int], 'token bucket',
            counts[1 + floor(random() * 10)::int], '1 minute');
        ELSE
          PERFORM ratelimit.rl_token_bucket(counts[1 + floor(random() * 10)::int], '1 minute',
            counts[1 + floor(random() * 10)::int], counts[1 + floor(random() * 10)::int]);
      END CASE;
      state := '00000';
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
    END;
    INSERT INTO outcome VALUES (fn, state);
  END LOOP;
END
$$;
-- no internal errors (XX000): every failure was a deliberate one
SELECT fn, sqlstate, count(*) FROM outcome GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS internal_errors FROM outcome WHERE sqlstate LIKE 'XX%';
SELECT count(*) AS non_finite_state FROM ratelimit.rate_limits
WHERE value IN ('NaN', 'Infinity', '-Infinity') OR ts IN ('infinity', '-infinity');
