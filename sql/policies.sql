-- Options of a defined limit: shadow mode and automatic blocks, on both
-- stores (the table, and memory); make test runs this file on the direct
-- path and again on the SQL path.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- one call per row, in order: rl_limit is volatile, and each row calls it
-- once through a correlated LATERAL
CREATE FUNCTION calls(lim text, n integer, k text DEFAULT 'k')
RETURNS TABLE (i integer, ok boolean, retry_after interval, remaining float8)
LANGUAGE sql AS $$
	SELECT g, r.ok, r.retry_after, r.remaining
	FROM generate_series(1, n) g,
		LATERAL rl_limit(lim, k || repeat('', g)) r
	ORDER BY g
$$;

-- Shadow mode: every call is granted; those the limit would refuse take
-- nothing, say so with a retry_after (ok with a retry_after, without
-- reserve), and are counted in rl_stats.shadow_refused.
SELECT rl_define('shadow_t', 'token bucket', 2, '1 hour', shadow => true);
SELECT rl_define('shadow_m', 'token bucket', 2, '1 hour', shadow => true,
	storage => 'memory');
SELECT name, shadow, block_for FROM rl_definitions WHERE name LIKE 'shadow%' ORDER BY name;
SELECT * FROM calls('shadow_t', 4);
SELECT * FROM calls('shadow_m', 4);
-- the would-be refusals took nothing: 0 left, as an enforcing limit leaves
SELECT value FROM rl_value('shadow_t', 'k');
SELECT value FROM rl_value('shadow_m', 'k');
-- they took nothing, and reserved nothing: 2 tokens, no reservation
SELECT name, calls, granted, refused, shadow_refused, tokens, reservations,
	deepest_reservation
FROM rl_stats WHERE datname = current_database() AND name LIKE 'shadow%' ORDER BY name;
-- no 429 in shadow mode: no Retry-After, r is 0
SELECT rl_headers('shadow_t', rl_limit('shadow_t', 'k'));
-- rl_check answers what rl_limit would: granted, with the retry_after
SELECT ok, retry_after FROM rl_check('shadow_t', 'k');
SELECT ok, retry_after FROM rl_check('shadow_m', 'k');
SELECT rl_headers('shadow_t', rl_check('shadow_t', 'k'));
-- r is what the key holds, as for a refusal: 2 left, a call of 3
SELECT rl_define('hdr_shadow', 'token bucket', 5, '1 hour', shadow => true);
SELECT ok FROM rl_limit('hdr_shadow', 'k', 3);
SELECT rl_headers('hdr_shadow', rl_limit('hdr_shadow', 'k', 3));
SELECT rl_undefine('hdr_shadow');
-- enforcing is one rl_define: the state is kept, so the next call refuses
SELECT rl_define('shadow_t', 'token bucket', 2, '1 hour');
SELECT rl_define('shadow_m', 'token bucket', 2, '1 hour', storage => 'memory');
SELECT * FROM calls('shadow_t', 1);
SELECT * FROM calls('shadow_m', 1);
-- and back to shadow
SELECT rl_define('shadow_t', 'token bucket', 2, '1 hour', shadow => true);
SELECT rl_define('shadow_m', 'token bucket', 2, '1 hour', shadow => true,
	storage => 'memory');
SELECT * FROM calls('shadow_t', 1);
SELECT * FROM calls('shadow_m', 1);

-- shadow mode with reserve: a reservation past max_reserved is granted,
-- takes nothing and is no reservation in rl_stats (2 tokens, 1 reservation)
SELECT rl_define('shadow_r', 'token bucket', 1, '1 hour', max_reserved => 1,
	shadow => true);
SELECT g, r.ok, r.retry_after, r.remaining
FROM generate_series(1, 3) g,
	LATERAL rl_limit('shadow_r', 'k' || repeat('', g), reserve => true) r
ORDER BY g;
SELECT value FROM rl_value('shadow_r', 'k');
SELECT name, calls, granted, shadow_refused, tokens, reservations,
	deepest_reservation
FROM rl_stats WHERE datname = current_database() AND name = 'shadow_r';

-- rl_limit_all: a limit in shadow mode refuses nothing, the others still do
SELECT rl_define('enforced', 'token bucket', 1, '1 hour');
SELECT * FROM rl_limit_all(ARRAY['shadow_t', 'enforced'], ARRAY['k', 'k'], ARRAY[1, 1]);
-- the enforcing limit took its token; the shadow limit had none to take
SELECT value FROM rl_value('enforced', 'k');
SELECT value FROM rl_value('shadow_t', 'k');
SELECT * FROM rl_limit_all(ARRAY['shadow_t', 'enforced'], ARRAY['k', 'k'], ARRAY[1, 1]);
SELECT * FROM rl_limit_all(ARRAY['shadow_m', 'enforced'], ARRAY['k', 'j'], ARRAY[1, 1]);
SELECT value FROM rl_value('enforced', 'j');
SELECT value FROM rl_value('shadow_m', 'k');
SELECT name, calls, granted, refused, shadow_refused
FROM rl_stats WHERE datname = current_database() AND name IN ('shadow_t', 'shadow_m', 'enforced') ORDER BY name;

-- Automatic blocks: 2 an hour, and a refused call blocks the key for 10
-- minutes.  The third call is refused: the key is empty at 00:10 and has
-- one token 30 minutes later, so retry_after is 40 minutes.
SELECT rl_define('block_t', 'token bucket', 2, '1 hour', block_for => '10 minutes');
SELECT rl_define('block_m', 'token bucket', 2, '1 hour', block_for => '10 minutes',
	storage => 'memory');
SELECT rl_define('block_w', 'fixed window', 2, '1 hour', block_for => '90 minutes',
	start => '2026-01-01 00:00:00+00');
SELECT name, shadow, block_for FROM rl_definitions WHERE name LIKE 'block%' ORDER BY name;
SELECT * FROM calls('block_t', 3);
SELECT * FROM calls('block_m', 3);
-- fixed window: blocked until the window that holds 01:30 is over, 02:00
SELECT * FROM calls('block_w', 3);
-- the memory store writes a block at commit, like rl_block
SELECT value, ts FROM rl_value('block_t', 'k');
SELECT value, ts FROM rl_value('block_m', 'k');
-- five minutes on, a refused call does not lengthen the block: one token at
-- 00:40 still, 35 minutes away, and nothing written
SET ratelimit.now_override = '2026-01-01 00:05:00+00';
SELECT * FROM calls('block_t', 1);
SELECT * FROM calls('block_m', 1);
SELECT * FROM calls('block_w', 1);
SELECT value, ts FROM rl_value('block_t', 'k');
SELECT name, calls, granted, refused, blocks
FROM rl_stats WHERE datname = current_database() AND name LIKE 'block%' ORDER BY name;
-- RateLimit fields: the Retry-After of the block
SELECT rl_headers('block_t', rl_limit('block_t', 'k'));
-- at 00:40 the token is there
SET ratelimit.now_override = '2026-01-01 00:40:00+00';
SELECT * FROM calls('block_t', 1);
SELECT * FROM calls('block_m', 1);

-- a block is written in the caller's transaction: a rollback undoes it
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
BEGIN;
SELECT * FROM calls('block_t', 3, 'r');
SELECT * FROM calls('block_m', 3, 'r');
ROLLBACK;
SELECT * FROM calls('block_t', 2, 'r');
SELECT * FROM calls('block_m', 2, 'r');
-- the error of throws => true (and of rl_enforce in a trigger) would roll
-- a block back: such a call is refused and blocks nothing, on either
-- store, and neither its hint nor rl_stats announces a block (the hint
-- gives the refusal's own wait: one token in 30 minutes, not 10 + 30)
SELECT blocks AS blocks_t FROM rl_stats
WHERE datname = current_database() AND name = 'block_t' \gset
SELECT blocks AS blocks_m FROM rl_stats
WHERE datname = current_database() AND name = 'block_m' \gset
BEGIN;
SELECT ok FROM rl_limit('block_t', 'e', 2);
SELECT ok FROM rl_limit('block_m', 'e', 2);
SAVEPOINT s;
SELECT ok FROM rl_limit('block_t', 'e', throws => true);
ROLLBACK TO SAVEPOINT s;
SELECT ok FROM rl_limit('block_m', 'e', throws => true);
ROLLBACK TO SAVEPOINT s;
SELECT ok FROM rl_check('block_t', 'e', throws => true);
ROLLBACK TO SAVEPOINT s;
SELECT * FROM rl_limit_all(ARRAY['block_t'], ARRAY['e'], ARRAY[1], throws => true);
ROLLBACK TO SAVEPOINT s;
SELECT value, ts FROM rl_value('block_t', 'e');
COMMIT;
SELECT value, ts FROM rl_value('block_m', 'e');
SELECT name, blocks - CASE name WHEN 'block_t' THEN :blocks_t ELSE :blocks_m END
	AS new_blocks
FROM rl_stats WHERE datname = current_database() AND name IN ('block_t', 'block_m')
ORDER BY name;

-- rl_limit_all: the limit that refused blocks its key, the others nothing;
-- the answer names it with the block's retry_after
SELECT rl_define('plain', 'token bucket', 5, '1 hour');
SELECT * FROM rl_limit_all(ARRAY['plain', 'block_t'], ARRAY['a', 'a'], ARRAY[1, 2]);
SELECT * FROM rl_limit_all(ARRAY['plain', 'block_t'], ARRAY['a', 'a'], ARRAY[1, 1]);
SELECT value FROM rl_value('plain', 'a');
SELECT value, ts FROM rl_value('block_t', 'a');

-- a refused rl_check blocks the key too, as a refused rl_limit does: with
-- a check before each attempt and a take on each failure, the check after
-- the last failure is the refused attempt (10 minutes' block, then 30 for
-- a token)
SELECT ok FROM rl_limit('block_t', 'c', 2);
SELECT ok FROM rl_limit('block_m', 'c', 2);
SELECT ok, retry_after FROM rl_check('block_t', 'c');
SELECT ok, retry_after FROM rl_check('block_m', 'c');
SELECT value, ts FROM rl_value('block_t', 'c');
SELECT value, ts FROM rl_value('block_m', 'c');
-- a check during the block does not lengthen it
SET ratelimit.now_override = '2026-01-01 00:05:00+00';
SELECT ok, retry_after FROM rl_check('block_t', 'c');
SELECT ok, retry_after FROM rl_check('block_m', 'c');
SELECT value, ts FROM rl_value('block_t', 'c');
SELECT value, ts FROM rl_value('block_m', 'c');
-- in a read-only transaction a check on the table store only refuses (it
-- cannot write the block); on the memory store it blocks
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT ok FROM rl_limit('block_t', 'ro', 2);
SELECT ok FROM rl_limit('block_m', 'ro', 2);
BEGIN READ ONLY;
SELECT ok, retry_after FROM rl_check('block_t', 'ro');
SELECT ok, retry_after FROM rl_check('block_m', 'ro');
COMMIT;
SELECT value, ts FROM rl_value('block_t', 'ro');
SELECT value, ts FROM rl_value('block_m', 'ro');

-- shadow and block_for together: shadow mode refuses nothing, so it
-- blocks nothing
SELECT rl_define('both', 'token bucket', 1, '1 hour', shadow => true,
	block_for => '1 hour');
SELECT * FROM calls('both', 2);
SELECT value, ts FROM rl_value('both', 'k');

-- bad options change nothing
SELECT rl_define('block_t', 'token bucket', 2, '1 hour', block_for => '0');
SELECT rl_define('block_t', 'token bucket', 2, '1 hour', block_for => '-1 minute');
SELECT rl_define('block_t', 'token bucket', 2, '1 hour', block_for => '101 years');
SELECT rl_define('sharded', 'token bucket', 100, '1 second', shards => 4,
	block_for => '1 minute');
SELECT name, block_for FROM rl_definitions WHERE name IN ('block_t', 'sharded');
-- a hand edit is checked too, at the next call
SELECT rl_define_concurrency('slots', 2);
UPDATE rl_definitions SET shadow = true WHERE name = 'slots';
SELECT rl_acquire('slots', 'k');
UPDATE rl_definitions SET shadow = false WHERE name = 'slots';
SELECT rl_acquire('slots', 'k');

-- on the real clock too (a pinned clock hides a call that reads the time
-- twice): a refused call blocks its key, on both stores
RESET ratelimit.now_override;
SELECT rl_define('real_t', 'token bucket', 1, '1 hour', block_for => '1 hour');
SELECT rl_define('real_m', 'token bucket', 1, '1 hour', block_for => '1 hour',
	storage => 'memory');
SELECT i, ok FROM calls('real_t', 2);
SELECT i, ok FROM calls('real_m', 2);
SELECT ts > now() + '59 minutes' AS blocked FROM rl_value('real_t', 'k');
SELECT ts > now() + '59 minutes' AS blocked FROM rl_value('real_m', 'k');

-- a memory limit's block waits for commit; a second refusal in the same
-- transaction neither blocks again nor lengthens it, and reports it
SET ratelimit.now_override = '2026-03-01 00:00:00+00';
SELECT rl_define('twice_m', 'token bucket', 1, '1 hour', block_for => '10 minutes',
	storage => 'memory');
SELECT rl_define('twice_t', 'token bucket', 1, '1 hour', block_for => '10 minutes');
BEGIN;
SELECT * FROM calls('twice_m', 2);
SELECT * FROM calls('twice_t', 2);
SET LOCAL ratelimit.now_override = '2026-03-01 00:05:00+00';
SELECT * FROM calls('twice_m', 1);
SELECT * FROM calls('twice_t', 1);
COMMIT;
SELECT value, ts FROM rl_value('twice_m', 'k');
SELECT value, ts FROM rl_value('twice_t', 'k');
SELECT name, refused, blocks FROM rl_stats
WHERE datname = current_database() AND name LIKE 'twice%' ORDER BY name;

-- Escalation: 1 a minute; a refusal blocks for 10 minutes, doubled for
-- each offence the key still owes (each block adds one, one is forgotten
-- per day once a block is over), at most an hour.  retry_after is the
-- block plus the minute the empty key takes to refill.
SET ratelimit.now_override = '2026-05-01 00:00:00+00';
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_factor => 2, block_max => '1 hour', block_horizon => '1 day');
SELECT rl_define('esc_m', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_factor => 2, block_max => '1 hour', storage => 'memory');
SELECT name, block_for, block_factor, block_max, block_horizon
FROM rl_definitions WHERE name LIKE 'esc%' ORDER BY name;
-- a first offence: 10 minutes
SELECT * FROM calls('esc_t', 2);
SELECT * FROM calls('esc_m', 2);
-- score 1, kept until the block ends at 00:10
SELECT value, ts, prev FROM rate_limits WHERE name = 'esc_t';
-- within the horizon after it ends: 20 minutes, then 40
SET ratelimit.now_override = '2026-05-01 00:20:00+00';
SELECT * FROM calls('esc_t', 2);
SELECT * FROM calls('esc_m', 2);
SET ratelimit.now_override = '2026-05-01 01:00:00+00';
SELECT * FROM calls('esc_t', 2);
SELECT * FROM calls('esc_m', 2);
-- then 80, capped at block_max: an hour
SET ratelimit.now_override = '2026-05-01 02:00:00+00';
SELECT * FROM calls('esc_t', 2);
SELECT * FROM calls('esc_m', 2);
SELECT name, refused, blocks FROM rl_stats
WHERE datname = current_database() AND name LIKE 'esc%' ORDER BY name;
-- two days after the last block: about two offences are left, so the key
-- is not idle and rl_gc keeps it (on the memory store too: the next
-- offence still escalates, to 40 minutes)
SET ratelimit.now_override = '2026-05-03 03:00:00+00';
SELECT name, idle, round(stored_prev::numeric, 3) AS stored_prev
FROM rl_status WHERE name = 'esc_t';
SELECT rl_gc(100000) >= 0 AS collected;
SELECT count(*) AS kept FROM rate_limits WHERE name = 'esc_t';
SELECT * FROM calls('esc_t', 2);
SELECT * FROM calls('esc_m', 2);
-- several horizons later every offence is forgotten: the key is idle,
-- rl_gc deletes it, and a refusal blocks for 10 minutes again
SET ratelimit.now_override = '2026-05-06 04:00:00+00';
SELECT name, idle FROM rl_status WHERE name = 'esc_t';
SELECT rl_gc(100000) >= 1 AS collected;
SELECT count(*) AS kept FROM rate_limits WHERE name = 'esc_t';
SELECT * FROM calls('esc_t', 2);
SELECT * FROM calls('esc_m', 2);
-- rl_block is an offence too: a refusal after it ends escalates
SELECT value, ts FROM rl_block('esc_t', 'b', '1 minute');
SELECT value, ts FROM rl_block('esc_m', 'b', '1 minute');
SELECT round(prev::numeric, 3) AS prev FROM rate_limits WHERE name = 'esc_t' AND key = 'b';
SET ratelimit.now_override = '2026-05-06 04:05:00+00';
SELECT * FROM calls('esc_t', 2, 'b');
SELECT * FROM calls('esc_m', 2, 'b');

-- bad escalation options: 22023, and nothing changes
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_factor => 0.5);
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_factor => 'NaN');
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_factor => 'Infinity');
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_factor => 2);
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_max => '1 hour');
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_factor => 2, block_max => '5 minutes');
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_factor => 2, block_max => '0');
SELECT rl_define('esc_t', 'token bucket', 1, '1 minute', block_for => '10 minutes',
	block_factor => 2, block_horizon => '101 years');
SELECT rl_define('esc_t', 'sliding window', 1, '1 minute', block_for => '10 minutes',
	block_factor => 2);
SELECT rl_define('esc_t', 'token bucket', 100, '1 second', shards => 4,
	block_for => '10 minutes', block_factor => 2);
SELECT name, kind, shards, block_for, block_factor, block_max, block_horizon
FROM rl_definitions WHERE name = 'esc_t';
-- a hand edit is checked at the next call
UPDATE rl_definitions SET block_factor = 'NaN' WHERE name = 'esc_t';
SELECT ok FROM rl_limit('esc_t', 'h');
UPDATE rl_definitions SET block_factor = 2 WHERE name = 'slots';
SELECT rl_acquire('slots', 'k');
UPDATE rl_definitions SET block_factor = NULL WHERE name IN ('esc_t', 'slots');

-- a fixed window whose block ends within the window: calls refused during
-- the block neither block again nor escalate (one offence, one block)
SET ratelimit.now_override = '2026-06-01 00:10:00+00';
SELECT rl_define('fw_esc', 'fixed window', 1, '1 hour', block_for => '1 minute',
	block_factor => 2, start => '2026-06-01 00:00:00+00');
SELECT rl_define('fw_esc_m', 'fixed window', 1, '1 hour', block_for => '1 minute',
	block_factor => 2, start => '2026-06-01 00:00:00+00', storage => 'memory');
SELECT ok FROM rl_limit('fw_esc', 'k');
SELECT ok FROM rl_limit('fw_esc_m', 'k');
SELECT * FROM calls('fw_esc', 4);
SELECT * FROM calls('fw_esc_m', 4);
SET ratelimit.now_override = '2026-06-01 00:10:30+00';
SELECT * FROM calls('fw_esc', 3);
SELECT * FROM calls('fw_esc_m', 3);
SELECT name, refused, blocks FROM rl_stats
WHERE datname = current_database() AND name LIKE 'fw\_esc%' ORDER BY name;
-- after the block (00:11), a refusal in the still empty window is a second
-- offence: blocked 2 minutes
SET ratelimit.now_override = '2026-06-01 00:11:30+00';
SELECT * FROM calls('fw_esc', 1);
SELECT value, ts FROM rl_value('fw_esc', 'k');
