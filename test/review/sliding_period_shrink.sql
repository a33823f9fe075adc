-- review-sliding: a sliding window redefined with a shorter period in the
-- middle of a window.  The stored ts (the old window's start, 00:00:00) is
-- a window start of the new 2-second windows too, so the refill reads the
-- new window [00:00:58, 00:01:00) as 29 windows after ts's and forgets the
-- 10 calls made at 00:00:59.9.
-- Observed: the second call of 10 is granted: 20 in 0.05 s, all inside the
-- clock-aligned window [00:00:58, 00:01:00) of the new definition.
-- Allowed by the new definition's guarantee: at most N = 10 in that window.
-- The fixed window does the same on a period shrink (semantics.md:
-- redefinitions keep value and ts), so this is the generic redefinition
-- behaviour, not the kind's; 8ceaa2c's "only stricter than the bound after a
-- redefinition" holds for a kind change only.
-- Run: psql -d <db with ratelimit 1.3> -f sliding_period_shrink.sql
SET timezone = 'UTC';
SELECT rl_define('rp', 'sliding window', 10, '1 minute', start => '2026-01-01 00:00:00+00');
SET ratelimit.now_override = '2026-01-01 00:00:59.9+00';
SELECT ok FROM rl_limit('rp', 'k', 10);                -- t
SELECT rl_define('rp', 'sliding window', 10, '2 seconds', start => '2026-01-01 00:00:00+00');
SET ratelimit.now_override = '2026-01-01 00:00:59.95+00';
SELECT ok, remaining FROM rl_limit('rp', 'k', 10);     -- observed t; allowed f
SELECT value, ts, prev FROM rate_limits WHERE name = 'rp';
SELECT rl_undefine('rp');
