-- Login brute force: every failed login consumes from a small budget (5
-- failures per 15 minutes); the failure that empties it blocks the account
-- for an hour, right password or not; a successful login forgets the
-- failures.  rl_check before the attempt, rl_limit on a failure, rl_block
-- when the budget is gone, rl_reset on success.
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 09:00:00+00';
SELECT rl_define('loginFailures', 'token bucket', 5, '15 minutes');

CREATE TABLE accounts (user_id int PRIMARY KEY, password text);
INSERT INTO accounts VALUES (7, 'correct horse');

-- login(user, password).  SECURITY DEFINER: the application role may call
-- login() but not rl_block or rl_reset, which are not granted to PUBLIC.
CREATE FUNCTION login(p_user int, p_password text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  c rl_result;
  r rl_result;
BEGIN
  c := rl_check('loginFailures', p_user);
  IF NOT c.ok THEN
    RETURN format('locked, try again in %s', c.retry_after);
  END IF;
  IF EXISTS (SELECT 1 FROM accounts WHERE user_id = p_user AND password = p_password) THEN
    PERFORM rl_reset('loginFailures', p_user);
    RETURN 'welcome';
  END IF;
  r := rl_limit('loginFailures', p_user);
  IF r.remaining < 1 THEN
    PERFORM rl_block('loginFailures', p_user, '1 hour');
    RETURN 'wrong password; account locked for an hour';
  END IF;
  RETURN format('wrong password (%s attempts left)', r.remaining);
END
$$;

-- five wrong guesses: the fifth empties the budget and blocks the account
SELECT login(7, 'guess ' || i) FROM generate_series(1, 5) AS i;
-- during the block even the right password is refused; the wait is the
-- hour plus the three minutes one failure takes to come back (5 per 15 min)
SELECT login(7, 'correct horse');
SET ratelimit.now_override = '2026-01-01 09:45:00+00';
SELECT login(7, 'correct horse');
-- exact: a microsecond early is still refused, then the login succeeds
SET ratelimit.now_override = '2026-01-01 10:02:59.999999+00';
SELECT login(7, 'correct horse');
SET ratelimit.now_override = '2026-01-01 10:03:00+00';
SELECT login(7, 'correct horse');
-- the success forgot the failures: a full budget again
SELECT * FROM rl_value('loginFailures', 7);
SELECT login(7, 'one more guess');
