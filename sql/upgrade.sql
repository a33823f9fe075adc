-- Upgrades: ALTER EXTENSION ratelimit UPDATE from 1.0 keeps definitions and
-- state, and ends with the same catalog as a fresh install of the newest
-- version: every member object's definition, grants and comments.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
DROP EXTENSION ratelimit;

-- Everything that makes up the installed extension, as text.
CREATE TEMP VIEW extension_catalog AS
WITH members AS (
  SELECT d.classid, d.objid, d.objsubid
  FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
  WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
    AND e.extname = 'ratelimit'
    -- implicit types (array types, a table's or view's row type) follow
    -- their base object, and are members only from PostgreSQL 17 on
    AND NOT EXISTS (SELECT 1 FROM pg_type t
                    WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                      AND (EXISTS (SELECT 1 FROM pg_type b WHERE b.typarray = t.oid)
                           OR (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) <> 'c'))
)
SELECT pg_describe_object(m.classid, m.objid, m.objsubid) AS object,
  CASE m.classid
    WHEN 'pg_proc'::regclass THEN
      (SELECT pg_get_functiondef(p.oid) || ' acl ' || coalesce(p.proacl::text, 'default')
              || ' owner ' || p.proowner::regrole
       FROM pg_proc p WHERE p.oid = m.objid)
    WHEN 'pg_type'::regclass THEN
      (SELECT (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
               FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0)
              || ' acl ' || coalesce(t.typacl::text, 'default')
       FROM pg_type t WHERE t.oid = m.objid)
    WHEN 'pg_class'::regclass THEN
      (SELECT c.relkind::text || ' ' || coalesce(c.reloptions::text, '') || ' acl ' || coalesce(c.relacl::text, 'default')
              || ' owner ' || c.relowner::regrole
              || ' columns ' || (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                                     || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                                     || coalesce(' collate ' || nullif(a.attcollation, 0)::regcollation::text, '')
                                     || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '')
                                     || coalesce(' comment ' || col_description(c.oid, a.attnum), ''),
                                     ', ' ORDER BY a.attnum)
                                 FROM pg_attribute a LEFT JOIN pg_attrdef ad
                                   ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
              || coalesce(' constraints ' || (SELECT string_agg(pg_get_constraintdef(k.oid), '; ' ORDER BY k.conname)
                                              FROM pg_constraint k WHERE k.conrelid = c.oid), '')
              || coalesce(' indexes ' || (SELECT string_agg(pg_get_indexdef(i.indexrelid), '; ' ORDER BY i.indexrelid::regclass::text)
                                          FROM pg_index i WHERE i.indrelid = c.oid), '')
              || coalesce(' view ' || pg_get_viewdef(c.oid), '')
              || coalesce(' triggers ' || (SELECT string_agg(pg_get_triggerdef(t.oid) || ' enabled ' || t.tgenabled::text, '; ' ORDER BY t.tgname)
                                           FROM pg_trigger t WHERE t.tgrelid = c.oid), '')
              || CASE WHEN c.oid = ANY (e.extconfig) THEN ' dumped' ELSE '' END
       FROM pg_class c, pg_extension e WHERE c.oid = m.objid AND e.extname = 'ratelimit')
    ELSE 'other'
  END AS definition,
  obj_description(m.objid, (SELECT relname FROM pg_class WHERE oid = m.classid)) AS comment
FROM members m;

-- 1.0, in use
CREATE EXTENSION ratelimit VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'ratelimit';
SET ratelimit.now_override = '2026-07-01 00:00:00+00';
SELECT rl_define('up', 'token bucket', 10, '1 minute');
SELECT ok, remaining FROM rl_limit('up', 'kept', 7);
SELECT ok FROM rl_limit('up', 'full', 1);

-- the update
ALTER EXTENSION ratelimit UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'ratelimit';

-- nothing consumed is lost, and the new objects work on the old state
SELECT name, kind, rate, period, capacity FROM rl_definitions;
SELECT name, key, value, ts FROM rate_limits ORDER BY key;
SET ratelimit.now_override = '2026-07-01 00:00:05+00';
SELECT ok, remaining FROM rl_limit('up', 'kept', 4);
SELECT key, value, idle FROM rl_status ORDER BY key;
-- rows written before the column prev existed, and since, have none
SELECT key, prev IS NULL AS no_prev, stored_prev IS NULL AS status_no_prev
FROM rate_limits JOIN rl_status USING (key) ORDER BY key;
-- a sliding window on the upgraded install stores its third number
SELECT rl_define('up_slide', 'sliding window', 3, '1 minute', start => '2026-07-01 00:00:00+00');
SELECT ok, remaining FROM rl_limit('up_slide', 'k', 2);
SET ratelimit.now_override = '2026-07-01 00:01:30+00';
SELECT ok, remaining FROM rl_limit('up_slide', 'k', 2);
SELECT value, ts, prev FROM rate_limits WHERE name = 'up_slide';
SELECT rl_undefine('up_slide');
SET ratelimit.now_override = '2026-07-01 00:00:05+00';
SELECT rl_gc();

CREATE TEMP TABLE upgraded AS SELECT * FROM extension_catalog;

-- a fresh install of the default version
DROP EXTENSION ratelimit;
CREATE EXTENSION ratelimit;
SELECT extversion = (SELECT default_version FROM pg_available_extensions
                     WHERE name = 'ratelimit') AS is_default
FROM pg_extension WHERE extname = 'ratelimit';
CREATE TEMP TABLE fresh AS SELECT * FROM extension_catalog;

-- what was compared, and every difference (none)
SELECT count(*) AS objects,
       count(*) FILTER (WHERE definition IS NULL) AS undescribed,
       count(*) FILTER (WHERE comment IS NULL) AS uncommented
FROM fresh;
SELECT 'only after upgrade' AS side, * FROM (TABLE upgraded EXCEPT TABLE fresh) u
UNION ALL
SELECT 'only in fresh install', * FROM (TABLE fresh EXCEPT TABLE upgraded) f
ORDER BY 2, 1;

-- Initial privileges, as pg_dump reads them: what the scripts granted.
CREATE TEMP VIEW extension_init_privs AS
SELECT pg_describe_object(d.classid, d.objid, 0) AS object, i.objsubid,
       i.initprivs::text AS initprivs
FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
JOIN pg_init_privs i ON i.classoid = d.classid AND i.objoid = d.objid
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND e.extname = 'ratelimit';
CREATE TEMP TABLE fresh_init_privs AS SELECT * FROM extension_init_privs;

-- 1.2 -> 1.3 with EXECUTE granted by hand on functions the update drops
-- and creates again with a new signature: the grants are kept, on the new
-- functions only, and are not taken for privileges the scripts gave (a
-- dump still carries them).
DROP EXTENSION ratelimit;
CREATE EXTENSION ratelimit VERSION '1.2';
CREATE ROLE regress_ratelimit_ops;
CREATE ROLE regress_ratelimit_grantor;
GRANT EXECUTE ON FUNCTION rl_define(text, text, float8, interval, float8, float8, integer, timestamptz)
  TO regress_ratelimit_ops WITH GRANT OPTION;
GRANT EXECUTE ON FUNCTION rl_reset(text, text) TO regress_ratelimit_ops;
GRANT EXECUTE ON FUNCTION rl_stats_rows() TO regress_ratelimit_ops;
-- a grant made by a role holding the grant option
SET ROLE regress_ratelimit_ops;
GRANT EXECUTE ON FUNCTION rl_define(text, text, float8, interval, float8, float8, integer, timestamptz)
  TO regress_ratelimit_grantor;
RESET ROLE;
-- a function the update keeps, with a grant of its own
GRANT EXECUTE ON FUNCTION rl_undefine(text) TO regress_ratelimit_grantor;
-- what each role may execute beyond what PUBLIC may
CREATE TEMP VIEW granted_by_hand AS
SELECT r.rolname, p.oid::regprocedure::text AS function
FROM pg_proc p CROSS JOIN pg_roles r
WHERE p.pronamespace = 'public'::regnamespace
  AND r.rolname IN ('regress_ratelimit_ops', 'regress_ratelimit_grantor')
  AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
  AND NOT has_function_privilege('public', p.oid, 'EXECUTE');
CREATE TEMP TABLE before_update AS SELECT * FROM granted_by_hand;
ALTER EXTENSION ratelimit UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'ratelimit';
-- what each role may execute now, and what it could before
SELECT rolname, function, (a.function IS NOT NULL) AS now,
       (b.function IS NOT NULL) AS before
FROM granted_by_hand a FULL JOIN before_update b USING (rolname, function)
ORDER BY 1, 2;
SELECT has_function_privilege('regress_ratelimit_ops',
         'rl_define(text, text, float8, interval, float8, float8, integer, timestamptz, text, text, boolean, interval, float8, interval, interval, integer, integer, float8)',
         'EXECUTE WITH GRANT OPTION') AS define_grant_option,
       has_function_privilege('regress_ratelimit_ops',
         'rl_reset(text, text, rl_policy)', 'EXECUTE WITH GRANT OPTION') AS reset_grant_option,
       has_function_privilege('regress_ratelimit_ops',
         'rl_reset(text, bigint, rl_policy)', 'EXECUTE') AS reset_bigint;
-- the role uses them
SET ROLE regress_ratelimit_ops;
SELECT rl_define('granted', 'token bucket', 2, '1 minute');
SELECT rl_reset('granted', 'k');
RESET ROLE;
-- the scripts' own privileges are the initial ones, as in a fresh install
SELECT 'only after upgrade' AS side, * FROM (TABLE extension_init_privs EXCEPT TABLE fresh_init_privs) u
UNION ALL
SELECT 'only in fresh install', * FROM (TABLE fresh_init_privs EXCEPT TABLE extension_init_privs) f
ORDER BY 2, 1;
-- nothing the update used is left behind
SELECT relname AS temp_table FROM pg_class
WHERE relnamespace = pg_my_temp_schema() AND relkind = 'r' ORDER BY 1;
-- no role is held by initial privileges (PostgreSQL 17 on: pg_shdepend 'i')
SELECT count(*) AS initial_privilege_dependencies FROM pg_shdepend
WHERE deptype = 'i' AND refobjid IN ('regress_ratelimit_ops'::regrole, 'regress_ratelimit_grantor'::regrole);
-- without the grants made by hand, the same as a fresh install
SELECT rl_undefine('granted');
DROP OWNED BY regress_ratelimit_grantor, regress_ratelimit_ops;
DROP ROLE regress_ratelimit_grantor, regress_ratelimit_ops;
CREATE TEMP TABLE upgraded_12 AS SELECT * FROM extension_catalog;
SELECT 'only after upgrade' AS side, * FROM (TABLE upgraded_12 EXCEPT TABLE fresh) u
UNION ALL
SELECT 'only in fresh install', * FROM (TABLE fresh EXCEPT TABLE upgraded_12) f
ORDER BY 2, 1;

DROP TABLE upgraded, upgraded_12, fresh, fresh_init_privs, before_update;
DROP VIEW extension_catalog, extension_init_privs, granted_by_hand;
RESET ratelimit.now_override;
