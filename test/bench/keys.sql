-- one call per transaction on a random key among 100,000
\set k random(1, 100000)
SELECT ok FROM rl_limit('keys', :k);
