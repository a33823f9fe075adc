-- A global limit on free-trial sign-ups: 100 an hour for the whole app,
-- inline, with no definition.  One shared row (the NULL key).
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 09:00:00+00';

CREATE TABLE signups (email text PRIMARY KEY, at timestamptz);
CREATE FUNCTION sign_up(p_email text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM rl_limit('freeTrialSignUp', throws => true,
                   config => rl_token_bucket(100, '1 hour'));
  INSERT INTO signups VALUES (p_email, now());
END
$$;

-- a flood of 120 sign-ups: the first 100 pass, the rest are refused
DO $$
DECLARE
  refused int := 0;
BEGIN
  FOR i IN 1..120 LOOP
    BEGIN
      PERFORM sign_up('user' || i || '@example.com');
    EXCEPTION WHEN SQLSTATE 'RL001' THEN
      refused := refused + 1;
    END;
  END LOOP;
  RAISE NOTICE 'signed up: %, refused: %', (SELECT count(*) FROM signups), refused;
END
$$;
-- the next sign-up may come in 36 seconds (one token per 36 s)
SELECT * FROM rl_check('freeTrialSignUp', config => rl_token_bucket(100, '1 hour'));
