-- rl_headers: the HTTP fields of draft-ietf-httpapi-ratelimit-headers for
-- answers of rl_limit and rl_check, against values worked out by hand.
-- Amounts round down and times up, so a client that follows them never
-- comes back early.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

-- token bucket: 10 a minute (one token per 6 s), bursts of 20
SELECT rl_define('api', 'token bucket', 10, '1 minute', capacity => 20);
-- a first call: 19 left, full again in 6 s
SELECT rl_headers('api', rl_limit('api', 'u'));
-- 19 more: none left, full again in 20 tokens = 120 s
SELECT rl_headers('api', rl_limit('api', 'u', 19));
-- denied: one token in 6 s; t is the Retry-After, so that Retry-After
-- never falls before the end of the effective window
SELECT rl_headers('api', rl_limit('api', 'u'));
-- 2.5 s later: 0.41666 tokens; one token in 3.5 s, rounded up to 4
SET ratelimit.now_override = '2026-01-01 00:00:02.5+00';
SELECT * FROM rl_check('api', 'u');
SELECT rl_headers('api', rl_check('api', 'u'));
-- a count of 5: 4.58333 tokens missing = 27.5 s, rounded up to 28
SELECT rl_headers('api', rl_check('api', 'u', 5));
-- a reservation is granted: r is 0 while it is outstanding, t is until
-- full, and there is no Retry-After (the work's time is retry_after).  The
-- second one leaves -3.58333: 23.58333 tokens to full = 141.5 s, so 142
SELECT * FROM rl_limit('api', 'u', 2, reserve => true);
SELECT rl_headers('api', rl_limit('api', 'u', 2, reserve => true));

-- fixed window: 100 an hour, windows on the hour
SET ratelimit.now_override = '2026-01-01 00:10:00+00';
SELECT rl_define('fw', 'fixed window', 100, '1 hour', start => '2026-01-01 00:00:00+00');
-- 60 taken at 00:10: 40 left, next window in 50 minutes
SELECT rl_headers('fw', rl_limit('fw', 'u', 60));
-- 50 asked: denied until 01:00, 3000 s
SELECT rl_headers('fw', rl_limit('fw', 'u', 50));
-- a reservation of 50 with nothing left (no max_reserved): granted, r 0,
-- t the next window
SELECT rl_define('fw2', 'fixed window', 100, '1 hour', start => '2026-01-01 00:00:00+00');
SELECT * FROM rl_limit('fw2', 'u', 100);
SELECT rl_headers('fw2', rl_limit('fw2', 'u', 50, reserve => true));

-- fractions: 2.5 a period of 90.5 s gives q 2 and w 91; a check of 1
-- leaves 1.5 (r 1), one token short of full: 36.2 s, so t 37
SELECT rl_headers('odd', rl_check('odd', 'u', config => rl_token_bucket(2.5, '90.5 seconds')),
                  rl_token_bucket(2.5, '90.5 seconds'));
-- a sharded limit advertises the whole limit's rate
SELECT rl_define('g', 'token bucket', 40, '1 minute', shards => 4);
SELECT rl_headers('g', rl_check('g', 'u'))->>'RateLimit-Policy' AS policy;
-- hand-made answers: the rounding at the edges
SELECT rl_headers('api', ROW(true, NULL, 7.999, '00:00:01.000001', NULL, NULL, NULL, NULL, NULL)::rl_result);
SELECT rl_headers('api', ROW(false, '00:00:00', 3, '00:01:00', NULL, NULL, NULL, NULL, NULL)::rl_result);
SELECT rl_headers('api', ROW(true, NULL, 1e300, '-00:00:05', NULL, NULL, NULL, NULL, NULL)::rl_result);

-- a policy name is a structured-field String: '"' and '\' escaped, bytes
-- it cannot hold (control characters, UTF-8) replaced by '_'
SELECT rl_define('say "hi"\', 'token bucket', 1, '1 second');
SELECT rl_headers('say "hi"\', rl_check('say "hi"\', 'u'))->>'RateLimit' AS field;
SELECT rl_define('zähler', 'token bucket', 1, '1 second');
SELECT rl_headers('zähler', rl_check('zähler', 'u'))->>'RateLimit' AS field;

-- as PostgREST reads response.headers: an array of single-key objects
SELECT jsonb_agg(jsonb_build_object(key, value) ORDER BY key)
FROM jsonb_each_text(rl_headers('fw', rl_check('fw', 'u', 50)));

-- errors
SELECT rl_headers('nosuch', ROW(true, NULL, 1, '00:00:01', NULL, NULL, NULL, NULL, NULL)::rl_result);
SELECT rl_headers('api', ROW(true, NULL, 1, '00:00:01', NULL, NULL, NULL, NULL, NULL)::rl_result, rl_token_bucket(1, '1 hour'));
SELECT rl_headers('api', NULL);
SELECT rl_headers(NULL, ROW(true, NULL, 1, '00:00:01', NULL, NULL, NULL, NULL, NULL)::rl_result);
SELECT rl_headers('api', ROW(NULL, NULL, 1, '00:00:01', NULL, NULL, NULL, NULL, NULL)::rl_result);
SELECT rl_headers('api', ROW(true, NULL, NULL, '00:00:01', NULL, NULL, NULL, NULL, NULL)::rl_result);
SELECT rl_headers('api', ROW(true, NULL, 1, NULL, NULL, NULL, NULL, NULL, NULL)::rl_result);

-- less than one token per period: one token per the time it takes, never q=0
SELECT rl_define('half', 'token bucket', 0.5, '1 second');
SELECT rl_headers('half', rl_check('half', 'u', 0.5))->>'RateLimit-Policy' AS policy;

SELECT rl_undefine(name) FROM rl_definitions ORDER BY name;
DELETE FROM rate_limits;
