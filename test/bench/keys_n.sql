-- one call per transaction on a random key among :keys (pgbench -D keys=N)
\set k random(1, :keys)
SELECT ok FROM rl_limit('keys', :k);
