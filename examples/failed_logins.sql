-- Failed logins per user: check before the attempt, consume only on a
-- failure, reset on success.  5 failures an hour, refilling continuously.
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 09:00:00+00';
SELECT rl_define('failedLogins', 'token bucket', 5, '1 hour');

CREATE TABLE accounts (user_id int PRIMARY KEY, otp text);
INSERT INTO accounts VALUES (7, '123456');

-- login(user, otp): refuse early when the user is locked out; count only
-- failures; forget them after a success.
CREATE FUNCTION login(p_user int, p_otp text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  r rl_result;
BEGIN
  PERFORM rl_check('failedLogins', p_user, throws => true);
  IF EXISTS (SELECT 1 FROM accounts WHERE user_id = p_user AND otp = p_otp) THEN
    PERFORM rl_reset('failedLogins', p_user);
    RETURN 'welcome';
  END IF;
  r := rl_limit('failedLogins', p_user);
  RETURN format('wrong code (%s attempts left)', r.remaining);
END
$$;

SELECT login(7, '000000') FROM generate_series(1, 5);
-- the sixth attempt is refused before the code is even looked at
SELECT login(7, '123456');
-- twelve minutes later one attempt has come back, and it succeeds
SET ratelimit.now_override = '2026-01-01 09:12:00+00';
SELECT login(7, '123456');
SELECT * FROM rl_value('failedLogins', 7);
