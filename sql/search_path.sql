-- A hostile search_path changes nothing: a role plants operators and
-- functions that shadow the built-ins ahead of pg_catalog, and every
-- answer is the same as with a clean search_path.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('sp', 'token bucket', 3, '1 minute');
SELECT rl_define('spw', 'fixed window', 2, '1 hour');

-- the answers with a clean search_path
CREATE TABLE clean AS
SELECT n, rl_limit('sp', 'u', 1)::text AS bucket, rl_limit('spw', 'u', 1)::text AS window
FROM generate_series(1, 4) AS n;
SELECT rl_reset('sp', 'u'), rl_reset('spw', 'u');

CREATE ROLE regress_ratelimit_evil LOGIN;
CREATE SCHEMA evil AUTHORIZATION regress_ratelimit_evil;
GRANT ALL ON TABLE clean TO regress_ratelimit_evil;
SET ROLE regress_ratelimit_evil;
CREATE FUNCTION evil.texteq_always(text, text) RETURNS boolean
  LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, PROCEDURE = evil.texteq_always);
CREATE FUNCTION evil.int2eq_always(smallint, smallint) RETURNS boolean
  LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = smallint, RIGHTARG = smallint, PROCEDURE = evil.int2eq_always);
CREATE FUNCTION evil.plus_zero(float8, float8) RETURNS float8
  LANGUAGE sql IMMUTABLE AS 'SELECT 0::float8';
CREATE OPERATOR evil.+ (LEFTARG = float8, RIGHTARG = float8, PROCEDURE = evil.plus_zero);
CREATE FUNCTION evil.least(float8, float8) RETURNS float8
  LANGUAGE sql IMMUTABLE AS 'SELECT 1e9::float8';
CREATE FUNCTION evil.now() RETURNS timestamptz
  LANGUAGE sql AS $$SELECT '1999-01-01'::timestamptz$$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz
  LANGUAGE sql AS $$SELECT '1999-01-01'::timestamptz$$;
CREATE TABLE evil.rate_limits (name text, key text, shard smallint, value float8, ts timestamptz);
INSERT INTO evil.rate_limits VALUES ('sp', 'u', 0, 1e9, '1999-01-01');
SET search_path = evil, pg_catalog, public;
-- the planted operator really does shadow the built-in here
SELECT 'a' = 'b' AS shadowed;

CREATE TEMP TABLE dirty AS
SELECT n, rl_limit('sp', 'u', 1)::text AS bucket, rl_limit('spw', 'u', 1)::text AS window
FROM generate_series(1, 4) AS n;
SELECT * FROM rl_value('sp', 'u');
SELECT ok FROM rl_check('sp', 'u');
SELECT count(*) AS differences
FROM (SELECT * FROM public.clean EXCEPT SELECT * FROM dirty) AS d;
SELECT * FROM dirty ORDER BY n;
DROP TABLE dirty;
RESET search_path;
RESET ROLE;

DROP SCHEMA evil CASCADE;
DROP TABLE clean;
DROP ROLE regress_ratelimit_evil;
SELECT rl_undefine('sp'), rl_undefine('spw');
