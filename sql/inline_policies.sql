-- Inline policies: each inline policy of a name has a state of its own, so
-- no caller can refill or sink another caller's inline limit by calling its
-- name with another policy; a reservation without max_reserved goes no
-- deeper than what the limit refills in 500 years (at most 1e15), so
-- no caller can put a key beyond recovery.  Every function that takes a
-- config; rl_status, rl_gc and rl_reset on inline rows.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-07-01 00:00:00+00';
-- the stored name, printable
CREATE FUNCTION shown(n text) RETURNS text LANGUAGE sql AS $$ SELECT replace(n, E'\x1f', '|') $$;

----------------------------------------------------- one state per policy
-- 3 sign-ups an hour; a generous policy on the same name refills nothing
SELECT ok FROM rl_limit('signup', 'u', 1, config => rl_fixed_window(3, '1 hour'));
SELECT ok FROM rl_limit('signup', 'u', 2, config => rl_fixed_window(3, '1 hour'));
SELECT ok, remaining FROM rl_limit('signup', 'u', 1, config => rl_token_bucket(1e15, '1 microsecond'));
SELECT value FROM rl_refund('signup', 'u', 3, config => rl_token_bucket(1e15, '1 microsecond'));
SELECT ok, retry_after FROM rl_limit('signup', 'u', 1, config => rl_fixed_window(3, '1 hour'));
SELECT ok FROM rl_check('signup', 'u', 1, config => rl_fixed_window(3, '1 hour'));
-- the same policy written differently is the same policy (capacity defaults to rate)
SELECT ok FROM rl_limit('signup', 'u', 1, config => rl_fixed_window(3, '60 minutes', capacity => 3));
SELECT shown(name) AS stored_name, key, value FROM rate_limits WHERE name LIKE 'signup%' ORDER BY 1;

-- a huge reservation under another policy sinks only its own state
SELECT ok FROM rl_limit('signup', 'v', 4e6, reserve => true, config => rl_token_bucket(1, '1 hour', capacity => 1, max_reserved => 4e6));
SELECT ok FROM rl_limit('signup', 'v', 1, config => rl_fixed_window(3, '1 hour'));
-- refunds, penalties and blocks with a config touch that policy's state only
SELECT value FROM rl_penalize('signup', 'w', 5, config => rl_token_bucket(10, '1 hour'));
SELECT value FROM rl_block('signup', 'w', '1 day', config => rl_token_bucket(20, '1 hour'));
SELECT ok FROM rl_limit('signup', 'w', 1, config => rl_fixed_window(3, '1 hour'));
SELECT value FROM rl_value('signup', 'w', config => rl_token_bucket(10, '1 hour'));
SELECT value FROM rl_value('signup', 'w', config => rl_fixed_window(3, '1 hour'));
SELECT rl_headers('signup', r, config => rl_fixed_window(3, '1 hour'))
FROM rl_check('signup', 'w', 1, config => rl_fixed_window(3, '1 hour')) r;

-- rl_status shows each policy's rows under the name, with their policy
SELECT name, key, kind, rate, period, capacity, shards, value, remaining, idle
FROM rl_status WHERE name = 'signup' ORDER BY key, kind, rate;
SELECT rl_inline_policy(name) FROM rate_limits WHERE name LIKE 'signup%' AND key = 'u' ORDER BY 1;
SELECT rl_inline_policy('signup') IS NULL AS defined_names_have_none;
SELECT rl_inline_policy(E'signup\x1fx/1/2/3/-/1/-') IS NULL AS garbage_has_none;

-- a name never contains the separator: stored names cannot collide
SELECT error_of($$SELECT rl_limit(E'a\x1ff', 'k', config => rl_fixed_window(3, '1 hour'))$$);
SELECT error_of($$SELECT rl_define(E'a\x1ff/3/3600000000/3/-/1/-', 'fixed window', 3, '1 hour')$$);

-- a defined name still refuses a config (42710), and its state is apart
SELECT rl_define('signup', 'token bucket', 100, '1 hour');
SELECT error_of($$SELECT rl_limit('signup', 'u', config => rl_fixed_window(3, '1 hour'))$$);
SELECT ok, remaining FROM rl_limit('signup', 'u');
SELECT rl_undefine('signup');
SELECT count(*) AS inline_rows_kept FROM rate_limits WHERE name LIKE E'signup\x1f%';

-- rl_reset forgets the key under every policy of the name; other keys stay
SELECT rl_reset('signup', 'u');
SELECT shown(name) AS stored_name, key FROM rate_limits WHERE name LIKE 'signup%' ORDER BY 1, 2;
-- with a config, rl_reset forgets that policy's rows of the key only (the
-- same policy written differently is the same policy)
SELECT ok FROM rl_limit('signup', 'x', 3, config => rl_fixed_window(3, '1 hour'));
SELECT ok FROM rl_limit('signup', 'x', 1, config => rl_token_bucket(10, '1 hour'));
SELECT ok FROM rl_limit('signup', 'y', 1, config => rl_fixed_window(3, '1 hour'));
SELECT rl_reset('signup', 'x', config => rl_fixed_window(3, '60 minutes', capacity => 3));
SELECT shown(name) AS stored_name, key FROM rate_limits WHERE name LIKE 'signup%' ORDER BY 1, 2;
SELECT ok, remaining FROM rl_limit('signup', 'x', 3, config => rl_fixed_window(3, '1 hour'));
-- a number key, as rl_limit takes it
SELECT ok FROM rl_limit('signup', 5, config => rl_fixed_window(3, '1 hour'));
SELECT rl_reset('signup', 5::bigint, rl_fixed_window(3, '1 hour'));
SELECT count(*) AS key_5_rows FROM rate_limits WHERE name LIKE 'signup%' AND key = '5';
-- a table key's rows are written: 25006 in a READ ONLY transaction
BEGIN READ ONLY;
SELECT error_of($$SELECT rl_reset('signup', 'y', config => rl_fixed_window(3, '1 hour'))$$);
ROLLBACK;
-- a config for a defined name: 42710 as rl_limit raises, nothing deleted
SELECT rl_define('signup', 'token bucket', 100, '1 hour');
SELECT ok FROM rl_limit('signup', 'y');
SELECT error_of($$SELECT rl_reset('signup', 'y', config => rl_fixed_window(3, '1 hour'))$$);
SELECT shown(name) AS stored_name, key FROM rate_limits WHERE name LIKE 'signup%' ORDER BY 1, 2;
SELECT rl_undefine('signup');

-- rl_gc judges inline rows by their own policy: a full one goes, one
-- still refilling stays
DELETE FROM rate_limits;
SELECT ok FROM rl_limit('gcin', 'a', 2, config => rl_token_bucket(2, '1 minute'));
SELECT ok FROM rl_limit('gcin', 'b', 1, config => rl_token_bucket(2, '1 minute'));
SET ratelimit.now_override = '2026-07-01 00:00:30+00';
SELECT key, idle FROM rl_status WHERE name = 'gcin' ORDER BY key;
SELECT rl_gc();
SELECT key FROM rl_status WHERE name = 'gcin' ORDER BY key;
SET ratelimit.now_override = '2026-07-01 00:01:00+00';
SELECT rl_gc();
SELECT count(*) AS gcin_left FROM rate_limits WHERE name LIKE 'gcin%';

--------------------------------------------- deep reservations
SET ratelimit.now_override = '2026-07-01 00:00:00+00';
-- without max_reserved, no deeper than the capacity: an error, nothing written
SELECT error_of($$SELECT rl_limit('sink', 'k', 7, reserve => true, config => rl_fixed_window(3, '1 hour'))$$);
-- with one, no deeper than it: an error, nothing written
SELECT error_of($$SELECT rl_limit('sink', 'k', 1e15, reserve => true, config => rl_fixed_window(3, '1 hour', max_reserved => 13148997))$$);
SELECT count(*) AS sink_rows FROM rate_limits WHERE name LIKE 'sink%';
-- as deep as allowed: 4383000 windows (500 years) of 3, less the capacity
SELECT ok, remaining FROM rl_limit('sink', 'k', 13149000, reserve => true, config => rl_fixed_window(3, '1 hour', max_reserved => 13148997));
SELECT ok, remaining, retry_after FROM rl_limit('sink', 'k', 1, reserve => true, config => rl_fixed_window(3, '1 hour', max_reserved => 13148997));
-- every other call still gets an answer, not an error, with an exact retry
SELECT ok, retry_after FROM rl_limit('sink', 'k', 3, config => rl_fixed_window(3, '1 hour', max_reserved => 13148997));
CREATE TEMP TABLE sink_retry AS
SELECT '2026-07-01 00:00:00+00'::timestamptz + retry_after AS at
FROM rl_check('sink', 'k', 1, config => rl_fixed_window(3, '1 hour', max_reserved => 13148997));
SELECT at FROM sink_retry;
SELECT set_config('ratelimit.now_override', (at - '1 microsecond'::interval)::text, false) IS NOT NULL AS pinned FROM sink_retry;
SELECT ok FROM rl_check('sink', 'k', 1, config => rl_fixed_window(3, '1 hour', max_reserved => 13148997));
SELECT set_config('ratelimit.now_override', at::text, false) IS NOT NULL AS pinned FROM sink_retry;
SELECT ok FROM rl_limit('sink', 'k', 1, config => rl_fixed_window(3, '1 hour', max_reserved => 13148997));
RESET ratelimit.now_override;
DELETE FROM rate_limits;
DROP FUNCTION shown(text);

-- PL/pgSQL: SELECT rl_fixed_window(...) INTO a variable of type rl_policy
-- spreads the value over its fields, the first (kind) taking all of it; the
-- error says how to assign it
CREATE FUNCTION spread_policy() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	p rl_policy;
BEGIN
	SELECT rl_fixed_window(5, '1 hour') INTO p;
	RETURN (rl_check('spread', 'k', config => p)).ok;
END
$$;
SELECT spread_policy();
CREATE OR REPLACE FUNCTION spread_policy() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	p rl_policy;
BEGIN
	p := rl_fixed_window(5, '1 hour');
	RETURN (rl_check('spread', 'k', config => p)).ok;
END
$$;
SELECT spread_policy();
DROP FUNCTION spread_policy();
