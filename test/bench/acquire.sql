-- one transaction-scoped permit per transaction, on a random key among 100,000
\set k random(1, 100000)
SELECT rl_acquire('conc', :k);
