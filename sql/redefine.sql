-- Redefining a limit keeps its stored state (value and ts, clamped to the
-- new capacity), while a key with no row stands for a full bucket at the
-- new definition.  docs/semantics.md (Redefinitions) states the two
-- consequences these cases pin down:
--  1. after rl_gc, raising a capacity gives a deleted (idle) key the new
--     capacity at once, where a kept row refills toward it at the rate;
--  2. changing a shard count, up or down, can make up to one capacity
--     available at once: shards with no row start full at the new
--     per-shard capacity, and rows past the new count are ignored.
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- 1. rl_gc, then a raised capacity: two keys that are both full at 10
-- answer differently once the capacity is 100, depending on whether
-- rl_gc deleted one of them
SELECT rl_define('rd', 'token bucket', 10, '1 hour');
SELECT ok FROM rl_limit('rd', 'deleted', 10);
SET ratelimit.now_override = '2026-01-01 01:00:00+00';	-- 'deleted' full again
SELECT ok FROM rl_limit('rd', 'kept', 1);		-- 'kept' refilling
SELECT key, idle FROM rl_status WHERE name = 'rd' ORDER BY key;
SELECT rl_gc();
SET ratelimit.now_override = '2026-01-01 01:06:00+00';	-- 'kept' full again
CREATE TEMP VIEW rd_values AS
  SELECT 'deleted' AS key, value FROM rl_value('rd', 'deleted')
  UNION ALL SELECT 'kept', value FROM rl_value('rd', 'kept');
SELECT * FROM rd_values ORDER BY key;
SELECT rl_define('rd', 'token bucket', 10, '1 hour', capacity => 100);
SELECT * FROM rd_values ORDER BY key;
DROP VIEW rd_values;
SELECT rl_undefine('rd');

-- 2a. shards up, 4 -> 8: every stored shard is empty, the new ones are full
SELECT rl_define('rs', 'token bucket', 16, '1 hour', shards => 4);
INSERT INTO rate_limits (name, key, shard, value, ts)
  SELECT 'rs', 'k', s, 0, '2026-01-01 01:00:00+00' FROM generate_series(0, 3) s;
SELECT value AS before FROM rl_value('rs', 'k');
SELECT rl_define('rs', 'token bucket', 16, '1 hour', shards => 8);
SELECT value AS after FROM rl_value('rs', 'k');
SELECT rl_undefine('rs');

-- 2b. shards down, 8 -> 4: only shards 4-7 were used (and are empty);
-- shards 0-3 have no row and start full at the larger per-shard capacity
SELECT rl_define('rs', 'token bucket', 16, '1 hour', shards => 8);
INSERT INTO rate_limits (name, key, shard, value, ts)
  SELECT 'rs', 'k', s, 0, '2026-01-01 01:00:00+00' FROM generate_series(4, 7) s;
SELECT value AS before FROM rl_value('rs', 'k');
SELECT rl_define('rs', 'token bucket', 16, '1 hour', shards => 4);
SELECT value AS after FROM rl_value('rs', 'k');
SELECT rl_undefine('rs');

-- 3. a calendar limit's time_zone changed: its windows move.  100 used
-- in UTC's day by 12:00; New York's day began at 05:00 UTC, after the
-- stored window (00:00 UTC), so the key starts that day full
SET ratelimit.now_override = '2026-01-01 12:00:00+00';
SELECT rl_define('rz', 'fixed window', 100, '1 day', time_zone => 'UTC');
SELECT ok FROM rl_limit('rz', 'k', 100);
SELECT ok FROM rl_limit('rz', 'k');
SELECT rl_define('rz', 'fixed window', 100, '1 day',
	time_zone => 'America/New_York');
SELECT ok, remaining FROM rl_limit('rz', 'k');
SELECT rl_undefine('rz');
