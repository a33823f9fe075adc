-- pgbench script of run.sh's permit ledger: take a permit of 'st', and
-- while holding it, count the holders.  enter and leave are sequences,
-- which no rollback undoes: enter - leave, read by a holder, is at most
-- the number of transactions holding a permit now.  More than the limit
-- in force (read after, under the name's lock, which no lowering can
-- commit past) is over-admission, and is recorded in stress.over.
BEGIN;
SELECT limits.rl_acquire('st', 'k') AS granted \gset
\if :granted
SELECT pg_catalog.nextval('stress.enter') - (SELECT last_value FROM stress.leave) AS inside \gset
INSERT INTO stress.over (inside, permits)
	SELECT :inside, capacity FROM limits.rl_definitions WHERE name = 'st' AND capacity < :inside;
SELECT pg_catalog.pg_sleep(0.002);
SELECT pg_catalog.nextval('stress.leave');
\endif
COMMIT;
