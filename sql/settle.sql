-- Settling a cost known only after the work (rl_settle), and max_debt:
-- admission on a positive balance, a debt bounded below zero.  On both
-- stores (the table, and memory); make test runs this file on the direct
-- path and again on the SQL path.  The clock is pinned: nothing refills.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET extra_float_digits = 0;
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

SELECT rl_define('settle_t', 'token bucket', 100, '1 hour');
SELECT rl_define('settle_m', 'token bucket', 100, '1 hour', storage => 'memory');

-- Admitted on an estimate of 10, the work cost 25: 15 more are taken.
SELECT ok, remaining FROM rl_limit('settle_t', 'k', 10);
SELECT * FROM rl_settle('settle_t', 'k', 10, 25);
SELECT value FROM rl_value('settle_t', 'k');
SELECT ok, remaining FROM rl_limit('settle_m', 'k', 10);
SELECT * FROM rl_settle('settle_m', 'k', 10, 25);
SELECT value FROM rl_value('settle_m', 'k');
-- It cost less than estimated: the difference comes back (65 + 7 = 72).
SELECT ok, remaining FROM rl_limit('settle_t', 'k', 10);
SELECT * FROM rl_settle('settle_t', 'k', 10, 3);
SELECT ok, remaining FROM rl_limit('settle_m', 'k', 10);
SELECT * FROM rl_settle('settle_m', 'k', 10, 3);
SELECT value FROM rl_value('settle_m', 'k');
-- An equal cost changes nothing.
SELECT * FROM rl_settle('settle_t', 'k', 4, 4);
SELECT * FROM rl_settle('settle_m', 'k', 4, 4);
-- Without max_debt a charge is not a refusal: it may take the key below
-- zero (72 - 90 = -18), and then every call is refused until it refills
-- (19 tokens at 100 an hour: 11:24).
SELECT * FROM rl_settle('settle_t', 'k', 10, 100);
SELECT * FROM rl_settle('settle_m', 'k', 10, 100);
SELECT ok, remaining, retry_after FROM rl_limit('settle_t', 'k');
SELECT ok, remaining, retry_after FROM rl_limit('settle_m', 'k');
-- A return never goes above capacity: more would let the key burst past
-- its limit.
SELECT * FROM rl_settle('settle_t', 'k2', 50, 0);
SELECT * FROM rl_settle('settle_m', 'k2', 50, 0);
-- The settlement is the caller's transaction: a rollback undoes it.
BEGIN;
SELECT * FROM rl_settle('settle_t', 'k3', 1, 40);
SELECT * FROM rl_settle('settle_m', 'k3', 1, 40);
ROLLBACK;
SELECT value FROM rl_value('settle_t', 'k3');
SELECT value FROM rl_value('settle_m', 'k3');
-- Every key type rl_refund takes.
SELECT value FROM rl_settle('settle_t', 7::bigint, 1, 2);
SELECT value FROM rl_settle('settle_t', 7, 1, 2);
SELECT value FROM rl_settle('settle_t', 7::smallint, 1, 2);
SELECT value FROM rl_settle('settle_t', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 1, 2);
SELECT value FROM rl_settle('settle_t', NULL::text, 1, 2);
SELECT value FROM rl_settle('settle_t', '10.1.2.3'::inet, 1, 2);
-- An inline config too.
SELECT value FROM rl_settle('inline', 'k', 1, 5,
	config => rl_token_bucket(10, '1 minute'));
-- Bad input: a clear error, and nothing changed.
SELECT rl_settle('settle_t', 'k4', -1, 2);
SELECT rl_settle('settle_t', 'k4', 1, 'NaN');
SELECT rl_settle('settle_t', 'k4', 1, 'Infinity');
SELECT rl_settle('settle_t', 'k4', NULL, 2);
SELECT rl_settle('settle_t', 'k4', 1, 2e15);
SELECT rl_settle('nosuch', 'k4', 1, 2);
SELECT value FROM rl_value('settle_t', 'k4');

-- max_debt: a call is admitted on a positive balance and may take the key
-- down to -max_debt, never further; nothing is admitted at 0 or below.
SELECT rl_define('debt_t', 'token bucket', 10, '10 seconds', max_debt => 20);
SELECT rl_define('debt_m', 'token bucket', 10, '10 seconds', max_debt => 20,
	storage => 'memory');
SELECT name, max_debt FROM rl_definitions WHERE name LIKE 'debt%' ORDER BY name;
-- 10 held: a call of 25 fits (10 - 25 = -15 >= -20), at once (allowed)
SELECT ok, allowed, remaining, retry_after FROM rl_limit('debt_t', 'k', 25);
SELECT ok, allowed, remaining, retry_after FROM rl_limit('debt_m', 'k', 25);
-- -15: refused, until the balance is positive again: 15.000001 seconds
-- (1 token a second; positive, not zero)
SELECT ok, remaining, retry_after FROM rl_limit('debt_t', 'k', 1);
SELECT ok, remaining, retry_after FROM rl_limit('debt_m', 'k', 1);
SELECT ok, remaining, retry_after FROM rl_check('debt_t', 'k', 1);
-- the retry_after is exact: refused a microsecond before, granted at it
SET ratelimit.now_override = '2026-01-01 00:00:15+00';
SELECT ok, remaining FROM rl_limit('debt_t', 'k', 1);
SELECT ok, remaining FROM rl_limit('debt_m', 'k', 1);
SET ratelimit.now_override = '2026-01-01 00:00:15.000001+00';
SELECT ok, round(remaining::numeric, 6) AS remaining FROM rl_limit('debt_t', 'k', 1);
SELECT ok, round(remaining::numeric, 6) AS remaining FROM rl_limit('debt_m', 'k', 1);
-- a call whose count would pass the bound waits until it fits: at
-- -0.999999, a call of 25 needs 5 tokens held (5 - 25 = -20), about 6
-- seconds on; refused a microsecond before the retry_after, granted at it
SELECT ok, retry_after FROM rl_limit('debt_t', 'k', 25);
SELECT ok, retry_after FROM rl_limit('debt_m', 'k', 25);
SET ratelimit.now_override = '2026-01-01 00:00:21+00';
SELECT ok FROM rl_check('debt_t', 'k', 25);
SELECT ok FROM rl_check('debt_m', 'k', 25);
SET ratelimit.now_override = '2026-01-01 00:00:21.000001+00';
SELECT ok FROM rl_check('debt_t', 'k', 25);
SELECT ok FROM rl_check('debt_m', 'k', 25);
-- a count beyond capacity + max_debt can never be granted: an error
SELECT rl_limit('debt_t', 'k', 30.5);
-- reserve has no meaning under max_debt
SELECT rl_limit('debt_t', 'k', 1, reserve => true);
-- settle under max_debt: a charge stops at -max_debt, and the rest is
-- reported unsettled
SET ratelimit.now_override = '2026-01-01 00:01:00+00';
SELECT ok, remaining FROM rl_limit('debt_t', 'k2', 5);
SELECT * FROM rl_settle('debt_t', 'k2', 5, 50);
SELECT ok, remaining FROM rl_limit('debt_m', 'k2', 5);
SELECT * FROM rl_settle('debt_m', 'k2', 5, 50);
-- at the bound, a charge takes nothing
SELECT * FROM rl_settle('debt_t', 'k2', 0, 1);
SELECT * FROM rl_settle('debt_m', 'k2', 0, 1);
SELECT value FROM rl_value('debt_t', 'k2');
SELECT value FROM rl_value('debt_m', 'k2');
-- a return still never goes above capacity
SELECT * FROM rl_settle('debt_t', 'k2', 100, 0);
SELECT * FROM rl_settle('debt_m', 'k2', 100, 0);
-- bad definitions
SELECT rl_define('debt_bad', 'token bucket', 10, '1 minute', max_debt => -1);
SELECT rl_define('debt_bad', 'token bucket', 10, '1 minute', max_debt => 'NaN');
SELECT rl_define('debt_bad', 'token bucket', 10, '1 minute', max_debt => 1,
	max_reserved => 1);
SELECT rl_define('debt_bad', 'sliding window', 10, '1 minute', max_debt => 1);
SELECT rl_define('debt_bad', 'token bucket', 10, '1 minute', max_debt => 1,
	shards => 4);
SELECT rl_define('debt_bad', 'token bucket', 1, '100 years', max_debt => 1e6);
SELECT count(*) FROM rl_definitions WHERE name = 'debt_bad';
-- a fixed window keeps a debt across windows too
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('debt_fw', 'fixed window', 10, '1 minute', max_debt => 15,
	start => '2026-01-01');
SELECT ok, remaining FROM rl_limit('debt_fw', 'k', 20);
SELECT ok, retry_after FROM rl_limit('debt_fw', 'k', 1);
SET ratelimit.now_override = '2026-01-01 00:01:00+00';
-- -10 + 10 = 0: still refused, until the next window
SELECT ok, retry_after FROM rl_limit('debt_fw', 'k', 1);

-- The ledger: a pinned clock, a random sequence of admissions on an
-- estimate and settlements of the actual cost leaves the key at capacity
-- less the sum of the actual costs, exactly, while no bound is hit;
-- nothing is admitted at a balance of 0 or below, and the debt never
-- passes max_debt.
SET ratelimit.now_override = '2026-01-02 00:00:00+00';
SELECT rl_define('ledger_t', 'token bucket', 1e6, '1 hour', max_debt => 50);
SELECT rl_define('ledger_m', 'token bucket', 1e6, '1 hour', max_debt => 50,
	storage => 'memory');
-- each step commits: the memory store applies a return at commit
CREATE TABLE ledger_log (lim text, key text, admitted boolean, before float8,
	after float8, spent float8);
CREATE PROCEDURE ledger(lim text, n integer, keys integer, seed float8,
	act_max integer)
LANGUAGE plpgsql AS $$
DECLARE
	k text;
	est float8;
	act float8;
	before float8;
	r rl_result;
	unsettled float8;
BEGIN
	PERFORM setseed(seed);
	FOR i IN 1..n LOOP
		k := 'k' || i % keys;
		est := floor(random() * 20) + 1;
		act := floor(random() * act_max);
		SELECT v.value INTO before FROM rl_value(lim, k) v;
		r := rl_limit(lim, k, est);
		unsettled := 0;
		IF r.ok THEN
			SELECT s.unsettled INTO unsettled FROM rl_settle(lim, k, est, act) s;
		END IF;
		INSERT INTO ledger_log
		SELECT lim, k, r.ok, before, v.value,
			CASE WHEN r.ok THEN act - unsettled ELSE 0 END
		FROM rl_value(lim, k) v;
		COMMIT;
	END LOOP;
END
$$;
-- value: what the keys hold together; held: what they held at the start
CREATE VIEW ledger_sum AS
SELECT l.lim, count(*) FILTER (WHERE admitted) AS admitted,
	(SELECT sum(v.value) FROM (SELECT DISTINCT key FROM ledger_log d
		WHERE d.lim = l.lim) d, rl_value(l.lim, d.key) v) AS value,
	(SELECT count(DISTINCT key) FROM ledger_log d WHERE d.lim = l.lim) *
		(SELECT capacity FROM rl_definitions WHERE name = l.lim) AS held,
	min(after) AS deepest,
	count(*) FILTER (WHERE admitted AND before <= 0) AS admitted_at_or_below_zero,
	sum(spent) AS spent
FROM ledger_log l GROUP BY l.lim;
CALL ledger('ledger_t', 200, 1, 0.5, 40);
CALL ledger('ledger_m', 200, 1, 0.5, 40);
SELECT lim, admitted, value = held - spent AS exact, admitted_at_or_below_zero,
	deepest >= 0 AS never_below_zero
FROM ledger_sum ORDER BY lim;
-- and a small capacity and large costs over many keys, where the bound is
-- hit: the debt never passes it, and what it left unsettled is not spent
TRUNCATE ledger_log;
SELECT rl_define('ledger_t', 'token bucket', 100, '1 hour', max_debt => 50);
SELECT rl_define('ledger_m', 'token bucket', 100, '1 hour', max_debt => 50,
	storage => 'memory');
CALL ledger('ledger_t', 400, 40, 0.25, 200);
CALL ledger('ledger_m', 400, 40, 0.25, 200);
SELECT lim, admitted, value = held - spent AS exact,
	admitted_at_or_below_zero, deepest >= -50 AS within_bound,
	(SELECT count(DISTINCT key) FROM ledger_log l
		WHERE l.lim = s.lim AND l.after = -50) AS keys_at_bound
FROM ledger_sum s ORDER BY lim;

-- rl_settle is the application's, like rl_refund
SELECT grant_set FROM rl_grant_sets WHERE object = 'rl_settle';

SELECT rl_undefine(name) FROM rl_definitions
WHERE name LIKE 'settle%' OR name LIKE 'debt%' OR name LIKE 'ledger%'
ORDER BY name;
DROP VIEW ledger_sum;
DROP TABLE ledger_log;
DROP PROCEDURE ledger(text, integer, integer, float8, integer);
RESET ratelimit.now_override;
