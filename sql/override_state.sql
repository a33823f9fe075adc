-- An overridden key keeps its state across changes of the definition it
-- inherits from and of its override, as a plain key keeps its state across
-- a redefinition: no change hands a drained key a fresh bucket.  Both
-- stores (make test runs this file on the direct path and again on the
-- SQL path).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- one call per row, in order (see sql/policies.sql)
CREATE FUNCTION state_grants(lim text, k text, n integer)
RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FILTER (WHERE r.ok)
	FROM generate_series(1, n) g, LATERAL rl_limit(lim, k || repeat('', g)) r
$$;

-- 3 a day, acme 5 a day; both keys drained
SELECT rl_define('fw', 'fixed window', 3, '1 day', start => '2026-01-01');
SELECT rl_define('fw_m', 'fixed window', 3, '1 day', start => '2026-01-01',
	storage => 'memory');
SELECT rl_override('fw', 'acme', 5);
SELECT rl_override('fw_m', 'acme', 5);
SELECT state_grants('fw', 'plain', 10), state_grants('fw', 'acme', 10);
SELECT state_grants('fw_m', 'plain', 10), state_grants('fw_m', 'acme', 10);
-- another period: the calls of the current window still count, for both
SELECT rl_define('fw', 'fixed window', 3, '2 days', start => '2026-01-01');
SELECT rl_define('fw_m', 'fixed window', 3, '2 days', start => '2026-01-01',
	storage => 'memory');
SELECT state_grants('fw', 'plain', 10), state_grants('fw', 'acme', 10);
SELECT state_grants('fw_m', 'plain', 10), state_grants('fw_m', 'acme', 10);
-- another kind, start or shard count: the same
SELECT rl_define('fw', 'token bucket', 3, '2 days');
SELECT rl_define('fw_m', 'token bucket', 3, '2 days', storage => 'memory');
SELECT state_grants('fw', 'plain', 10), state_grants('fw', 'acme', 10);
SELECT state_grants('fw_m', 'plain', 10), state_grants('fw_m', 'acme', 10);
SELECT rl_define('fw', 'fixed window', 3, '2 days', start => '2025-12-31');
SELECT state_grants('fw', 'plain', 10), state_grants('fw', 'acme', 10);
SELECT rl_define('fw', 'fixed window', 3, '2 days', start => '2025-12-31',
	shards => 2);
SELECT state_grants('fw', 'plain', 10), state_grants('fw', 'acme', 10);

-- the override's own changes keep the key's state too: a drained plain
-- key given a larger override stays drained (no tokens, refilling at the
-- override's rate), and so do a new override rate and dropping it
SELECT rl_define('tb', 'token bucket', 3, '1 day');
SELECT rl_define('tb_m', 'token bucket', 3, '1 day', storage => 'memory');
SELECT state_grants('tb', 'k', 10), state_grants('tb_m', 'k', 10);
SELECT rl_override('tb', 'k', 5);
SELECT rl_override('tb_m', 'k', 5);
SELECT value FROM rl_value('tb', 'k');
SELECT value FROM rl_value('tb_m', 'k');
SELECT state_grants('tb', 'k', 10), state_grants('tb_m', 'k', 10);
SELECT rl_override('tb', 'k', 8);
SELECT rl_override('tb_m', 'k', 8);
SELECT state_grants('tb', 'k', 10), state_grants('tb_m', 'k', 10);
SELECT rl_unoverride('tb', 'k');
SELECT rl_unoverride('tb_m', 'k');
SELECT state_grants('tb', 'k', 10), state_grants('tb_m', 'k', 10);
-- one state per key: the row of the name and key
SELECT replace(name, E'\x1f', '|') AS stored_name, key, value
FROM rate_limits WHERE name IN ('fw', 'tb') ORDER BY 1, 2, shard;

-- rl_gc judges an overridden key under its override: 100 tokens refilling
-- 10 an hour, drained; an hour on it holds 10 of 100 and is kept (judged
-- under the definition, 10 an hour up to 10, it would look full, and be
-- dropped: a fresh 100).  The memory store keeps it too.
SELECT rl_override('tb', 'big', 240, capacity => 100);
SELECT rl_override('tb_m', 'big', 240, capacity => 100);
SELECT state_grants('tb', 'big', 101), state_grants('tb_m', 'big', 101);
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT rl_gc(1000) >= 0 AS ran, rl_gc_memory(1000) >= 0 AS ran_memory;
SELECT key, value FROM rate_limits WHERE name = 'tb' AND key = 'big';
SELECT value FROM rl_value('tb', 'big');
SELECT value FROM rl_value('tb_m', 'big');
SELECT key, rate, capacity, value FROM rl_status WHERE name = 'tb'
ORDER BY key;

-- the memory store judges an entry idle under the policy a call last
-- wrote it with; an override added since voids that judgement: 9 of 10
-- left, full again under the definition 6 minutes on, but under the new
-- override (up to 100) it holds 19 an hour on, not a fresh 100
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('mg', 'token bucket', 10, '1 hour', storage => 'memory');
SELECT ok FROM rl_limit('mg', 'k');
SELECT rl_override('mg', 'k', 10, capacity => 100);
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT rl_gc_memory(1000) >= 0 AS ran;
SELECT value FROM rl_value('mg', 'k');

-- rl_undefine drops every state of the name, overridden keys' included
SELECT memory_keys AS baseline FROM rl_stats_info \gset
SELECT rl_undefine('fw');
SELECT rl_undefine('fw_m');
SELECT count(*) FROM rate_limits WHERE split_part(name, E'\x1f', 1) = 'fw';
SELECT :baseline - memory_keys AS memory_entries_gone FROM rl_stats_info;
SELECT rl_define('fw_m', 'fixed window', 3, '1 day', start => '2026-01-01',
	storage => 'memory');
SELECT rl_override('fw_m', 'acme', 5);
SELECT state_grants('fw_m', 'acme', 10);
SELECT rl_undefine('fw_m'), rl_undefine('tb'), rl_undefine('tb_m'),
	rl_undefine('mg');

-- a key's first override is a move once the key has used some of the
-- definition's: a day's 100 drained at 00:00, then at 23:00 an override
-- with hourly windows of the same 100 a day.  Read as a redefinition, the
-- hour from 23:00 would be a fresh window of 100; moved, the key keeps
-- its 0 until the day's end.  An unused key given the same override holds
-- the override's capacity at once
SET ratelimit.now_override = '2026-02-01 00:00:00+00';
SELECT rl_define(n, 'fixed window', 100, '1 day', start => '2026-01-01',
	storage => s)
FROM (VALUES ('fo', 'table'), ('fo_m', 'memory')) v(n, s);
SELECT n, (rl_limit(n, 'used', 100)).ok FROM unnest(ARRAY['fo', 'fo_m']) n;
SET ratelimit.now_override = '2026-02-01 23:00:00+00';
SELECT n, rl_override(n, 'used', 100.0 / 24, '1 hour', 100),
	rl_override(n, 'unused', 100.0 / 24, '1 hour', 100)
FROM unnest(ARRAY['fo', 'fo_m']) n;
SELECT n, (rl_limit(n, 'used', 1000, partial => true)).granted AS used,
	(rl_limit(n, 'unused', 1000, partial => true)).granted AS unused
FROM unnest(ARRAY['fo', 'fo_m']) n;
SELECT rl_undefine('fo'), rl_undefine('fo_m');
DROP FUNCTION state_grants(text, text, integer);
