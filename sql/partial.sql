-- Partial grants: rl_limit(..., partial => true) takes what the key holds
-- when that is less than count, and rl_result.granted says how much a
-- call took.  On both stores (the table, and memory); make test runs this
-- file on the direct path and again on the SQL path.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

SELECT rl_define('part_t', 'token bucket', 10, '1 minute');
SELECT rl_define('part_m', 'token bucket', 10, '1 minute', storage => 'memory');

-- granted is what a call took: count when ok, 0 when refused
SELECT ok, granted, remaining FROM rl_limit('part_t', 'k', 4);
SELECT ok, granted, remaining FROM rl_limit('part_m', 'k', 4);
SELECT ok, granted, remaining FROM rl_limit('part_t', 'k', 7);
SELECT ok, granted, remaining FROM rl_limit('part_m', 'k', 7);
-- partial: 6 held, 7 asked: 6 granted, the key empty
SELECT ok, granted, remaining, retry_after FROM rl_limit('part_t', 'k', 7, partial => true);
SELECT ok, granted, remaining, retry_after FROM rl_limit('part_m', 'k', 7, partial => true);
SELECT value FROM rl_value('part_t', 'k');
SELECT value FROM rl_value('part_m', 'k');
-- nothing held: a refusal, with the retry_after of one token (6 s)
SELECT ok, granted, remaining, retry_after FROM rl_limit('part_t', 'k', 7, partial => true);
SELECT ok, granted, remaining, retry_after FROM rl_limit('part_m', 'k', 7, partial => true);
-- whole tokens when count is whole: 1.5 tokens held, 1 granted
SET ratelimit.now_override = '2026-01-01 00:00:09+00';
SELECT ok, granted, remaining FROM rl_limit('part_t', 'k', 7, partial => true);
SELECT ok, granted, remaining FROM rl_limit('part_m', 'k', 7, partial => true);
-- 0.5 held: a whole count gets nothing, and waits for one token (3 s)
SELECT ok, granted, retry_after FROM rl_limit('part_t', 'k', 7, partial => true);
SELECT ok, granted, retry_after FROM rl_limit('part_m', 'k', 7, partial => true);
-- the retry_after is exact: at it, one token is granted
SET ratelimit.now_override = '2026-01-01 00:00:12+00';
SELECT ok, granted FROM rl_limit('part_t', 'k', 7, partial => true);
SELECT ok, granted FROM rl_limit('part_m', 'k', 7, partial => true);
-- a fractional count takes a fractional part: 0.5 held at 15 s
SET ratelimit.now_override = '2026-01-01 00:00:15+00';
SELECT ok, granted FROM rl_limit('part_t', 'k', 2.5, partial => true);
SELECT ok, granted FROM rl_limit('part_m', 'k', 2.5, partial => true);
-- and below one token asked, the retry_after is of the count (0.25: 1.5 s)
SELECT ok, granted, retry_after FROM rl_limit('part_t', 'k', 0.25, partial => true);
SELECT ok, granted, retry_after FROM rl_limit('part_m', 'k', 0.25, partial => true);
-- enough held: the whole count, as without partial
SELECT ok, granted FROM rl_limit('part_t', 'fresh', 3, partial => true);
SELECT ok, granted FROM rl_limit('part_m', 'fresh', 3, partial => true);
-- a rollback returns what a partial call took
BEGIN;
SELECT ok, granted FROM rl_limit('part_t', 'rb', 20, partial => true);
SELECT ok, granted FROM rl_limit('part_m', 'rb', 20, partial => true);
ROLLBACK;
SELECT value FROM rl_value('part_t', 'rb');
SELECT value FROM rl_value('part_m', 'rb');
-- throws raises a refusal, partial or not
SELECT rl_limit('part_t', 'k', 1, partial => true, throws => true);
-- rl_check answers what rl_limit without partial would take
SELECT ok, granted FROM rl_check('part_t', 'fresh', 2);
-- a fixed window and a sliding window take what they allow
SELECT rl_define('part_fw', 'fixed window', 5, '1 minute', start => '2026-01-01');
SELECT rl_define('part_sw', 'sliding window', 5, '1 minute', start => '2026-01-01');
SELECT ok, granted FROM rl_limit('part_fw', 'k', 8, partial => true);
SELECT ok, granted FROM rl_limit('part_sw', 'k', 8, partial => true);
SELECT ok, granted, retry_after FROM rl_limit('part_fw', 'k', 8, partial => true);
SELECT ok, granted, retry_after FROM rl_limit('part_sw', 'k', 8, partial => true);
-- an inline config
SELECT ok, granted FROM rl_limit('part_inline', 'k', 50, partial => true,
	config => rl_token_bucket(10, '1 minute'));
-- under max_debt a partial call takes only what the key holds: no debt
SELECT rl_define('part_debt', 'token bucket', 10, '1 minute', max_debt => 5);
SELECT ok, granted, remaining FROM rl_limit('part_debt', 'k', 12, partial => true);
-- shadow mode: a refusal is granted, taking nothing; granted says count,
-- what the caller may go on with
SELECT rl_define('part_shadow', 'token bucket', 2, '1 minute', shadow => true);
SELECT ok, granted FROM rl_limit('part_shadow', 'k', 2);
SELECT ok, granted, retry_after IS NOT NULL AS would_refuse
FROM rl_limit('part_shadow', 'k', 2, partial => true);
-- statistics count the tokens a partial call took
SELECT rl_define('part_stats', 'token bucket', 10, '1 minute');
SELECT ok, granted FROM rl_limit('part_stats', 'k', 8);
SELECT ok, granted FROM rl_limit('part_stats', 'k', 8, partial => true);
SELECT calls, granted, tokens FROM rl_stats
WHERE datname = current_database() AND name = 'part_stats';
-- waiting (on the real clock, which moves while a call sleeps): a partial
-- call waits for one token (100 ms), then takes what is there
RESET ratelimit.now_override;
SELECT rl_define('part_wait_t', 'token bucket', 10, '1 second', capacity => 1);
SELECT rl_define('part_wait_m', 'token bucket', 10, '1 second', capacity => 1,
	storage => 'memory');
SELECT ok FROM rl_limit('part_wait_t', 'k');
SELECT ok FROM rl_limit('part_wait_m', 'k');
SELECT ok, granted FROM rl_limit('part_wait_t', 'k', 5, partial => true,
	wait => '5 seconds');
SELECT ok, granted FROM rl_limit('part_wait_m', 'k', 5, partial => true,
	wait => '5 seconds');
SET ratelimit.now_override = '2026-01-01 00:00:15+00';
-- refused: partial with reserve, and on a sharded limit
SELECT rl_limit('part_t', 'k', 1, reserve => true, partial => true);
SELECT rl_define('part_sharded', 'token bucket', 10, '1 minute', shards => 2);
SELECT rl_limit('part_sharded', 'k', 1, partial => true);
SELECT rl_limit('part_t', 'k', 1, partial => NULL);

SELECT rl_undefine(name) FROM rl_definitions WHERE name LIKE 'part%' ORDER BY name;
RESET ratelimit.now_override;
