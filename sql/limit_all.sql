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

SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
