-- Definitions: rl_define, rl_undefine and the inline policy constructors.
CREATE EXTENSION ratelimit;
-- For the suites after this one: a statement's SQLSTATE and message, or
-- 'no error', the statement run in a subtransaction.
CREATE FUNCTION error_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
-- The same as two columns, code and message ('00000', 'no error').
CREATE FUNCTION code_of(stmt text, OUT code text, OUT message text) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  code := '00000';
  message := 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
END
$$;
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

SELECT rl_define('sendMessage', 'token bucket', 10, '1 minute');
SELECT rl_define('llm', 'fixed window', 1000, '1 minute', capacity => 1500,
                 max_reserved => 5000, start => '2026-01-01 00:00:30+00');
SELECT * FROM rl_definitions ORDER BY name;

-- redefining replaces every column (capacity defaults to rate again)
SELECT rl_define('sendMessage', 'token bucket', 20, '1 hour', capacity => 5);
SELECT rl_define('sendMessage', 'token bucket', 20, '1 hour');
SELECT * FROM rl_definitions WHERE name = 'sendMessage';

-- inline policies: defaults filled in, so the value says what it enforces
SELECT rl_token_bucket(10, '1 minute');
SELECT * FROM rl_token_bucket(10, '1 minute', 20, 5);
SELECT * FROM rl_fixed_window(100, '1 hour', start => '2026-01-01 00:00:00+00');

-- undefine removes the definition and its state
SELECT rl_limit('sendMessage', 'u1');
SELECT count(*) FROM rate_limits WHERE name = 'sendMessage';
SELECT rl_undefine('sendMessage');
SELECT count(*) FROM rate_limits WHERE name = 'sendMessage';
SELECT * FROM rl_definitions ORDER BY name;
SELECT rl_undefine('sendMessage');
SELECT rl_limit('sendMessage', 'u1');

-- months count as 30 days, as in extract(epoch from interval)
SELECT rl_define('monthly', 'token bucket', 30, '1 month');
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT * FROM rl_limit('monthly', 'k', 30);
SET ratelimit.now_override = '2026-01-02 00:00:00+00';
SELECT * FROM rl_value('monthly', 'k');
SELECT rl_undefine('monthly');
SELECT rl_undefine('llm');
