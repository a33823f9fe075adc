-- the memory store: a call on a random key among 200 per transaction, rolled
-- back, rolled back to a savepoint or committed as in mem_hot.sql; every
-- committed call is logged
\set k random(1, 200)
\set r random(1, 4)
BEGIN;
\if :r = 1
SELECT nextval('mem_rolled_back') FROM rl_limit('mmany', :k::text) WHERE ok;
ROLLBACK;
\elif :r = 2
SAVEPOINT s;
SELECT nextval('mem_rolled_back') FROM rl_limit('mmany', :k::text) WHERE ok;
ROLLBACK TO SAVEPOINT s;
COMMIT;
\else
INSERT INTO mem_calls SELECT :k::text, ok FROM rl_limit('mmany', :k::text);
COMMIT;
\endif
