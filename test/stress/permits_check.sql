-- The verdict of the permits stress test: the most intervals overlapping
-- at any instant (an end sorts before a start at the same time), the most
-- they were over the limit then in force, and the share of the first run
-- during which all 4 permits were in use.
\pset footer off
\pset tuples_only on
\pset format unaligned
CREATE TEMP TABLE edges AS
SELECT run, t, d, sum(d) OVER (ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS running
FROM (SELECT run, lo AS t, 1 AS d FROM held UNION ALL SELECT run, hi, -1 FROM held) e;
SELECT 'permits: holders recorded', count(*) FROM held;
SELECT 'permits: refused', count(*) FROM refused;
SELECT 'permits: most overlapping', max(running) FROM edges;
SELECT 'permits: most over the limit in force',
       max(e.running - (SELECT l.permits FROM limits l WHERE l.at <= e.t
                        ORDER BY l.at DESC LIMIT 1))
FROM edges e;
SELECT 'permits: share of the first run with all 4 in use',
       round((sum(EXTRACT(epoch FROM nxt - t)) FILTER (WHERE running = 4) /
              EXTRACT(epoch FROM max(nxt) - min(t)))::numeric, 3)
FROM (SELECT t, running, lead(t) OVER (ORDER BY t, d) AS nxt FROM edges
      WHERE run = 1) s
WHERE nxt IS NOT NULL;
