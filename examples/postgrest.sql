-- PostgREST: rate-limit every request in the db-pre-request function, by
-- the JWT's sub when the request is authenticated and by client address
-- otherwise; send RateLimit-Policy, RateLimit (and Retry-After) with each
-- response, and refuse with SQLSTATE PT429, which PostgREST answers with
-- HTTP 429.  Configure PostgREST with
--
--   db-pre-request = "public.rate_limit_request"
--
-- PostgREST is not installed here: request() below does for each request
-- what PostgREST does (the request GUCs, the pre-request function, the
-- response.headers it reads back, the HTTP status of a PTxxx SQLSTATE).
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
-- 3 requests a minute per user or address (one every 20 s)
SELECT rl_define('api', 'token bucket', 3, '1 minute');

CREATE FUNCTION rate_limit_request() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
  headers jsonb := nullif(current_setting('request.headers', true), '')::jsonb;
  who text := 'user:' || (claims ->> 'sub');
  r rl_result;
  fields jsonb;
BEGIN
  IF who IS NULL THEN
    -- the first address of X-Forwarded-For, as the proxy in front of
    -- PostgREST set it (only trust a header your own proxy writes)
    who := 'ip:' || coalesce(nullif(btrim(split_part(headers ->> 'x-forwarded-for', ',', 1)), ''),
                             'unknown');
  END IF;
  r := rl_limit('api', who);
  fields := rl_headers('api', r);
  -- response.headers: a JSON array of single-key objects, added to what
  -- is there already
  PERFORM set_config('response.headers',
    (coalesce(nullif(current_setting('response.headers', true), '')::jsonb, '[]')
     || (SELECT jsonb_agg(jsonb_build_object(key, value) ORDER BY key)
         FROM jsonb_each_text(fields)))::text,
    true);
  IF NOT r.ok THEN
    RAISE SQLSTATE 'PT429' USING
      MESSAGE = 'rate limit exceeded',
      DETAIL = format('The limit is %s.', fields ->> 'RateLimit-Policy'),
      HINT = format('Retry after %s seconds.', fields ->> 'Retry-After');
  END IF;
END
$$;

-- One request as PostgREST runs it: one transaction that sets the request
-- GUCs, calls the pre-request function, runs the request's own statement,
-- and reads response.headers back.  An error fails the request (and its
-- transaction), and a PTxxx SQLSTATE becomes HTTP status xxx.  Returns the
-- status and the headers.
CREATE FUNCTION request(claims text, headers text, statement text DEFAULT 'SELECT 1',
                        OUT status text, OUT response_headers jsonb)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('request.jwt.claims', coalesce(claims, ''), true);
  PERFORM set_config('request.headers', coalesce(headers, '{}'), true);
  PERFORM set_config('response.headers', '', true);
  BEGIN
    PERFORM rate_limit_request();
    EXECUTE statement;
    status := '200';
    response_headers := current_setting('response.headers')::jsonb;
  EXCEPTION WHEN OTHERS THEN
    -- the transaction fails: nothing it consumed is kept
    status := CASE WHEN SQLSTATE LIKE 'PT%' THEN substr(SQLSTATE, 3) ELSE 'error' END
              || ' (' || SQLSTATE || ': ' || SQLERRM || ')';
    response_headers := NULL;
  END;
END
$$;

-- alice, three requests: granted, with the fields
SELECT * FROM request('{"sub": "alice", "role": "web"}', NULL);
SELECT * FROM request('{"sub": "alice", "role": "web"}', NULL);
SELECT * FROM request('{"sub": "alice", "role": "web"}', NULL);
-- the fourth is refused: SQLSTATE PT429, HTTP 429
SELECT * FROM request('{"sub": "alice", "role": "web"}', NULL);
-- the error itself, as PostgREST receives it (message, detail, hint)
\set SHOW_CONTEXT never
BEGIN;
SELECT set_config('request.jwt.claims', '{"sub": "alice"}', true);
DO $$ BEGIN PERFORM rate_limit_request(); END $$;
ROLLBACK;
-- an anonymous client, by the first X-Forwarded-For address; bob is apart
SELECT * FROM request(NULL, '{"x-forwarded-for": "203.0.113.7, 10.0.0.1"}');
SELECT * FROM request(NULL, '{"x-forwarded-for": "203.0.113.7"}');
SELECT * FROM request('{"sub": "bob"}', '{"x-forwarded-for": "203.0.113.7"}');
SELECT key, value FROM rate_limits WHERE name = 'api' ORDER BY key;
-- a request whose own statement fails rolls back, and its token with it
SELECT * FROM request('{"sub": "bob"}', NULL, 'SELECT 1 / 0');
SELECT value FROM rl_value('api', 'user:bob');
-- 20 s later alice has one request again, exactly then
SET ratelimit.now_override = '2026-01-01 12:00:19.999999+00';
SELECT status FROM request('{"sub": "alice"}', NULL);
SET ratelimit.now_override = '2026-01-01 12:00:20+00';
SELECT * FROM request('{"sub": "alice"}', NULL);
