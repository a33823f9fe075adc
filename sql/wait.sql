-- rl_limit(..., wait => interval): a refused call that would be granted
-- within the wait sleeps, holding no row lock, then takes its tokens.  On
-- the real clock (a pinned one does not move while a call sleeps), so the
-- checks are coarse: "slept" is at least 50 ms, "at once" under 50 ms.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';

-- one token, back every 100 ms
SELECT rl_define('w_t', 'token bucket', 10, '1 second', capacity => 1);
SELECT rl_define('w_m', 'token bucket', 10, '1 second', capacity => 1,
	storage => 'memory');

CREATE FUNCTION timed(lim text, k text, w interval, n float8 DEFAULT 1)
RETURNS TABLE (ok boolean, waited text)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	ok := (rl_limit(lim, k, n, wait => w)).ok;
	waited := CASE WHEN clock_timestamp() - t0 >= '50 ms' THEN 'slept'
		ELSE 'at once' END;
	RETURN NEXT;
END $$;

-- the key is empty: the call sleeps about 100 ms and is granted
SELECT ok FROM rl_limit('w_t', 'a');
SELECT * FROM timed('w_t', 'a', '5 seconds');
SELECT ok FROM rl_limit('w_m', 'a');
SELECT * FROM timed('w_m', 'a', '5 seconds');
-- a wait shorter than retry_after returns the refusal at once (one token
-- a second: the next is about a second away)
SELECT rl_define('w_slow', 'token bucket', 1, '1 second', capacity => 1);
SELECT rl_define('w_slow_m', 'token bucket', 1, '1 second', capacity => 1,
	storage => 'memory');
SELECT ok FROM rl_limit('w_slow', 'a');
SELECT ok FROM rl_limit('w_slow_m', 'a');
SELECT * FROM timed('w_slow', 'a', '10 ms');
SELECT * FROM timed('w_slow_m', 'a', '10 ms');
-- no wait (0, NULL, or an rl_limit without the argument): at once
SELECT * FROM timed('w_slow', 'a', '0');
SELECT * FROM timed('w_slow', 'a', NULL);
-- a full key: granted at once
SELECT * FROM timed('w_t', 'full', '5 seconds');

-- A transaction that already took from the key holds its row: it does not
-- sleep on it (every other caller of the key would wait for it too)
BEGIN;
SELECT ok FROM rl_limit('w_t', 'held');
SELECT * FROM timed('w_t', 'held', '5 seconds');
-- another key of the same transaction still waits
SELECT ok FROM rl_limit('w_t', 'free');
COMMIT;
SELECT * FROM timed('w_t', 'free', '5 seconds');
-- a memory limit holds no row: its transaction waits again (its own takes
-- count until it commits, so a bucket of 2 empty at the start lets it take
-- two, each after a sleep)
SELECT rl_define('w_m2', 'token bucket', 10, '1 second', capacity => 2,
	storage => 'memory');
SELECT ok FROM rl_limit('w_m2', 'held', 2);
BEGIN;
SELECT * FROM timed('w_m2', 'held', '5 seconds');
SELECT * FROM timed('w_m2', 'held', '5 seconds');
COMMIT;

-- A transaction's own pending takes on a memory key stand in its way
-- until it commits: when they alone refuse the call (here they hold the
-- whole capacity), waiting cannot help, and the call is refused at once,
-- as on the table store
BEGIN;
SELECT ok FROM rl_limit('w_m', 'self');
SELECT * FROM timed('w_m', 'self', '1 second');
ROLLBACK;

-- A take rolled back to a savepoint released the key's row: the
-- transaction waits for the key again (2 tokens, one back every 500 ms;
-- one left, the call asks for both)
SELECT rl_define('w_sp', 'token bucket', 2, '1 second', capacity => 2);
SELECT ok FROM rl_limit('w_sp', 'k');
BEGIN;
SAVEPOINT a;
SELECT ok FROM rl_limit('w_sp', 'k');
ROLLBACK TO SAVEPOINT a;
SELECT * FROM timed('w_sp', 'k', '5 seconds', 2);
COMMIT;

-- No row lock while sleeping: another session's rl_refund, which locks
-- the row, is not kept waiting (lock_timeout 50 ms) while the call sleeps
-- for a token 1 second away
CREATE EXTENSION dblink;
-- dblink connects back to this server as the server's settings say (not
-- the server's environment: a packager's server has no PGHOST in it)
CREATE FUNCTION conninfo_quote(v text) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$SELECT '''' || replace(replace(v, '\', '\\'), '''', '\''') || ''''$$;
CREATE FUNCTION this_server() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT format('host=%s port=%s dbname=%s user=%s',
    conninfo_quote(coalesce(nullif(btrim(split_part(
      current_setting('unix_socket_directories'), ',', 1)), ''), 'localhost')),
    current_setting('port'), conninfo_quote(current_database()),
    conninfo_quote(current_user))
$$;
SELECT ok FROM rl_limit('w_slow', 'k');
SELECT dblink_connect('waiter', this_server());
SELECT dblink_send_query('waiter',
	$$SELECT ok FROM rl_limit('w_slow', 'k', wait => '5 seconds')$$);
SELECT pg_sleep(0.3);
SET lock_timeout = '50ms';
BEGIN;
SELECT value >= 0 AS refunded FROM rl_refund('w_slow', 'k', 0.1);
ROLLBACK;
RESET lock_timeout;
SELECT * FROM dblink_get_result('waiter') AS r(ok boolean);
SELECT dblink_disconnect('waiter');

-- A busy transaction still waits: which keys' rows it holds is known
-- exactly, however many other keys it took from (2,000 here).  Another
-- session empties each key just before the transaction's call.
SELECT rl_define('busy_many', 'token bucket', 10, '1 second');
SELECT rl_define('busy_many_m', 'token bucket', 10, '1 second',
	storage => 'memory');
CREATE FUNCTION emptied_then_timed(lim text, k text)
RETURNS TABLE (emptied boolean, ok boolean, waited text)
LANGUAGE plpgsql AS $$
BEGIN
	SELECT r.ok INTO emptied FROM dblink('other',
		format('SELECT ok FROM rl_limit(%L, %L)', lim, k)) AS r(ok boolean);
	SELECT t.ok, t.waited INTO ok, waited FROM timed(lim, k, '5 seconds') t;
	RETURN NEXT;
END $$;
SELECT dblink_connect('other', this_server());
BEGIN;
DO $$
BEGIN
	FOR i IN 1..2000 LOOP
		PERFORM rl_limit('busy_many', i::text);
		PERFORM rl_limit('busy_many_m', i::text);
	END LOOP;
END $$;
SELECT lim, key, t.* FROM (VALUES (1, 'w_t'), (2, 'w_m')) l(i, lim),
	(VALUES ('busy1'), ('busy2'), ('busy3')) k(key),
	LATERAL emptied_then_timed(lim, key) t
ORDER BY i, key;
ROLLBACK;
SELECT dblink_disconnect('other');

-- Waiters racing for one key: one that saw the tokens but lost them to
-- another goes back to waiting, so every call is granted within its wait
-- (8 sessions, 3 calls each, one token every 50 ms), and a lost race is
-- neither a refusal (rl_stats) nor a block (block_for)
SELECT rl_define('w_race', 'token bucket', 20, '1 second', capacity => 1,
	block_for => '1 hour');
SELECT rl_define('w_race_m', 'token bucket', 20, '1 second', capacity => 1,
	block_for => '1 hour', storage => 'memory');
CREATE PROCEDURE race(lim text, INOUT granted int)
LANGUAGE plpgsql AS $$
BEGIN
	granted := 0;
	FOR i IN 1..3 LOOP
		IF (SELECT ok FROM rl_limit(lim, 'k', wait => '10 seconds')) THEN
			granted := granted + 1;
		END IF;
		COMMIT;
	END LOOP;
END $$;
SELECT dblink_connect('r' || i, this_server())
FROM generate_series(1, 8) i;
SELECT dblink_send_query('r' || i, $$CALL race('w_race', 0)$$)
FROM generate_series(1, 8) i;
SELECT sum(granted) AS granted
FROM generate_series(1, 8) i,
	LATERAL dblink_get_result('r' || i) AS r(granted int);
SELECT count(*) FROM generate_series(1, 8) i,
	LATERAL dblink_get_result('r' || i) AS r(granted int);
SELECT dblink_send_query('r' || i, $$CALL race('w_race_m', 0)$$)
FROM generate_series(1, 8) i;
SELECT sum(granted) AS granted
FROM generate_series(1, 8) i,
	LATERAL dblink_get_result('r' || i) AS r(granted int);
SELECT dblink_disconnect('r' || i) FROM generate_series(1, 8) i;
SELECT name, calls, granted, refused, blocks FROM rl_stats
WHERE datname = current_database() AND name LIKE 'w\_race%' ORDER BY name;
SELECT ts <= now() + '1 minute' AS not_blocked FROM rl_value('w_race', 'k');
SELECT ts <= now() + '1 minute' AS not_blocked FROM rl_value('w_race_m', 'k');

-- a memory limit tightened while a call sleeps: the call decides under the
-- definition in force when it wakes (it granted under the one it read
-- before sleeping: over-admission)
SELECT rl_define('w_tight', 'token bucket', 1, '1 second', storage => 'memory');
SELECT ok FROM rl_limit('w_tight', 'k');
SELECT dblink_connect('waiter', this_server());
SELECT dblink_send_query('waiter',
	$$SELECT ok FROM rl_limit('w_tight', 'k', wait => '5 seconds')$$);
SELECT pg_sleep(0.3);
SELECT rl_define('w_tight', 'token bucket', 1, '1 hour', storage => 'memory');
SELECT * FROM dblink_get_result('waiter') AS r(ok boolean);
SELECT dblink_disconnect('waiter');

-- lock_timeout bounds the wait: a retry_after past it returns at once
SELECT ok FROM rl_limit('w_t', 'lt');
SET lock_timeout = '20ms';
SELECT * FROM timed('w_t', 'lt', '5 seconds');
RESET lock_timeout;
-- statement_timeout cancels a wait, as any statement
SELECT ok FROM rl_limit('w_slow', 'st');
SET statement_timeout = '100ms';
SELECT ok FROM rl_limit('w_slow', 'st', wait => '5 seconds');
RESET statement_timeout;

-- block_for: a call granted within its wait was never refused, so it
-- blocks nothing; one whose wait runs out is refused, and blocks its key
SELECT rl_define('w_block', 'token bucket', 10, '1 second', capacity => 1,
	block_for => '1 hour');
SELECT ok FROM rl_limit('w_block', 'k');
SELECT * FROM timed('w_block', 'k', '5 seconds');
SELECT ts <= now() + '1 minute' AS not_blocked FROM rl_value('w_block', 'k');
SELECT * FROM timed('w_block', 'k', '10 ms');
SELECT ts > now() + '59 minutes' AS blocked FROM rl_value('w_block', 'k');
-- a blocked key is not waited for past the wait
SELECT * FROM timed('w_block', 'k', '1 second');
-- a blocked key is waited for like any refusal, when the block ends in time
SELECT rl_define('w_blocked', 'token bucket', 10, '1 second', capacity => 1);
SELECT value FROM rl_block('w_blocked', 'k', '200 ms');
SELECT * FROM timed('w_blocked', 'k', '5 seconds');
-- shadow mode refuses nothing, so it never waits
SELECT rl_define('w_shadow', 'token bucket', 10, '1 second', capacity => 1,
	shadow => true);
SELECT ok FROM rl_limit('w_shadow', 'k');
SELECT * FROM timed('w_shadow', 'k', '5 seconds');

-- a pinned clock never moves: the call tries until its wait is over
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT ok FROM rl_limit('w_t', 'pinned');
SELECT * FROM timed('w_t', 'pinned', '300 ms');
RESET ratelimit.now_override;

-- bad input changes nothing
SELECT ok FROM rl_limit('w_t', 'bad', wait => '-1 second');
SELECT ok FROM rl_limit('w_t', 'bad', wait => '1001 years');
SELECT count(*) FROM rate_limits WHERE key = 'bad';

-- statistics count the call's own answer, not the tries it slept between
SELECT name, calls, granted, refused, blocks FROM rl_stats
WHERE datname = current_database() AND name LIKE 'w\_%' ORDER BY name;
