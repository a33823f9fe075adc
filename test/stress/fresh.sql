-- every client calls the same brand-new key for 2 ms, then the next one:
-- the first calls for each key race to insert its row; every call is logged
INSERT INTO fresh_calls
SELECT k, ok
FROM (SELECT (extract(epoch FROM clock_timestamp()) * 500)::bigint AS k) AS t,
     rl_limit('fresh', k);
