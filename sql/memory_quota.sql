-- Who may make memory state: the memory store is one per server, so an
-- inline config with storage 'memory' (which any role may pass) needs
-- ratelimit.inline_memory, a setting only a superuser (or a role granted
-- SET on it) can turn on, unless the caller is a superuser; limits
-- defined with storage 'memory' were chosen by an administrator and need
-- nothing.  rl_memory_forget, not granted to PUBLIC, clears this
-- install's memory entries.
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
-- this database's entries from earlier suites go first, so that the
-- counts below are this suite's
SELECT rl_memory_forget(false) >= 0 AS cleared;
SELECT rl_define('quota_def', 'token bucket', 5, '1 hour', storage => 'memory');
CREATE ROLE regress_ratelimit_mem LOGIN;
SELECT memory_keys AS baseline FROM rl_stats_info \gset

------------------------------------------------------------------ refused
-- a role with only CONNECT: refused with 42501, and nothing is stored
SET ROLE regress_ratelimit_mem;
SHOW ratelimit.inline_memory;
SELECT rl_limit('quota_inl', 'k', config => rl_token_bucket(1, '100 years', storage => 'memory'));
SELECT stmt, error_of(stmt) FROM (VALUES
  ($$SELECT rl_limit('quota_inl', 'k', config => rl_token_bucket(1, '100 years', storage => 'memory'))$$),
  ($$SELECT rl_check('quota_inl', 'k', config => rl_token_bucket(1, '100 years', storage => 'memory'))$$),
  ($$SELECT rl_memory_forget()$$),
  ($$SET ratelimit.inline_memory = on$$)
) AS t(stmt);
-- a table config and a defined memory limit still work
SELECT ok FROM rl_limit('quota_tab', 'k', config => rl_token_bucket(1, '1 hour'));
SELECT ok, remaining FROM rl_limit('quota_def', 'k');
RESET ROLE;
SELECT memory_keys - :baseline AS new_entries FROM rl_stats_info;

------------------------------------------------------------------ allowed
-- the setting on for the session (as ALTER ROLE ... SET gives it at login)
SET ratelimit.inline_memory = on;
SET ROLE regress_ratelimit_mem;
SELECT ok, remaining FROM rl_limit('quota_inl', 'k', config => rl_token_bucket(2, '100 years', storage => 'memory'));
SELECT ok, remaining FROM rl_limit('quota_inl', 'k2', config => rl_token_bucket(2, '100 years', storage => 'memory'));
SELECT ok, remaining FROM rl_check('quota_inl', 'k', config => rl_token_bucket(2, '100 years', storage => 'memory'));
RESET ROLE;
RESET ratelimit.inline_memory;
SELECT memory_keys - :baseline AS new_entries FROM rl_stats_info;
-- a superuser needs no setting
SELECT ok, remaining FROM rl_limit('quota_inl', 'k', config => rl_token_bucket(2, '100 years', storage => 'memory'));

------------------------------------------------------------------ forget
-- rl_memory_forget drops this install's inline entries (no idle test: they
-- are far from refilled), keeps the defined limit's, and acts at once
BEGIN;
SELECT rl_memory_forget() AS forgotten;
ROLLBACK;
SELECT memory_keys - :baseline AS new_entries FROM rl_stats_info;
SELECT ok, remaining FROM rl_check('quota_inl', 'k', config => rl_token_bucket(2, '100 years', storage => 'memory'));
SELECT ok, remaining FROM rl_check('quota_def', 'k');
-- an entry a transaction holds is kept
BEGIN;
SELECT ok FROM rl_limit('quota_inl', 'held', config => rl_token_bucket(2, '100 years', storage => 'memory'));
SELECT rl_memory_forget() AS forgotten;
COMMIT;
SELECT rl_memory_forget() AS forgotten;
-- inline_only => false drops the defined limits' entries too
SELECT rl_memory_forget(inline_only => false) AS forgotten;
SELECT memory_keys - :baseline AS new_entries FROM rl_stats_info;
SELECT ok, remaining FROM rl_check('quota_def', 'k');
-- granted deliberately, an application role can call it
GRANT EXECUTE ON FUNCTION rl_memory_forget(boolean) TO regress_ratelimit_mem;
SET ROLE regress_ratelimit_mem;
SELECT rl_memory_forget(false) AS forgotten;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION rl_memory_forget(boolean) FROM regress_ratelimit_mem;

DROP ROLE regress_ratelimit_mem;
SELECT rl_undefine('quota_def');
DELETE FROM rate_limits WHERE name LIKE 'quota%';
