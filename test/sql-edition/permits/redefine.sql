-- pgbench script of run.sh's permit ledger: change the limit of 'st'
-- between 1 and 3 permits, by each route (rl_undefine and
-- rl_define_concurrency in one transaction, an UPDATE by hand,
-- rl_define_concurrency).  Two changes at once may deadlock (40P01), as
-- in the C edition.
\set n random(1, 3)
\set route random(1, 3)
\if :route = 1
BEGIN;
SELECT limits.rl_undefine('st');
SELECT limits.rl_define_concurrency('st', :n);
COMMIT;
\elif :route = 2
UPDATE limits.rl_definitions SET capacity = :n WHERE name = 'st';
\else
SELECT limits.rl_define_concurrency('st', :n);
\endif
SELECT pg_catalog.pg_sleep(0.01);
