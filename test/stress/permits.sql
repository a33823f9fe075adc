-- One transaction of a holder: take a permit of 'pool' (waiting up to 5
-- seconds), record the interval it held it (in run :run), sleep 5 ms
-- inside it, commit.  The interval is taken inside the holding, so it is a
-- lower bound of it.
BEGIN;
SELECT rl_acquire('pool', NULL, wait => '5 seconds')::int AS ok \gset
\if :ok
INSERT INTO held (run, lo, hi)
SELECT :run, s.lo, clock_timestamp()
FROM (SELECT clock_timestamp() AS lo, pg_sleep(0.005) AS slept OFFSET 0) s;
\else
INSERT INTO refused VALUES (1);
\endif
COMMIT;
