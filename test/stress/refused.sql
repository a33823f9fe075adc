-- every call refused: four keys of each limit, and a check of rf_table k1
SELECT count(*) FROM unnest(ARRAY['rf_table', 'rf_memory', 'rf_block']) l,
	unnest(ARRAY['k1', 'k2', 'k3', 'k4']) k, LATERAL rl_limit(l, k) r
WHERE NOT r.ok;
SELECT (rl_check('rf_table', 'k1')).ok;
