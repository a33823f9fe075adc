-- every client calls the same brand-new key of a two-shard limit for 2 ms,
-- then the next one, for more than one shard holds: each first call creates
-- both shards, and calls creating them together must not deadlock
INSERT INTO pair_calls
SELECT k, ok
FROM (SELECT (extract(epoch FROM clock_timestamp()) * 500)::bigint AS k) AS t,
     rl_limit('pair', k, 3);
