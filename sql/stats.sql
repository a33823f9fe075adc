-- Per-limit statistics (rl_stats): every counter against a known sequence
-- of calls at pinned times.  Lock waits need two sessions:
-- test/specs/stats_waits.spec.  Servers without shared_preload_libraries,
-- the bound on names and a restart: test/t/010_stats.pl.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_stats_reset();
SELECT storage IN ('shared memory', 'dsm registry') AS available,
       max_names, names, untracked_calls, stats_reset
FROM rl_stats_info;

-- What the view shows of this database's limits.
CREATE TEMP VIEW st AS
SELECT name, calls, granted, refused, errors, tokens, reservations,
       deepest_reservation, lock_waits, lock_wait_time, both_shards_busy,
       last_refusal, stats_reset
FROM rl_stats WHERE datname = current_database() AND name LIKE 'st\_%'
ORDER BY name;

-- A token bucket of 3: three grants, two refusals (one raised as RL001),
-- one impossible count (an error); rl_value counts nothing, and a refused
-- rl_check is no call: it counts in check_refused alone.
SELECT rl_define('st_bucket', 'token bucket', 3, '1 hour');
SELECT ok, remaining FROM rl_limit('st_bucket', 'u');
SELECT ok, remaining FROM rl_limit('st_bucket', 'u', 2);
SELECT ok FROM rl_check('st_bucket', 'u');
SELECT ok FROM rl_check('st_bucket', 'w');
SELECT value FROM rl_value('st_bucket', 'u');
SELECT name, calls, refused, check_refused, last_refusal FROM rl_stats
WHERE datname = current_database() AND name = 'st_bucket';
SET ratelimit.now_override = '2026-01-01 00:10:00+00';
SELECT ok, retry_after FROM rl_limit('st_bucket', 'u');
SET ratelimit.now_override = '2026-01-01 00:15:00+00';
SELECT ok FROM rl_limit('st_bucket', 'u', throws => true);
SELECT ok FROM rl_limit('st_bucket', 'u', 4);
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
-- counted although rolled back: the counters are not transactional
BEGIN;
SELECT ok, remaining FROM rl_limit('st_bucket', 'v', 2.5);
ROLLBACK;
SELECT * FROM st;

-- Reservations: a bucket of 2 that may go 10 below zero.  Two reserve,
-- the deepest leaving 7 below zero; the third would pass max_reserved.
SELECT rl_define('st_reserve', 'token bucket', 2, '1 hour', max_reserved => 10);
SELECT ok, retry_after, remaining FROM rl_limit('st_reserve', NULL, 2);
SELECT ok, retry_after, remaining FROM rl_limit('st_reserve', NULL, 3, reserve => true);
SELECT ok, retry_after, remaining FROM rl_limit('st_reserve', NULL, 4, reserve => true);
SELECT ok, retry_after, remaining FROM rl_limit('st_reserve', NULL, 5, reserve => true);
SELECT * FROM st WHERE name = 'st_reserve';

-- An inline config counts under its name; an undefined name counts
-- nowhere (no row is made for names that do not exist).
SELECT ok FROM rl_limit('st_inline', 'k', config => rl_fixed_window(1, '1 day'));
SELECT ok FROM rl_limit('st_inline', 'k', config => rl_fixed_window(1, '1 day'));
SELECT ok FROM rl_limit('st_undefined', 'k');
SELECT * FROM st WHERE name IN ('st_inline', 'st_undefined');

-- rl_enforce counts each row as a call; the refused row raises RL001.
SELECT rl_define('st_trigger', 'fixed window', 2, '1 day');
CREATE TABLE st_messages (user_id int, body text);
CREATE TRIGGER st_enforce BEFORE INSERT ON st_messages
	FOR EACH ROW EXECUTE FUNCTION rl_enforce('st_trigger', 'user_id');
INSERT INTO st_messages VALUES (1, 'a');
INSERT INTO st_messages VALUES (1, 'b');
INSERT INTO st_messages VALUES (1, 'c');
SELECT * FROM st WHERE name = 'st_trigger';

-- rl_limit_all: each limit once per call, however often named.  A granted
-- call: both take their tokens (st_all_a 1 + 2, named twice).  A refused
-- call: the refusing limit counts a refusal, the other a grant that took
-- nothing.  An error counts for every limit of the call.
SELECT rl_define('st_all_a', 'token bucket', 10, '1 hour');
SELECT rl_define('st_all_b', 'token bucket', 2, '1 hour');
SELECT ok, refused_name FROM rl_limit_all(ARRAY['st_all_a', 'st_all_b', 'st_all_a'], ARRAY['k', 'k', 'k'], ARRAY[1, 1, 2]);
SELECT ok, refused_name FROM rl_limit_all(ARRAY['st_all_a', 'st_all_b'], ARRAY['k', 'k'], ARRAY[1, 2]);
SELECT ok FROM rl_limit_all(ARRAY['st_all_a', 'st_all_b'], ARRAY['k', 'k'], ARRAY[1, -1]);
SELECT * FROM st WHERE name LIKE 'st\_all\__';

-- A sharded limit: one session never finds both shards busy.
SELECT rl_define('st_shards', 'token bucket', 4, '1 hour', shards => 2);
SELECT (rl_limit('st_shards', NULL)).ok FROM generate_series(1, 5);
SELECT name, calls, granted, refused, tokens, lock_waits, both_shards_busy
FROM st WHERE name = 'st_shards';

-- ratelimit.track_stats = off counts nothing.
SET ratelimit.track_stats = off;
SELECT ok FROM rl_limit('st_bucket', 'w');
SELECT ok FROM rl_limit('st_off', 'w', config => rl_token_bucket(1, '1 hour'));
RESET ratelimit.track_stats;
SELECT name, calls FROM st WHERE name IN ('st_bucket', 'st_off');

-- rl_stats_reset(name) zeroes one name from the pinned time on; the
-- others keep counting.  rl_stats_reset() forgets every row.
SET ratelimit.now_override = '2026-01-02 00:00:00+00';
SELECT rl_stats_reset('st_bucket');
SELECT rl_stats_reset('st_no_such_name');
SELECT * FROM st WHERE name IN ('st_bucket', 'st_reserve');
SELECT ok FROM rl_limit('st_bucket', 'x');
SELECT name, calls, granted, tokens, stats_reset FROM st WHERE name = 'st_bucket';
SELECT names, untracked_calls FROM rl_stats_info;
SELECT rl_stats_reset();
SELECT count(*) FROM rl_stats;
SELECT names, untracked_calls, stats_reset FROM rl_stats_info;

-- Not granted to PUBLIC: an application role reads no statistics and
-- cannot reset them.
CREATE ROLE regress_ratelimit_stats LOGIN;
SET ROLE regress_ratelimit_stats;
SELECT ok FROM rl_limit('st_bucket', 'y');
SELECT count(*) FROM rl_stats;
SELECT * FROM rl_stats_info;
SELECT rl_stats_reset();
SELECT rl_stats_reset('st_bucket');
RESET ROLE;
SELECT name, calls, granted FROM st;
-- docs/statistics.md's monitoring grant: the views and their functions
GRANT SELECT ON rl_stats, rl_stats_info TO regress_ratelimit_stats;
SET ROLE regress_ratelimit_stats;
SELECT count(*) FROM rl_stats;
RESET ROLE;
GRANT EXECUTE ON FUNCTION rl_stats_rows(), rl_stats_info_row() TO regress_ratelimit_stats;
SET ROLE regress_ratelimit_stats;
SELECT name, calls FROM rl_stats WHERE datname = current_database();
SELECT storage IN ('shared memory', 'dsm registry') AS available, names FROM rl_stats_info;
SELECT rl_stats_reset();
RESET ROLE;
REVOKE ALL ON rl_stats, rl_stats_info FROM regress_ratelimit_stats;
REVOKE ALL ON FUNCTION rl_stats_rows(), rl_stats_info_row() FROM regress_ratelimit_stats;
DROP ROLE regress_ratelimit_stats;

DROP TABLE st_messages;
SELECT rl_undefine(name) FROM rl_definitions WHERE name LIKE 'st\_%' ORDER BY name;
SELECT rl_reset('st_inline', 'k');

-- rl_limit_all whose second write fails (a CHECK constraint a reservation
-- breaks): one call, one error for each limit, no grant counted
SELECT rl_define('st_wa', 'token bucket', 10, '1 minute');
SELECT rl_define('st_wb', 'token bucket', 1, '1 minute');
SELECT ok FROM rl_limit_all('{st_wa,st_wb}', '{k,k}', '{1,1}');
SELECT rl_stats_reset('st_wa'), rl_stats_reset('st_wb');
ALTER TABLE rate_limits ADD CONSTRAINT st_no_debt CHECK (value >= 0) NOT VALID;
SELECT ok FROM rl_limit_all('{st_wa,st_wb}', '{k,k}', '{1,1}', reserve => true);
ALTER TABLE rate_limits DROP CONSTRAINT st_no_debt;
SELECT name, calls, granted, refused, errors, tokens,
       calls = granted + refused + errors AS adds_up
FROM rl_stats WHERE name IN ('st_wa', 'st_wb') ORDER BY name;
SELECT rl_undefine('st_wa'), rl_undefine('st_wb');
