-- Who is refused (rl_refused): per limit name, the keys refused and
-- blocked most over the last two windows, at pinned times.  Many sessions
-- refusing at once: test/stress/refused.sh.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET ratelimit.now_override = '2026-03-01 00:10:00+00';
SELECT rl_stats_reset();
SELECT current_setting('ratelimit.refused_top_k') AS top_k,
       current_setting('ratelimit.refused_window') AS refused_window;

-- This database's rows of the suite's limits, in the view's order.
CREATE TEMP VIEW rf AS
SELECT name, key, refusals, blocks, error, since
FROM rl_refused WHERE datname = current_database() AND name LIKE 'rf\_%'
ORDER BY name, refusals + blocks + error DESC, key NULLS FIRST;

-- The calls of a list of keys, in order.
CREATE FUNCTION pg_temp.calls(lim text, keys text[])
RETURNS TABLE (key text, ok boolean)
LANGUAGE sql AS $$
SELECT k.key, r.ok
FROM unnest(keys) WITH ORDINALITY k(key, i), LATERAL rl_limit(lim, k.key) r
ORDER BY k.i
$$;

-- One token a day: the first call on a key is granted, the rest refused.
-- 'a' is refused three times, 'b' once, 'c' never (granted calls add
-- nothing), the NULL key once.
SELECT rl_define('rf_rank', 'token bucket', 1, '1 day');
SELECT * FROM pg_temp.calls('rf_rank', '{a,a,a,a,b,b,c}');
SELECT ok FROM rl_limit('rf_rank', NULL);
SELECT ok FROM rl_limit('rf_rank', NULL);
SELECT * FROM rf;
-- a refusal raised as RL001 counts too
SELECT ok FROM rl_limit('rf_rank', 'b', throws => true);
SELECT key, refusals FROM rf WHERE name = 'rf_rank' AND key = 'b';

-- Blocks: a refusal blocks the key for ten minutes; refusals during the
-- block start none.  A refused rl_check is a refusal, and blocks too.
SELECT rl_define('rf_block', 'token bucket', 1, '1 day', block_for => '10 minutes');
SELECT * FROM pg_temp.calls('rf_block', '{x,x,x,y}');
SELECT ok FROM rl_check('rf_block', 'y');
SELECT * FROM rf WHERE name = 'rf_block';

-- In the memory store, the same.
SELECT rl_define('rf_memory', 'token bucket', 1, '1 day', storage => 'memory');
SELECT * FROM pg_temp.calls('rf_memory', '{m,m,m,n}');
SELECT * FROM rf WHERE name = 'rf_memory';

-- An address a deny list refuses counts as a refusal, in rl_check as in
-- rl_limit, on both stores: the lists decide before the store.
SELECT rl_define('rf_deny', 'token bucket', 1, '1 day');
SELECT rl_define('rf_deny_m', 'token bucket', 1, '1 day', storage => 'memory');
SELECT rl_deny(name, '10.6.0.0/16') FROM (VALUES ('rf_deny'), ('rf_deny_m')) v(name);
SELECT ok FROM rl_check('rf_deny', '10.6.1.2'::inet);
SELECT ok FROM rl_check('rf_deny_m', '10.6.1.2'::inet);
SELECT ok FROM rl_limit('rf_deny', '10.6.1.3'::inet);
SELECT * FROM rf WHERE name IN ('rf_deny', 'rf_deny_m');
SELECT name, check_refused, refused FROM rl_stats
WHERE datname = current_database() AND name IN ('rf_deny', 'rf_deny_m')
ORDER BY name;

-- In rl_limit_all, only the limit that refused counts.
SELECT ok FROM rl_limit_all(ARRAY['rf_rank', 'rf_memory'], ARRAY['c', 'n2'], ARRAY[1, 1]);
SELECT name, key, refusals FROM rf WHERE key IN ('c', 'n2');

-- More distinct keys refused than top_k (32): 40 keys refused once each.
-- The first 32 are counted exactly; each of the last 8 takes the place of
-- a key counted once (the earliest), so it may have been refused once
-- before it was counted: error 1.
SELECT rl_define('rf_many', 'token bucket', 1, '1 day');
SELECT count(*) FILTER (WHERE NOT ok) AS refused
FROM pg_temp.calls('rf_many', ARRAY(SELECT k FROM (
  SELECT 'k' || lpad(i::text, 2, '0') AS k FROM generate_series(1, 40) i) s,
  LATERAL (VALUES (1), (2)) t(n) ORDER BY k, n));
SELECT count(*) AS rows, min(key), max(key),
       count(*) FILTER (WHERE error = 0) AS exact,
       count(*) FILTER (WHERE error = 1) AS error_1
FROM rf WHERE name = 'rf_many';
SELECT key, refusals, error FROM rf
WHERE name = 'rf_many' AND key IN ('k01', 'k08', 'k09', 'k32', 'k33', 'k40');
-- k40 refused twice more ranks first; k01, refused before and evicted,
-- comes back in the place of k09 with error 1 (truly 2: 1 + 1)
SELECT * FROM pg_temp.calls('rf_many', '{k40,k40,k01}');
SELECT key, refusals, error FROM rf WHERE name = 'rf_many' LIMIT 3;
SELECT count(*) AS rows FROM rf WHERE name = 'rf_many';
SELECT key FROM rf WHERE name = 'rf_many' AND key IN ('k01', 'k09');

-- The window (1 hour): an hour later both windows are summed.
SET ratelimit.now_override = '2026-03-01 01:05:00+00';
SELECT * FROM pg_temp.calls('rf_rank', '{b,b}');
SELECT * FROM rf WHERE name = 'rf_rank';
-- A key counted only in this window, evicted in the last one: the last
-- window's smallest count (1) bounds what it missed there.  Of 33
-- candidates the 32 with the largest counts stay.
SELECT * FROM pg_temp.calls('rf_many', '{k05}');
SELECT key, refusals, error, since FROM rf WHERE name = 'rf_many' AND key = 'k05';
SELECT count(*) AS rows FROM rf WHERE name = 'rf_many';
-- Two hours on, the first window has gone: a key that stopped being
-- refused drops out.
SET ratelimit.now_override = '2026-03-01 02:30:00+00';
SELECT * FROM rf WHERE name IN ('rf_rank', 'rf_many');
-- Three windows on, nothing is left.
SET ratelimit.now_override = '2026-03-01 05:00:00+00';
SELECT count(*) FROM rf;

-- rl_stats_reset(name) forgets one name; rl_stats_reset() every name.
SELECT * FROM pg_temp.calls('rf_rank', '{a,b}');
SELECT * FROM pg_temp.calls('rf_block', '{x}');
SELECT rl_stats_reset('rf_rank');
SELECT name, key FROM rf;
SELECT rl_stats_reset();
SELECT count(*) FROM rf;

-- Readable by the admin grant set, not by PUBLIC.
SELECT object, privilege FROM rl_grant_sets WHERE object LIKE 'rl_refused%' ORDER BY 1;
CREATE ROLE rf_reader;
SET ROLE rf_reader;
SELECT count(*) FROM rl_refused;
RESET ROLE;
SELECT rl_grant_admin('rf_reader');
SET ROLE rf_reader;
SELECT count(*) FROM rl_refused;
RESET ROLE;
SELECT rl_revoke_admin('rf_reader');
DROP ROLE rf_reader;

SELECT rl_undefine(name) FROM (VALUES ('rf_rank'), ('rf_block'), ('rf_memory'), ('rf_many'), ('rf_deny'), ('rf_deny_m')) v(name);

-- Keys are a database's data: the view shows this database's rows only,
-- whoever reads it.  Another database's keys, in its own encoding, are
-- shown there, whole.
\set rf_db :DBNAME
CREATE DATABASE rf_latin1 ENCODING 'LATIN1' TEMPLATE template0 LOCALE 'C';
\c rf_latin1
SET client_encoding = 'UTF8';
SET ratelimit.now_override = '2026-03-01 05:00:00+00';
CREATE EXTENSION ratelimit;
SELECT rl_define('rf_enc', 'token bucket', 1, '1 day');
SELECT ok FROM rl_limit('rf_enc', 'josé'), rl_limit('rf_enc', 'josé') AS x(ok2);
SELECT key = 'josé' AS same, octet_length(key), refusals,
       datname = current_database() AS here
FROM rl_refused WHERE name = 'rf_enc';
\c :rf_db
SET ratelimit.now_override = '2026-03-01 05:00:00+00';
SELECT count(*) FROM rl_refused WHERE name = 'rf_enc';
SELECT count(*) FROM rl_refused
WHERE dbid <> (SELECT oid FROM pg_database WHERE datname = current_database());
CREATE ROLE rf_reader;
SELECT rl_grant_admin('rf_reader');
SET ROLE rf_reader;
SELECT count(*) FROM rl_refused WHERE name = 'rf_enc';
RESET ROLE;
SELECT rl_revoke_admin('rf_reader');
DROP ROLE rf_reader;
DROP DATABASE rf_latin1;
RESET ratelimit.now_override;
