-- Each key's refusals, exact (error 0), and each limit's sums against
-- rl_stats: refusals = refused + check_refused, blocks = blocks.
SELECT name, key, refusals, blocks >= 1 AS blocked, error
FROM rl_refused WHERE datname = current_database() ORDER BY name, key;
SELECT r.name, sum(r.refusals) = s.refused + s.check_refused AS refusals_match,
	sum(r.blocks) = s.blocks AS blocks_match
FROM rl_refused r JOIN rl_stats s USING (dbid, name)
WHERE r.datname = current_database()
GROUP BY r.name, s.refused, s.check_refused, s.blocks ORDER BY r.name;
