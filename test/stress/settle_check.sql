-- rl_settle's ledger (settle.sh), read at the pinned clock of its runs;
-- no parallel workers (a worker refuses the pinned clock's setting)
SET max_parallel_workers_per_gather = 0;
SET ratelimit.now_override = '2026-01-01T00:00:00Z';
SELECT 'settle: every call logged', count(*) = :calls * 3 FROM settle_log;
SELECT 'settle: capacity - value = sum of the actual costs charged, every key',
       bool_and(d.capacity - v.value = c.spent) AND count(*) = 48
FROM (SELECT lim, k, sum(act - unsettled) FILTER (WHERE ok) AS spent
      FROM settle_log GROUP BY lim, k) AS c
JOIN rl_definitions d ON d.name = c.lim,
     LATERAL rl_value(c.lim, c.k::text) AS v;
SELECT 'settle: nothing admitted at a balance of 0 or below',
       bool_and(remaining + est > 0) FROM settle_log WHERE ok;
SELECT 'settle: no call and no settlement passed -max_debt',
       bool_and(remaining >= -50 AND value >= -50) FROM settle_log WHERE ok;
SELECT 'settle: no key deeper than -max_debt',
       bool_and(v.value >= -50)
FROM (SELECT DISTINCT lim, k FROM settle_log) AS c,
     LATERAL rl_value(c.lim, c.k::text) AS v;
-- a few settlements a run reach the bound (keys refused at 0 stay there
-- under the pinned clock): some run must have had one; sql/settle.sql
-- checks the bound exactly on every store and path
SELECT 'settle: the small limits hit the bound, on some run',
       count(DISTINCT lim) >= 1 FROM settle_log WHERE unsettled > 0;
SELECT 'settle: calls into debt were granted, and calls refused',
       bool_or(ok AND remaining < 0) AND bool_or(NOT ok) FROM settle_log;
RESET ratelimit.now_override;
