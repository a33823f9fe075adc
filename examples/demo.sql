-- The ratelimit demo that `make run` plays: allow, deny, reserve, roll back.
\pset footer off
SET timezone = 'UTC';
-- Pin the clock so the demo prints the same numbers every time.
SET ratelimit.now_override = '2026-01-01 12:00:00+00';

\echo '== 1. Define a limit: 3 messages a minute per user (token bucket).'
SELECT rl_define('sendMessage', 'token bucket', 3, '1 minute');

\echo '== 2. Three calls are allowed; the fourth is denied with a retry_after.'
SELECT * FROM rl_limit('sendMessage', 42);
SELECT * FROM rl_limit('sendMessage', 42);
SELECT * FROM rl_limit('sendMessage', 42);
SELECT * FROM rl_limit('sendMessage', 42);

\echo '== 3. Twenty seconds later one token has flowed back in.'
SET ratelimit.now_override = '2026-01-01 12:00:20+00';
SELECT * FROM rl_limit('sendMessage', 42);

\echo '== 4. A reservation: take 5 tokens now from an LLM budget of 10 a minute,'
\echo '==    and run the work at retry_after once the deficit is paid back.'
SELECT * FROM rl_limit('llm', NULL, 8, config => rl_token_bucket(10, '1 minute'));
SELECT * FROM rl_limit('llm', NULL, 5, reserve => true, config => rl_token_bucket(10, '1 minute'));

\echo '== 5. A rollback returns the tokens the transaction consumed.'
SELECT * FROM rl_value('sendMessage', 7);
BEGIN;
SELECT * FROM rl_limit('sendMessage', 7, 3);
ROLLBACK;
SELECT * FROM rl_value('sendMessage', 7);

\echo '== 6. throws => true turns a denial into an error (SQLSTATE RL001).'
\set VERBOSITY default
SELECT * FROM rl_limit('sendMessage', 42, throws => true);
