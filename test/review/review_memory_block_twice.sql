-- Review (policies), not fixed: on the memory store a block is applied at
-- Run in a fresh database.
-- commit, and rl_current does not see this transaction's pending block, so
-- a second refusal in the same transaction queues a second block: the
-- block is lengthened (ends 00:15, not 00:10), rl_stats.blocks counts 2,
-- and the second call's retry_after reports the longer block (01:10 from
-- 00:05).  The table store leaves the first block (ends 00:10, 1 block).
-- docs/policies.md: "Not lengthened by calls during the block".
SET ratelimit.now_override = '2026-03-01 00:00:00+00';
SELECT rl_stats_reset();
SELECT rl_define('bm', 'token bucket', 1, '1 hour', block_for => '10 minutes', storage => 'memory');
SELECT rl_define('bt', 'token bucket', 1, '1 hour', block_for => '10 minutes');
BEGIN;
SELECT ok, retry_after FROM rl_limit('bm', 'k');
SELECT ok, retry_after FROM rl_limit('bm', 'k');
SET LOCAL ratelimit.now_override = '2026-03-01 00:05:00+00';
SELECT ok, retry_after FROM rl_limit('bm', 'k');
COMMIT;
BEGIN;
SELECT ok, retry_after FROM rl_limit('bt', 'k');
SELECT ok, retry_after FROM rl_limit('bt', 'k');
SET LOCAL ratelimit.now_override = '2026-03-01 00:05:00+00';
SELECT ok, retry_after FROM rl_limit('bt', 'k');
COMMIT;
SELECT value, ts FROM rl_value('bm', 'k');
SELECT value, ts FROM rl_value('bt', 'k');
SELECT name, refused, blocks FROM rl_stats WHERE name IN ('bm', 'bt') ORDER BY name;
SELECT rl_undefine('bm'); SELECT rl_undefine('bt');
