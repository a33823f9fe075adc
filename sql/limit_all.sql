-- rl_limit_all: several limits, all or nothing.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('per_user', 'token bucket', 3, '1 minute');
SELECT rl_define('global', 'token bucket', 5, '1 minute');

-- per user and global at once
SELECT * FROM rl_limit_all(ARRAY['per_user', 'global'], ARRAY['u1', NULL], ARRAY[1, 1]);
SELECT * FROM rl_limit_all(ARRAY['per_user', 'global'], ARRAY['u1', NULL], ARRAY[2, 1]);
-- the user is out: refused, and the global limit keeps its tokens
SELECT * FROM rl_limit_all(ARRAY['per_user', 'global'], ARRAY['u1', NULL], ARRAY[1, 1]);
SELECT (rl_value('global')).value AS global_untouched;
-- another user drains the global limit: refused by global, the NULL key
SELECT * FROM rl_limit_all(ARRAY['global', 'per_user'], ARRAY[NULL, 'u2'], ARRAY[3, 1]);
SELECT * FROM rl_limit_all(ARRAY['per_user', 'global'], ARRAY['u2', NULL], ARRAY[1, 1]);
SELECT (rl_value('per_user', 'u2')).value AS user_untouched;
-- both refuse: the longest retry_after and the limit behind it
SELECT * FROM rl_limit_all(ARRAY['per_user', 'global'], ARRAY['u1', NULL], ARRAY[3, 5]);
-- a limit named twice consumes the sum of its counts
SELECT rl_reset('global');
SELECT ok FROM rl_limit_all(ARRAY['global', 'global'], ARRAY[NULL, NULL], ARRAY[2, 2]);
SELECT (rl_value('global')).value AS one_left;
SELECT ok, refused_name FROM rl_limit_all(ARRAY['global', 'global'], ARRAY[NULL, NULL], ARRAY[1, 1]);
-- reservations, throws, and a rollback of the whole call
SELECT rl_reset('global');
SELECT * FROM rl_limit_all(ARRAY['global'], ARRAY[NULL], ARRAY[7], reserve => true);
\set VERBOSITY verbose
SELECT * FROM rl_limit_all(ARRAY['global', 'per_user'], ARRAY[NULL, 'u3'], ARRAY[1, 1], throws => true);
\set VERBOSITY default
SELECT (rl_value('per_user', 'u3')).value AS untouched_after_throw;
BEGIN;
SELECT ok FROM rl_limit_all(ARRAY['per_user', 'per_user'], ARRAY['u4', 'u5'], ARRAY[3, 3]);
ROLLBACK;
SELECT count(*) AS nothing_kept FROM rate_limits WHERE key IN ('u4', 'u5');

-- bad input changes nothing
SELECT * FROM rl_limit_all(ARRAY['per_user'], ARRAY['u1', 'u2'], ARRAY[1]);
SELECT * FROM rl_limit_all(ARRAY[]::text[], ARRAY[]::text[], ARRAY[]::float8[]);
SELECT * FROM rl_limit_all(ARRAY[NULL, 'global'], ARRAY['u1', NULL], ARRAY[1, 1]);
SELECT * FROM rl_limit_all(ARRAY['per_user', 'global'], ARRAY['u9', NULL], ARRAY[1, NULL]);
SELECT * FROM rl_limit_all(ARRAY['per_user', 'nope'], ARRAY['u9', NULL], ARRAY[1, 1]);
SELECT * FROM rl_limit_all(ARRAY['per_user', 'global'], ARRAY['u9', NULL], ARRAY[1, 6]);
SELECT * FROM rl_limit_all(NULL, ARRAY['u9'], ARRAY[1]);
SELECT * FROM rl_limit_all(ARRAY[['per_user']], ARRAY[['u9']], ARRAY[[1]]);
SELECT count(*) AS u9_untouched FROM rate_limits WHERE key = 'u9';


-- At most 1000 limits in one call.  Beyond that: 54000, raised before any
-- row is locked or written, however large the arrays.
SELECT rl_define('many', 'token bucket', 1000, '1 hour');
SELECT count(*) AS rows_before FROM rate_limits \gset
SELECT ok FROM rl_limit_all(
	(SELECT array_agg('many'::text) FROM generate_series(1, 1001)),
	(SELECT array_agg('k' || i) FROM generate_series(1, 1001) AS i),
	(SELECT array_agg(1::float8) FROM generate_series(1, 1001)));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT ok FROM rl_limit_all(
	(SELECT array_agg('many'::text) FROM generate_series(1, 100000)),
	(SELECT array_agg('k' || i) FROM generate_series(1, 100000) AS i),
	(SELECT array_agg(1::float8) FROM generate_series(1, 100000)));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT ok FROM rl_limit_all(ARRAY['many'], ARRAY['k1'],
	(SELECT array_agg(1::float8) FROM generate_series(1, 1001)));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT count(*) - :rows_before AS rows_written FROM rate_limits;

-- The canonical order with as many limits as a call may name: names and
-- keys sharing prefixes, bytes above 0x7f, the NULL key, duplicates, in
-- shuffled order.  Each limit's row is created, locked and then written
-- by a command of its own, all in canonical order, so the cmin of the
-- versions the granted call leaves is that order.
SELECT rl_define('ord', 'token bucket', 1000, '1 hour');
SELECT rl_define('orda', 'token bucket', 1000, '1 hour');
SELECT rl_define('ordb', 'token bucket', 1000, '1 hour');
SELECT rl_define('ord' || chr(233), 'token bucket', 1000, '1 hour');
CREATE TEMP TABLE ord_call AS
SELECT md5(i::text) AS pos,
	(ARRAY['ord', 'orda', 'ordb', 'ord' || chr(233)])[i % 4 + 1] AS name,
	CASE WHEN i % 50 = 0 THEN NULL
		WHEN i % 3 = 0 THEN (i / 7)::text
		WHEN i % 3 = 1 THEN 'k' || repeat('z', i % 5)
		ELSE chr(200 + i % 60) || (i % 11)::text END AS key
FROM generate_series(1, 1000) AS i;
SELECT count(*) AS limits,
	count(DISTINCT (name, coalesce(key, ''))) AS distinct_limits
FROM ord_call;
BEGIN;
SELECT ok, refused_name, refused_key FROM rl_limit_all(
	(SELECT array_agg(name ORDER BY pos) FROM ord_call),
	(SELECT array_agg(key ORDER BY pos) FROM ord_call),
	(SELECT array_agg(1::float8) FROM ord_call));
SELECT count(*) AS created, bool_and(s.value = 1000 - c.n) AS each_took_its_count,
	bool_and(by_creation = by_bytes) AS canonical_order
FROM (SELECT name, key, value,
		row_number() OVER (ORDER BY cmin::text::int) AS by_creation,
		row_number() OVER (ORDER BY name COLLATE "C", key COLLATE "C") AS by_bytes
	FROM rate_limits WHERE name IN (SELECT name FROM ord_call)) s
JOIN (SELECT name, coalesce(key, '') AS key, count(*) AS n
	FROM ord_call GROUP BY 1, 2) c USING (name, key);
ROLLBACK;

-- A cancel that arrives while a call of the largest size checks its
-- arguments stops it there, before its first statement: that statement
-- (an insert of a new row, or a locking read) would add a "SQL statement"
-- context to the error.
SELECT pg_cancel_backend(pg_backend_pid()) AND (rl_limit_all(n, k, c)).ok
FROM (SELECT array_agg(name ORDER BY pos) AS n, array_agg(key ORDER BY pos) AS k,
		array_agg(1::float8) AS c FROM ord_call) AS call;
SELECT count(*) AS nothing_written FROM rate_limits
WHERE name IN (SELECT name FROM ord_call);
DROP TABLE ord_call;

-- What a refused call leaves: nothing.  A call its committed state
-- refuses is refused before it locks or creates a row, so the limits that
-- had no row still have none, rows that existed keep their state, and
-- rl_gc finds nothing of them to delete (it may delete other suites' rows
-- that went idle on the real clock meanwhile: their count is not shown).
SELECT rl_define('left_bucket', 'token bucket', 10, '1 hour');
SELECT rl_define('left_window', 'fixed window', 10, '1 hour');
SELECT rl_define('left_sharded', 'token bucket', 10, '1 hour', shards => 2);
SELECT ok FROM rl_limit('left_bucket', 'had_row', 4);
SELECT ok FROM rl_limit('left_window', 'drained', 10);
SELECT ok, refused_name, refused_key FROM rl_limit_all(
	ARRAY['left_bucket', 'left_bucket', 'left_window', 'left_window', 'left_sharded'],
	ARRAY['had_row', 'new', 'drained', 'new', 'new'],
	ARRAY[1, 1, 1, 1, 1]);
SELECT name, key, count(*) AS stored_rows, min(stored_value) AS stored_value,
	bool_and(stored_value = capacity / shards) AS full, bool_and(idle) AS idle
FROM rl_status WHERE name LIKE 'left\_%'
GROUP BY name, key ORDER BY name, key;
SELECT rl_gc(1000) >= 0 AS collected;
SELECT name, key, stored_value FROM rl_status WHERE name LIKE 'left\_%'
ORDER BY name, key;

SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
