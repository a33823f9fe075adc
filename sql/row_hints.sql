-- Row hints (direct path): a lookup starts where this backend last saw the
-- row's newest version and follows its update chain, and takes what it finds
-- only if the snapshot sees it and it holds the same (name, key, shard);
-- anything else goes to the primary key.  Each case below leaves a hint
-- that no longer leads to the row, and every answer must be what a fresh
-- lookup gives (make test runs this suite on both paths: the SQL path has
-- no hints, and must answer the same).  Line pointers are checked through
-- ctid, on a fresh table of one page.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS ratelimit;
RESET client_min_messages;
CREATE EXTENSION ratelimit;
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('rh', 'token bucket', 10, '1 hour');
SELECT rl_define('rhf', 'token bucket', 10, '1 hour');

-- A hint to a version rolled back: the chain ends there, the snapshot does
-- not see it, and the committed version is found through the index.
SELECT ok, remaining FROM rl_limit('rh', 'aborted');
BEGIN;
SELECT ok, remaining FROM rl_limit('rh', 'aborted', 5);
ROLLBACK;
SELECT ok, remaining FROM rl_check('rh', 'aborted');
BEGIN;
SELECT ok, remaining FROM rl_limit('rh', 'aborted', 2);
SAVEPOINT s;
SELECT ok, remaining FROM rl_limit('rh', 'aborted', 3);
ROLLBACK TO s;
SELECT ok, remaining FROM rl_check('rh', 'aborted');
SELECT ok, remaining FROM rl_limit('rh', 'aborted');
COMMIT;
SELECT ok, remaining FROM rl_limit('rh', 'aborted');

-- A hint to a line pointer since reused by another row's version: key
-- 'gone' is inserted (its hint names its line pointer), deleted by hand and
-- vacuumed away; key 'taker' is then inserted into the same line pointer
-- and emptied.  'gone' has no row: a call starts from a full bucket, not
-- from 'taker''s empty one.
TRUNCATE rate_limits;
CREATE TEMP TABLE hint_at (at tid);
SELECT ok, remaining FROM rl_limit('rh', 'gone', 10);
INSERT INTO hint_at SELECT ctid FROM rate_limits WHERE key = 'gone';
DELETE FROM rate_limits WHERE key = 'gone';
VACUUM rate_limits;
SELECT ok, remaining FROM rl_limit('rh', 'taker', 10);
SELECT count(*) AS taker_reused_gone
FROM rate_limits JOIN hint_at ON rate_limits.ctid = at WHERE key = 'taker';
SELECT ok, remaining FROM rl_check('rh', 'gone');
SELECT ok, remaining FROM rl_limit('rh', 'gone');
SELECT ok, remaining FROM rl_limit('rh', 'gone');
SELECT ok, remaining FROM rl_limit('rh', 'taker');

-- A hint to a line pointer that vacuum freed and nobody reused.
SELECT ok, remaining FROM rl_limit('rh', 'freed', 10);
DELETE FROM rate_limits WHERE key = 'freed';
VACUUM rate_limits;
SELECT ok, remaining FROM rl_check('rh', 'freed');
SELECT ok, remaining FROM rl_limit('rh', 'freed');

-- Hints to line pointers that are not a stored tuple any more, in the
-- middle of the page (a row after them keeps the line pointer array as
-- long): 'mid' is deleted by hand and vacuumed away (its line pointer is
-- unused); 'hot' and 'root' are updated in place (HOT) by the SQL path,
-- which moves no hint, and VACUUM prunes their chains, so that 'root''s
-- hint names the chain's root, now a redirect, and 'hot''s a version in
-- the middle of the chain, now unused.
TRUNCATE rate_limits;
CREATE TEMP TABLE hints (key text, at tid);
SELECT ok, remaining FROM rl_limit('rh', 'mid', 10);
SELECT ok, remaining FROM rl_limit('rh', 'root');
SELECT ok, remaining FROM rl_limit('rh', 'hot');
SELECT ok, remaining FROM rl_limit('rh', 'hot');
INSERT INTO hints SELECT key, ctid FROM rate_limits;
SET ratelimit.direct_access = off;
SELECT ok, remaining FROM rl_limit('rh', 'root');
SELECT ok, remaining FROM rl_limit('rh', 'root');
SELECT ok, remaining FROM rl_limit('rh', 'hot');
SELECT ok, remaining FROM rl_limit('rh', 'hot');
RESET ratelimit.direct_access;
DELETE FROM rate_limits WHERE key = 'mid';
VACUUM rate_limits;
-- no row at any hint (a TID scan sees through neither a redirect nor an
-- unused line pointer), all of them before the last row
SELECT h.key, r.ctid IS NULL AS no_row_there,
	h.at < (SELECT max(ctid) FROM rate_limits) AS in_the_middle
FROM hints h LEFT JOIN rate_limits r ON r.ctid = h.at ORDER BY h.key;
SELECT ok, remaining FROM rl_check('rh', 'mid');
SELECT ok, remaining FROM rl_check('rh', 'root');
SELECT ok, remaining FROM rl_check('rh', 'hot');
SELECT ok, remaining FROM rl_limit('rh', 'root');
SELECT ok, remaining FROM rl_limit('rh', 'hot');
SELECT ok, remaining FROM rl_limit('rh', 'mid');
SELECT ok, remaining FROM rl_limit('rh', 'mid');

-- A hint past the end of the table: 'tail' is emptied on the last of a few
-- pages, those pages are emptied, and VACUUM truncates them (the file
-- stays the same one).
SELECT count(*) FROM generate_series(1, 2000) AS k WHERE (rl_limit('rhf', k)).ok;
SELECT ok, remaining FROM rl_limit('rh', 'tail', 10);
CREATE TEMP TABLE tail_block AS
SELECT (ctid::text::point)[0] AS block FROM rate_limits WHERE key = 'tail';
DELETE FROM rate_limits WHERE name = 'rhf' OR key = 'tail';
VACUUM rate_limits;
SELECT block >= pg_relation_size('rate_limits') / current_setting('block_size')::int
	AS hint_past_the_end
FROM tail_block;
SELECT ok, remaining FROM rl_check('rh', 'tail');
SELECT ok, remaining FROM rl_limit('rh', 'tail');
SELECT ok, remaining FROM rl_limit('rh', 'tail');

-- Rewrites between calls move every row.  'moved' is emptied behind a row
-- that goes, so that VACUUM FULL or CLUSTER moves it down, and a fresh key
-- takes its old place: the call on 'moved' is still refused, and the fresh
-- key is still full.
TRUNCATE rate_limits;
SELECT ok FROM rl_limit('rh', 'before');
SELECT ok, remaining FROM rl_limit('rh', 'moved', 10);
DELETE FROM rate_limits WHERE key = 'before';
VACUUM FULL rate_limits;
SELECT ok, remaining FROM rl_limit('rh', 'fresh');
SELECT ok, remaining FROM rl_limit('rh', 'moved');
SELECT ok, remaining FROM rl_check('rh', 'fresh');
TRUNCATE rate_limits;
SELECT ok FROM rl_limit('rh', 'before');
SELECT ok, remaining FROM rl_limit('rh', 'moved', 10);
DELETE FROM rate_limits WHERE key = 'before';
CLUSTER rate_limits USING rate_limits_pkey;
SELECT ok, remaining FROM rl_limit('rh', 'fresh');
SELECT ok, remaining FROM rl_limit('rh', 'moved');
SELECT ok, remaining FROM rl_check('rh', 'fresh');

-- TRUNCATE, and the rows created again in another order: 'first' is
-- emptied; after the TRUNCATE 'second' is created and emptied where
-- 'first' was, then 'first' is a new key, full.
TRUNCATE rate_limits;
SELECT ok, remaining FROM rl_limit('rh', 'first', 10);
TRUNCATE rate_limits;
SELECT ok, remaining FROM rl_limit('rh', 'second', 10);
SELECT ok, remaining FROM rl_limit('rh', 'first');
SELECT ok, remaining FROM rl_limit('rh', 'second');

-- A hint keyed by the row's own columns: a key edited by hand is another
-- row, and the old key has none.
SELECT ok, remaining FROM rl_limit('rh', 'old', 10);
UPDATE rate_limits SET key = 'new' WHERE key = 'old';
SELECT ok, remaining FROM rl_limit('rh', 'old');
SELECT ok, remaining FROM rl_limit('rh', 'new');

DROP TABLE hint_at, hints, tail_block;
SELECT rl_undefine('rh');
SELECT rl_undefine('rhf');
TRUNCATE rate_limits;
RESET ratelimit.now_override;
