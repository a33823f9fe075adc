-- the alternative rl_acquire was measured against: N slot rows per key, one
-- locked with FOR UPDATE SKIP LOCKED, on a random key among 100,000
\set k random(1, 100000)
SELECT slot FROM bench_slots WHERE key = :k FOR UPDATE SKIP LOCKED LIMIT 1;
