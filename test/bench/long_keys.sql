-- one call per transaction on a random key among 10,000 of the limit keys (the long
-- transaction section: test/bench/long.sh)
\set k random(1, 10000)
SELECT ok FROM rl_limit('keys', :k);
