-- Grants: an application role consumes, checks and reads limits, but
-- cannot write the tables, administer limits or pin the clock.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('priv', 'token bucket', 5, '1 hour');
CREATE ROLE regress_ratelimit_app LOGIN;
SET ROLE regress_ratelimit_app;
SET ratelimit.now_override = '2026-06-01 00:00:00+00';
SHOW ratelimit.now_override;

SELECT ok, remaining FROM rl_limit('priv', 'u');
SELECT ok, remaining FROM rl_check('priv', 'u');
SELECT * FROM rl_value('priv', 'u');
SELECT ok FROM rl_limit('inline', 'u', config => rl_token_bucket(1, '1 hour'));

UPDATE rate_limits SET value = 1000;
DELETE FROM rate_limits;
INSERT INTO rate_limits VALUES ('priv', 'u', 0, 1000, now());
SELECT count(*) FROM rate_limits;
UPDATE rl_definitions SET rate = 1000;
INSERT INTO rl_definitions VALUES ('mine', 'token bucket', 1000, '1 second', 1000);
SELECT rl_define('mine', 'token bucket', 1000, '1 second');
SELECT rl_undefine('priv');
SELECT rl_reset('priv', 'u');
SELECT rl_reset('priv', 'u'::text);
RESET ROLE;

-- an administrator can grant the admin functions deliberately
GRANT EXECUTE ON FUNCTION rl_reset(text, text, rl_policy) TO regress_ratelimit_app;
SET ROLE regress_ratelimit_app;
SELECT rl_reset('priv', 'u');
RESET ROLE;
SELECT count(*) FROM rate_limits WHERE name = 'priv';

-- what the install script granted to PUBLIC, function by function
SELECT p.oid::regprocedure AS function,
       has_function_privilege('regress_ratelimit_app', p.oid, 'EXECUTE') AS app_can_execute,
       p.prosecdef AS security_definer
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'ratelimit'
ORDER BY p.oid::regprocedure::text;

REVOKE EXECUTE ON FUNCTION rl_reset(text, text, rl_policy) FROM regress_ratelimit_app;
DROP ROLE regress_ratelimit_app;
SELECT rl_undefine('priv');
DELETE FROM rate_limits;
