-- rl_reset forgets a key's state without judging the limit's policy: a
-- defined concurrency limit has nothing to forget (no error), and a key
-- whose override a redefinition made invalid (rl_limit refuses it, 22023)
-- has its row deleted, as it is how an operator cleans such a key up.
-- In a read-only transaction a table limit's reset is 25006, a memory
-- limit's works.  Both paths (make test runs this file on each).
\set VERBOSITY terse
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- a concurrency limit: rl_reset returns, changing nothing
SELECT rl_define_concurrency('rv_conc', 2);
SELECT rl_acquire('rv_conc', 'k');
SELECT rl_reset('rv_conc', 'k');
SELECT rl_reset('rv_conc', NULL);

-- a key whose override the redefinition made invalid: rl_limit refuses
-- it (22023), rl_reset deletes its row
SELECT rl_define('rv_ov', 'token bucket', 5, '1 minute', max_reserved => 10);
SELECT rl_override('rv_ov', 'k', 100, '1 minute', capacity => 100,
	max_reserved => 50);
SELECT ok FROM rl_limit('rv_ov', 'k', 3);
SELECT count(*) FROM rate_limits WHERE name = 'rv_ov';
SELECT rl_define('rv_ov', 'sliding window', 5, '1 minute');
SELECT ok FROM rl_limit('rv_ov', 'k', 3);
SELECT rl_reset('rv_ov', 'k');
SELECT count(*) FROM rate_limits WHERE name = 'rv_ov';

-- read-only: a table limit's reset is 25006, a memory limit's works
SELECT rl_define('rv_tab', 'token bucket', 5, '1 minute');
SELECT rl_define('rv_mem', 'token bucket', 5, '1 minute', storage => 'memory');
SELECT ok FROM rl_limit('rv_tab', 'k', 3);
SELECT ok FROM rl_limit('rv_mem', 'k', 3);
BEGIN READ ONLY;
SELECT rl_reset('rv_tab', 'k');
ROLLBACK;
BEGIN READ ONLY;
SELECT rl_reset('rv_undefined', 'k');
ROLLBACK;
BEGIN READ ONLY;
SELECT rl_reset('rv_mem', 'k');
COMMIT;
SELECT value FROM rl_value('rv_tab', 'k');
SELECT value FROM rl_value('rv_mem', 'k');


-- a name with no definition, no config and no state for the key: an error
-- (a misspelt name would otherwise reset nothing, silently), as rl_undefine
-- of an unknown name is; with state under an inline config it is reset
\set VERBOSITY default
SELECT rl_reset('rv_nosuch', 'k');
SELECT ok FROM rl_limit('rv_inline', 'k', config => rl_token_bucket(5, '1 minute'));
SELECT rl_reset('rv_inline', 'k');
SELECT count(*) FROM rate_limits WHERE name LIKE 'rv_inline%';
SELECT rl_reset('rv_inline', 'k');
-- a call on a name with no definition and a NULL config says both
SELECT ok FROM rl_limit('rv_nosuch', 'k', config => NULL);
