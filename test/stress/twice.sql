-- one sharded key called twice in one transaction, by 12 sessions: a call
-- holding a shard of the key waited for another of its shards, and two
-- such transactions deadlocked (40P01)
BEGIN;
SELECT ok FROM rl_limit('s8', 'k');
SELECT ok FROM rl_limit('s8', 'k');
COMMIT;
