-- The stress test's verdict.  Every query prints one row; the harness
-- compares the output with check.expected.
\pset footer off
\pset tuples_only on
\pset format unaligned
SELECT 'hot: grants = capacity', count(*) = 500 FROM grants;
SELECT 'hot: state holds no tokens', value < 1 FROM rate_limits WHERE name = 'hot';
SELECT 'many: every key granted exactly min(calls, 3)',
       bool_and(granted = least(made, 3))
FROM (SELECT key, count(*) AS made, count(*) FILTER (WHERE ok) AS granted
      FROM calls GROUP BY key) AS per_key;
SELECT 'many: state = 3 - grants for every key',
       bool_and(s.value = 3 - c.granted)
FROM (SELECT key::text AS key, count(*) FILTER (WHERE ok) AS granted FROM calls GROUP BY key) AS c
JOIN rate_limits s ON s.name = 'many' AND s.key = c.key AND s.shard = 0;
SELECT 'many: one state row per key called',
       (SELECT count(*) FROM rate_limits WHERE name = 'many') = (SELECT count(DISTINCT key) FROM calls);
SELECT 'fresh: every key granted exactly min(calls, 3)',
       bool_and(granted = least(made, 3))
FROM (SELECT key, count(*) AS made, count(*) FILTER (WHERE ok) AS granted
      FROM fresh_calls GROUP BY key) AS per_key;
SELECT 'fresh: state = 3 - grants for every key, one row each',
       bool_and(s.value = 3 - c.granted) AND count(s.key) = count(*)
FROM (SELECT key::text AS key, count(*) FILTER (WHERE ok) AS granted FROM fresh_calls GROUP BY key) AS c
LEFT JOIN rate_limits s ON s.name = 'fresh' AND s.key = c.key AND s.shard = 0;
-- a killed speculative insertion counts as an insert and a delete, and
-- nothing else here deletes: the race the phase is for did happen
SELECT 'fresh: some first calls lost the race to insert after their pre-check',
       n_tup_del > 0 FROM pg_stat_user_tables WHERE relname = 'rate_limits';
SELECT 'pair: every new key granted exactly once, both shards created',
       bool_and(c.granted = 1 AND s.rows = 2 AND s.value = 1)
FROM (SELECT key::text AS key, count(*) FILTER (WHERE ok) AS granted FROM pair_calls GROUP BY key) AS c
LEFT JOIN (SELECT key, count(*) AS rows, sum(value) AS value FROM rate_limits
           WHERE name = 'pair' GROUP BY key) AS s ON s.key = c.key;
SELECT 'pair: some keys were called by more than one session',
       bool_or(made > 1) FROM (SELECT count(*) AS made FROM pair_calls GROUP BY key) AS per_key;
SELECT 'long keys: every call granted', count(*) = 2400 FROM long_calls;
SELECT 'long keys: state = capacity - calls for every key',
       bool_and(s.value = 1000000 - c.n) AND count(*) = count(DISTINCT c.key)
FROM (SELECT repeat(md5(key::text), 15) AS key, count(*) AS n FROM long_calls GROUP BY key) AS c
JOIN rate_limits s ON s.name = 'long' AND s.key = c.key AND s.shard = 0;
SELECT 'long keys: updates that were not HOT (new index entries)',
       n_tup_upd - n_tup_hot_upd > 1000 FROM pg_stat_user_tables WHERE relname = 'rate_limits';
-- the memory store's ledger, read at the pinned clock of its phase
SET ratelimit.now_override = '2026-01-01T00:00:00Z';
SELECT 'memory hot: committed grants = capacity', count(*) = 500 FROM mem_grants;
SELECT 'memory hot: state holds no tokens', value = 0 FROM rl_value('mhot', 'k');
SELECT 'memory many: committed grants + state = 3, grants <= 3, for every key',
       bool_and(c.granted + v.value = 3 AND c.granted <= 3) AND count(*) = 200
FROM (SELECT key, count(*) FILTER (WHERE ok) AS granted FROM mem_calls GROUP BY key) AS c,
     LATERAL rl_value('mmany', c.key) AS v;
SELECT 'memory many: most keys drained', count(*) FILTER (WHERE v.value = 0) > 150
FROM (SELECT DISTINCT key FROM mem_calls) AS c, LATERAL rl_value('mmany', c.key) AS v;
SELECT 'memory: granted calls rolled back, their tokens returned', last_value > 100
FROM mem_rolled_back;
RESET ratelimit.now_override;
-- bt_index_check raises an error on any corruption, which stops the script
SELECT 'amcheck: btree with heapallindexed', true FROM (SELECT bt_index_check('rate_limits_pkey', true)) AS c;
SELECT 'amcheck: heap reports nothing', count(*) = 0 FROM verify_heapam('rate_limits');
