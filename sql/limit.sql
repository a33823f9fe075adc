-- Token bucket: consume, deny with retry_after, refill, check, value, reset.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('sendMessage', 'token bucket', 10, '1 minute', capacity => 20);

-- a new key starts from a full bucket (20)
SELECT * FROM rl_limit('sendMessage', 'alice');
SELECT * FROM rl_limit('sendMessage', 'alice', 18);
-- one token left: 2 are denied, retry after one more token (6 s), nothing written
SELECT * FROM rl_limit('sendMessage', 'alice', 2);
SELECT name, key, shard, value, ts FROM rate_limits ORDER BY name, key, shard;
-- the last token is granted
SELECT * FROM rl_limit('sendMessage', 'alice');
SELECT value, ts FROM rate_limits WHERE key = 'alice';

-- rl_check answers what rl_limit would, and writes nothing
SELECT * FROM rl_check('sendMessage', 'alice');
SET ratelimit.now_override = '2026-01-01 00:00:03+00';
SELECT * FROM rl_check('sendMessage', 'alice');
SELECT * FROM rl_value('sendMessage', 'alice');
SET ratelimit.now_override = '2026-01-01 00:00:06+00';
SELECT * FROM rl_check('sendMessage', 'alice');
SELECT value, ts FROM rate_limits WHERE key = 'alice';
SELECT * FROM rl_limit('sendMessage', 'alice');
SELECT value, ts FROM rate_limits WHERE key = 'alice';

-- a check at exactly retry_after succeeds; one microsecond earlier fails
SELECT * FROM rl_limit('sendMessage', 'alice', 3);
SET ratelimit.now_override = '2026-01-01 00:00:23.999999+00';
SELECT ok FROM rl_check('sendMessage', 'alice', 3);
SET ratelimit.now_override = '2026-01-01 00:00:24+00';
SELECT ok FROM rl_check('sendMessage', 'alice', 3);

-- the refill is capped at capacity
SET ratelimit.now_override = '2026-01-01 01:00:00+00';
SELECT * FROM rl_value('sendMessage', 'alice');
SELECT * FROM rl_value('sendMessage', 'nobody');

-- a clock behind the stored ts adds nothing and never moves ts back
SELECT * FROM rl_limit('sendMessage', 'alice', 5);
SET ratelimit.now_override = '2026-01-01 00:59:00+00';
SELECT * FROM rl_limit('sendMessage', 'alice', 5);
SELECT value, ts FROM rate_limits WHERE key = 'alice';

-- reset forgets the key: a full bucket again
SELECT rl_reset('sendMessage', 'alice');
SELECT count(*) FROM rate_limits WHERE key = 'alice';
SELECT * FROM rl_value('sendMessage', 'alice');

-- throws => true raises SQLSTATE RL001 instead of returning ok = false
SELECT * FROM rl_limit('sendMessage', 'bob', 20);
\set VERBOSITY verbose
SELECT * FROM rl_limit('sendMessage', 'bob', throws => true);
SELECT * FROM rl_check('sendMessage', 'bob', throws => true);
SELECT * FROM rl_limit('sendMessage', NULL, 21 - 1);
SELECT * FROM rl_limit('sendMessage', NULL, throws => true);
\set VERBOSITY default
SELECT * FROM rl_limit('sendMessage', 'bob', throws => false);

-- a check and a value later in the same statement see what rl_limit took
SELECT (rl_limit('sendMessage', 'dave')).remaining AS after_limit,
       (rl_check('sendMessage', 'dave')).remaining AS check_would_leave,
       (rl_value('sendMessage', 'dave')).value AS value_now;

-- the composite reads well in a plain SELECT too
SELECT rl_limit('sendMessage', 'carol');
SELECT (rl_limit('sendMessage', 'carol')).ok;

-- inline config, no definition needed; a defined name refuses one
SELECT * FROM rl_limit('signup', config => rl_token_bucket(100, '1 hour'));
SELECT * FROM rl_value('signup', config => rl_token_bucket(100, '1 hour'));
SELECT * FROM rl_limit('sendMessage', 'alice', config => rl_token_bucket(100, '1 hour'));
SELECT * FROM rl_limit('signup');

-- a policy built by hand is checked like any other
SELECT * FROM rl_limit('handmade', 'k', config => ROW('token bucket', 5, '1 second', NULL, NULL, 1, NULL, NULL, NULL)::rl_policy);
SELECT * FROM rl_limit('handmade', 'k', config => ROW('token bucket', -5, '1 second', NULL, NULL, 1, NULL, NULL, NULL)::rl_policy);

-- the time comes from the server clock when nothing is pinned
RESET ratelimit.now_override;
SELECT abs(extract(epoch FROM (rl_value('sendMessage', 'zed')).ts - clock_timestamp())) < 60 AS real_clock;

SELECT rl_undefine('sendMessage');
DELETE FROM rate_limits;
