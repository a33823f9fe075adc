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

-- Roles for the application and for migrations: rl_grant_app grants what
-- an application calls, rl_grant_admin what a migration or an operator
-- calls; a role with neither keeps only the PUBLIC grants.
CREATE ROLE regress_ratelimit_web;
CREATE ROLE regress_ratelimit_migrate;
CREATE ROLE regress_ratelimit_nobody;
SELECT rl_grant_app('regress_ratelimit_web');
SELECT rl_grant_admin('regress_ratelimit_migrate');
-- granting twice changes nothing
SELECT rl_grant_app('regress_ratelimit_web');

-- the migration role defines, overrides and drops limits, and reads them
SET ROLE regress_ratelimit_migrate;
SELECT rl_define('roles', 'token bucket', 3, '1 hour');
SELECT rl_define_concurrency('roles_jobs', 2);
SELECT rl_override('roles', 'vip', 10, '1 hour');
SELECT rl_unoverride('roles', 'vip');
SELECT rl_undefine('roles_jobs');
SELECT name, key, remaining FROM rl_status WHERE name = 'roles';
SELECT rl_refund('roles', 'u');
RESET ROLE;

-- the application role consumes, refunds, penalizes, blocks and resets
SET ROLE regress_ratelimit_web;
SELECT ok, remaining FROM rl_limit('roles', 'u', 3);
SELECT value FROM rl_refund('roles', 'u', 1);
SELECT ok, remaining FROM rl_limit('roles', 'u');
SELECT value FROM rl_penalize('roles', 'u', 2);
SELECT value FROM rl_block('roles', 'u', '1 minute');
SELECT ok FROM rl_limit('roles', 'u');
SELECT rl_reset('roles', 'u');
SELECT ok, remaining FROM rl_limit('roles', 'u');
SELECT rl_reset('roles', 42), rl_reset('roles', 42::bigint), rl_reset('roles', 42::smallint),
       rl_reset('roles', '00000000-0000-0000-0000-000000000042'::uuid);
-- and administers nothing, nor grants itself more
SELECT rl_define('roles', 'token bucket', 1000, '1 second');
SELECT rl_undefine('roles');
SELECT rl_override('roles', 'u', 1000, '1 second');
SELECT count(*) FROM rl_status;
SELECT rl_grant_admin('regress_ratelimit_web');
RESET ROLE;

-- a role with neither set cannot refund (42501)
SET ROLE regress_ratelimit_nobody;
SELECT rl_refund('roles', 'u');
\set VERBOSITY sqlstate
SELECT rl_refund('roles', 'u');
\set VERBOSITY default
SELECT ok FROM rl_limit('roles', 'u');
RESET ROLE;

-- a NULL role is refused
SELECT rl_grant_app(NULL);
-- a role allowed to call the functions that grant, but not the owner of
-- the extension, is refused before anything is granted
GRANT EXECUTE ON FUNCTION rl_grant_app(regrole), rl_grant_set(text, regrole, boolean)
  TO regress_ratelimit_migrate;
SET ROLE regress_ratelimit_migrate;
SELECT rl_grant_app('regress_ratelimit_nobody');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rl_grant_app(regrole), rl_grant_set(text, regrole, boolean)
  FROM regress_ratelimit_migrate;
SELECT has_function_privilege('regress_ratelimit_nobody',
         'rl_refund(text, text, float8, rl_policy)', 'EXECUTE') AS nobody_refunds;

-- revoked, the application role is back to the PUBLIC grants
SELECT rl_revoke_app('regress_ratelimit_web');
SELECT rl_revoke_admin('regress_ratelimit_migrate');
SET ROLE regress_ratelimit_web;
SELECT rl_refund('roles', 'u');
RESET ROLE;
SET ROLE regress_ratelimit_migrate;
SELECT rl_define('roles', 'token bucket', 1000, '1 second');
RESET ROLE;
SELECT rl_grant_app('regress_ratelimit_web');
SELECT rl_grant_admin('regress_ratelimit_migrate');

-- every function, view and table of the extension is in exactly one entry
-- of rl_grant_sets (app, admin, or none), with the privilege its kind
-- takes; every entry names a member
WITH members AS (
  SELECT p.proname::text AS object, 'EXECUTE' AS privilege
  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
  JOIN pg_extension e ON e.oid = d.refobjid AND d.deptype = 'e' AND e.extname = 'ratelimit'
  UNION
  SELECT c.relname::text, CASE c.relkind WHEN 'v' THEN 'SELECT' END
  FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
  JOIN pg_extension e ON e.oid = d.refobjid AND d.deptype = 'e' AND e.extname = 'ratelimit'
  WHERE c.relkind IN ('r', 'v')
)
SELECT coalesce(m.object, s.object) AS object, s.grant_set, s.privilege,
       m.privilege AS member_privilege
FROM members m FULL JOIN rl_grant_sets s USING (object)
WHERE m.object IS NULL OR s.object IS NULL
   OR (s.grant_set = 'none') <> (s.privilege IS NULL)
   OR (s.grant_set <> 'none' AND s.privilege IS DISTINCT FROM m.privilege)
   OR s.grant_set NOT IN ('app', 'admin', 'none')
ORDER BY 1;
SELECT object, count(*) FROM rl_grant_sets GROUP BY object HAVING count(*) > 1;

-- what each set grants the role itself (so that a REVOKE from PUBLIC
-- leaves it able), and what PUBLIC may call, overloads together
SELECT p.proname AS function,
       bool_and(has_function_privilege('public', p.oid, 'EXECUTE')) AS public,
       bool_and(EXISTS (SELECT FROM aclexplode(p.proacl) a
                        WHERE a.grantee = 'regress_ratelimit_web'::regrole)) AS app,
       bool_and(EXISTS (SELECT FROM aclexplode(p.proacl) a
                        WHERE a.grantee = 'regress_ratelimit_migrate'::regrole)) AS admin,
       count(*) AS overloads
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON e.oid = d.refobjid AND d.deptype = 'e' AND e.extname = 'ratelimit'
GROUP BY p.proname ORDER BY p.proname;
SELECT c.relname AS relation,
       has_table_privilege('regress_ratelimit_web', c.oid, 'SELECT') AS app,
       has_table_privilege('regress_ratelimit_migrate', c.oid, 'SELECT') AS admin,
       has_table_privilege('regress_ratelimit_migrate', c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE') AS admin_writes
FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
JOIN pg_extension e ON e.oid = d.refobjid AND d.deptype = 'e' AND e.extname = 'ratelimit'
WHERE c.relkind IN ('r', 'v') ORDER BY 1;

SELECT rl_revoke_app('regress_ratelimit_web');
SELECT rl_revoke_admin('regress_ratelimit_migrate');
SELECT rl_undefine('roles');
DROP ROLE regress_ratelimit_web, regress_ratelimit_migrate, regress_ratelimit_nobody;
SELECT rl_undefine('priv');
DELETE FROM rate_limits;
