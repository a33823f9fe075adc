-- one call per transaction on a random key among 10,000 of the limit
-- :limit (sent as a text parameter with -M prepared)
\set k random(1, 10000)
SELECT ok FROM rl_limit(:limit, :k);
