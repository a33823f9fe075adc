-- Per-key overrides: one key of a defined limit with a policy of its own,
-- on both stores (make test runs this file on the direct path and again
-- on the SQL path).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- one call per row, in order (see sql/policies.sql)
CREATE FUNCTION grants(lim text, k text, n integer)
RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FILTER (WHERE r.ok)
	FROM generate_series(1, n) g, LATERAL rl_limit(lim, k || repeat('', g)) r
$$;

SELECT rl_define('plan', 'token bucket', 10, '1 hour');
SELECT rl_define('plan_m', 'token bucket', 10, '1 hour', storage => 'memory');
-- the enterprise customer gets ten times the default
SELECT rl_override('plan', 'acme', 100);
SELECT rl_override('plan_m', 'acme', 100);
SELECT * FROM rl_overrides ORDER BY name, key;
SELECT grants('plan', 'acme', 120), grants('plan', 'small', 20);
SELECT grants('plan_m', 'acme', 120), grants('plan_m', 'small', 20);
-- every reading function answers under the key's policy
SELECT ok, retry_after FROM rl_check('plan', 'acme');
SELECT value FROM rl_value('plan', 'acme');
SELECT rl_headers('plan', rl_check('plan', 'acme'), key => 'acme');
SELECT rl_headers('plan', rl_check('plan', 'small'), key => 'small');
SELECT name, key, rate, capacity, value FROM rl_status WHERE name = 'plan'
ORDER BY name, key;
-- its state is the key's own row, under the name
SELECT replace(name, E'\x1f', '|') AS stored_name, key, value
FROM rate_limits WHERE name LIKE 'plan%' ORDER BY 1, 2;

-- period, capacity and max_reserved too; a reservation under the override
SELECT rl_override('plan', 'batch', 1, '1 second', capacity => 5,
	max_reserved => 20);
SELECT * FROM rl_overrides WHERE key = 'batch';
SELECT ok, retry_after FROM rl_limit('plan', 'batch', 25, reserve => true);
SELECT ok, retry_after FROM rl_limit('plan', 'batch', 1, reserve => true);

-- rl_limit_all, and the row trigger, see the override
SELECT * FROM rl_limit_all(ARRAY['plan', 'plan_m'], ARRAY['acme', 'acme'], ARRAY[1, 1]);
CREATE TABLE messages (sender text, body text);
CREATE TRIGGER messages_limit BEFORE INSERT ON messages
	FOR EACH ROW EXECUTE FUNCTION rl_enforce('plan', 'sender');
SELECT rl_override('plan', 'bot', 3);
INSERT INTO messages SELECT 'bot', 'hi' FROM generate_series(1, 3);
INSERT INTO messages VALUES ('bot', 'one more');
SELECT count(*) FROM messages;

-- the definition's other columns stay the definition's: a changed rate
-- leaves the override alone; shadow mode and block_for apply to it
SELECT rl_define('plan', 'token bucket', 20, '1 hour', shadow => true);
SELECT ok, retry_after FROM rl_limit('plan', 'acme');
SELECT ok FROM rl_limit('plan', 'small');
SELECT rl_define('plan', 'token bucket', 10, '1 hour');

-- dropping an override: the key follows the definition again, from the
-- state it has (here drained: no tokens)
SELECT rl_unoverride('plan', 'acme');
SELECT rl_unoverride('plan', 'acme');
SELECT grants('plan', 'acme', 12);
-- rl_gc judges an overridden key's row under its override: 100 tokens
-- refilling 10 an hour, drained; an hour on, the definition's rows (10 an
-- hour, up to 10) are full and idle, while the override's holds 10 of 100
-- and is kept (judged under the definition, it would look full, and be
-- dropped: a fresh 100)
SELECT rl_override('plan', 'acme', 10, capacity => 100);
SELECT rl_reset('plan', 'acme');
SELECT grants('plan', 'acme', 101);
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT rl_gc(1000) > 0 AS removed_some;
SELECT replace(name, E'\x1f', '|') AS stored_name, key, value
FROM rate_limits WHERE name LIKE 'plan%' AND key = 'acme' ORDER BY 1;
SELECT value FROM rl_value('plan', 'acme');
-- rl_reset forgets every row of the key
SELECT rl_reset('plan', 'acme');
SELECT count(*) FROM rate_limits WHERE name LIKE 'plan%' AND key = 'acme';
-- rl_undefine drops the name's overrides too
SELECT rl_undefine('plan_m');
SELECT count(*) FROM rl_overrides WHERE name = 'plan_m';

-- bad input gets an error and changes nothing
SELECT rl_override('nope', 'k', 1);
SELECT rl_override('plan', NULL, 1);
SELECT rl_override('plan', '', 1);
SELECT rl_override('plan', 'k', NULL);
SELECT rl_override('plan', 'k', 0);
SELECT rl_override('plan', 'k', 1, capacity => -1);
SELECT rl_define_concurrency('slots', 2);
SELECT rl_override('slots', 'k', 1);
SELECT rl_define('cal', 'fixed window', 100, '1 month', time_zone => 'UTC');
SELECT rl_override('cal', 'k', 1000, '1 day');
SELECT rl_override('cal', 'k', 1000);
SELECT key, rate, period, capacity FROM rl_overrides ORDER BY name, key;
-- a capacity of 0 refuses the key everything (22023: a count it can never
-- be granted); a sharded limit's override
-- is spread over its shards as the definition is
SELECT rl_override('plan', 'banned', 1, capacity => 0);
SELECT ok FROM rl_limit('plan', 'banned');
SELECT rl_define('sharded', 'token bucket', 100, '1 second', shards => 4);
SELECT rl_override('sharded', 'k', 1000, capacity => 2000);
SELECT grants('sharded', 'k', 50);
-- a hand edit is checked at the next call
UPDATE rl_overrides SET capacity = -1 WHERE name = 'cal';
SELECT ok FROM rl_limit('cal', 'k');
UPDATE rl_overrides SET period = '1 day' WHERE name = 'cal';
SELECT ok FROM rl_limit('cal', 'k');
DELETE FROM rl_overrides WHERE name = 'cal';
SELECT ok FROM rl_limit('cal', 'k');
DROP TABLE messages;
