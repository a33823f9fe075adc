-- The 100,000 existing keys the bare UPDATE loop and the PL/pgSQL
-- reference limiter of reference.sql run on (make bench, and each side of
-- make bench BASE=REV), then statistics for the planner.
INSERT INTO bench_state SELECT 'keys', k::text, 0, 1e9, now() FROM generate_series(1, 100000) AS k;
VACUUM ANALYZE;
