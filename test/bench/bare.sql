-- the baseline of the end-to-end row: one bare UPDATE per transaction on a
-- random key among 100,000 of bench_state (laid out like rate_limits)
\set k random(1, 100000)
UPDATE bench_state SET value = value - 1, ts = clock_timestamp()
WHERE name = 'keys' AND key = :k::text AND shard = 0;
