-- PostgREST: rate-limit every request in the db-pre-request function, by
-- the JWT's sub when the request is authenticated and by client address
-- otherwise; send RateLimit-Policy, RateLimit (and Retry-After) with each
-- response, and refuse with SQLSTATE PT429, which PostgREST answers with
-- HTTP 429.  Configure PostgREST with
--
--   db-pre-request = "public.rate_limit_request"
--
-- PostgREST runs every GET and HEAD in a READ ONLY transaction, where a
-- table limit cannot write its row (SQLSTATE 25006, which PostgREST would
-- answer with HTTP 405): reads are limited by a memory limit, whose state
-- lives in shared memory and needs no write.  It needs the library in
-- shared_preload_libraries on PostgreSQL 15 and 16.
--
-- PostgREST is not installed here: request() below does for each request
-- what PostgREST does (a READ ONLY transaction for GET and HEAD, the
-- request GUCs, the pre-request function, the response.headers it reads
-- back, the HTTP status of a PTxxx SQLSTATE).
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
-- GET and HEAD: 3 requests a minute per user or address (one every 20 s),
-- in memory, since they run read-only.
SELECT rl_define('api_read', 'token bucket', 3, '1 minute', storage => 'memory');
-- POST, PUT, PATCH and DELETE: 2 a minute, in the table.  Either store
-- works in a read-write transaction; the table is chosen because a write
-- request already takes a transaction id and writes WAL, so its row costs
-- little more there, and in return its state survives a crash and follows
-- a failover to a standby, where the memory store's starts afresh on each
-- server.  Choose the memory store for writes too when that matters less
-- than the cost of a row version per request.
SELECT rl_define('api_write', 'token bucket', 2, '1 minute');

CREATE TABLE posts (author text NOT NULL, body text NOT NULL);

CREATE FUNCTION rate_limit_request() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
  headers jsonb := nullif(current_setting('request.headers', true), '')::jsonb;
  method text := current_setting('request.method', true);
  who text := 'user:' || (claims ->> 'sub');
  lim text := CASE WHEN method IN ('GET', 'HEAD') THEN 'api_read' ELSE 'api_write' END;
  r rl_result;
  fields jsonb;
BEGIN
  IF who IS NULL THEN
    -- the first address of X-Forwarded-For, as the proxy in front of
    -- PostgREST set it (only trust a header your own proxy writes)
    who := 'ip:' || coalesce(nullif(btrim(split_part(headers ->> 'x-forwarded-for', ',', 1)), ''),
                             'unknown');
  END IF;
  r := rl_limit(lim, who);
  fields := rl_headers(lim, r);
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

-- One request as PostgREST runs it: one transaction, READ ONLY for GET and
-- HEAD (PostgREST begins it with BEGIN ... READ ONLY; here each call of
-- request() is a transaction of its own, made read-only before anything
-- else runs in it), that sets the request GUCs, calls the pre-request
-- function, runs the request's own statement, and reads response.headers
-- back.  An error fails the request (and its transaction), and a PTxxx
-- SQLSTATE becomes HTTP status xxx.  Returns the status and the headers.
CREATE FUNCTION request(method text, claims text, headers text, statement text DEFAULT 'SELECT 1',
                        OUT status text, OUT response_headers jsonb)
LANGUAGE plpgsql AS $$
BEGIN
  IF method IN ('GET', 'HEAD') THEN
    SET TRANSACTION READ ONLY;
  END IF;
  PERFORM set_config('request.method', method, true);
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

-- alice, three reads (a HEAD among them): granted, with the fields
SELECT * FROM request('GET', '{"sub": "alice", "role": "web"}', NULL);
SELECT * FROM request('HEAD', '{"sub": "alice", "role": "web"}', NULL);
SELECT * FROM request('GET', '{"sub": "alice", "role": "web"}', NULL);
-- the fourth is refused: SQLSTATE PT429, HTTP 429
SELECT * FROM request('GET', '{"sub": "alice", "role": "web"}', NULL);
-- the error itself, as PostgREST receives it (message, detail, hint), in
-- a READ ONLY transaction begun as PostgREST begins a GET's
\set SHOW_CONTEXT never
BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY;
SELECT set_config('request.method', 'GET', true),
       set_config('request.jwt.claims', '{"sub": "alice"}', true);
DO $$ BEGIN PERFORM rate_limit_request(); END $$;
ROLLBACK;
-- her writes have a limit of their own, kept in the table
SELECT * FROM request('POST', '{"sub": "alice"}', NULL,
                      $$INSERT INTO posts VALUES ('alice', 'hello')$$);
SELECT * FROM request('POST', '{"sub": "alice"}', NULL,
                      $$INSERT INTO posts VALUES ('alice', 'again')$$);
SELECT status FROM request('POST', '{"sub": "alice"}', NULL,
                           $$INSERT INTO posts VALUES ('alice', 'third')$$);
SELECT * FROM posts;
-- a GET cannot write, as in PostgREST: its transaction is read-only
SELECT status FROM request('GET', '{"sub": "carol"}', NULL,
                           $$INSERT INTO posts VALUES ('carol', 'sneaky')$$);
-- an anonymous client, by the first X-Forwarded-For address; bob is apart
SELECT * FROM request('GET', NULL, '{"x-forwarded-for": "203.0.113.7, 10.0.0.1"}');
SELECT * FROM request('GET', NULL, '{"x-forwarded-for": "203.0.113.7"}');
SELECT * FROM request('GET', '{"sub": "bob"}', '{"x-forwarded-for": "203.0.113.7"}');
SELECT name, who, value
FROM (VALUES ('api_read'), ('api_write')) AS n (name),
     (VALUES ('ip:203.0.113.7'), ('user:alice'), ('user:bob'), ('user:carol')) AS k (who),
     rl_value(name, who)
ORDER BY name, who;
-- only the write limit has rows in the table; the read limit's state is in
-- shared memory
SELECT name, key, value FROM rate_limits ORDER BY name, key;
-- a request whose own statement fails rolls back, and its token with it
-- (the memory store returns it at the rollback)
SELECT * FROM request('GET', '{"sub": "bob"}', NULL, 'SELECT 1 / 0');
SELECT value FROM rl_value('api_read', 'user:bob');
-- 20 s later alice has one read again, exactly then
SET ratelimit.now_override = '2026-01-01 12:00:19.999999+00';
SELECT status FROM request('GET', '{"sub": "alice"}', NULL);
SET ratelimit.now_override = '2026-01-01 12:00:20+00';
SELECT * FROM request('GET', '{"sub": "alice"}', NULL);
