-- LLM requests under a provider's budget of 40,000 tokens a minute:
-- reserve the tokens now and schedule the request for when the budget
-- has them, instead of retrying.  At most 120,000 tokens reserved ahead.
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 09:00:00+00';
SELECT rl_define('chatCompletion', 'token bucket', 40000, '1 minute', max_reserved => 120000);

CREATE TABLE llm_jobs (id serial, tokens int, run_at timestamptz);
CREATE FUNCTION submit(p_tokens int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  r rl_result;
BEGIN
  r := rl_limit('chatCompletion', NULL, p_tokens, reserve => true);
  IF NOT r.ok THEN
    RETURN format('refused: too much reserved, retry in %s', r.retry_after);
  END IF;
  INSERT INTO llm_jobs (tokens, run_at)
  VALUES (p_tokens, now() + coalesce(r.retry_after, interval '0'));
  RETURN CASE WHEN r.retry_after IS NULL THEN 'run now'
              ELSE format('scheduled in %s', r.retry_after) END;
END
$$;

SELECT submit(30000);
SELECT submit(30000);
SELECT submit(60000);
SELECT submit(60000);
SELECT submit(20000);
SELECT count(*) AS jobs, sum(tokens) AS tokens FROM llm_jobs;
