-- Keys: text, bigint, integer, uuid and NULL; 42 and '42' are one key.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('k', 'token bucket', 100, '1 hour');

SELECT remaining FROM rl_limit('k', 42);
SELECT remaining FROM rl_limit('k', 42::bigint);
SELECT remaining FROM rl_limit('k', '42');
SELECT remaining FROM rl_limit('k', '42'::text);
SELECT remaining FROM rl_limit('k', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid);
SELECT remaining FROM rl_limit('k', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
SELECT remaining FROM rl_limit('k', -9223372036854775808);
SELECT remaining FROM rl_limit('k', 7::smallint);
SELECT key, value FROM rate_limits WHERE name = 'k' ORDER BY key;

-- from columns of every type, as an application calls it
CREATE TABLE users (id_int integer, id_big bigint, id_text text, id_uuid uuid);
INSERT INTO users VALUES (42, 42, '42', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
SELECT (rl_limit('k', id_int)).remaining, (rl_limit('k', id_big)).remaining,
       (rl_limit('k', id_text)).remaining, (rl_limit('k', id_uuid)).remaining
FROM users;
DROP TABLE users;

-- the NULL key is one shared limit, whatever the key type
SELECT remaining FROM rl_limit('k');
SELECT remaining FROM rl_limit('k', NULL);
SELECT remaining FROM rl_limit('k', NULL::bigint);
SELECT remaining FROM rl_limit('k', NULL::uuid);
SELECT remaining FROM rl_limit('k', NULL::integer, 2);
SELECT key = '' AS stored_as_empty, value FROM rate_limits WHERE name = 'k' AND key = '';
SELECT * FROM rl_value('k');
SELECT rl_reset('k', NULL::bigint);
SELECT * FROM rl_value('k');

-- an empty text key would collide with the NULL key: refused
SELECT * FROM rl_limit('k', '');
-- keys with quotes, backslashes, format characters and other planes are data
SELECT remaining FROM rl_limit('k', E'O''Brien \\ %s %n ''); DROP TABLE x; --');
SELECT remaining FROM rl_limit('k', E'\u00e9\u4e2d\U0001F600\U000E0001');
-- one character from each populated plane (0, 1, 2, 3, 14, 15, 16) and
-- binary-looking control characters: stored and found again byte for byte
SELECT remaining FROM rl_limit('k', E'\U00020000\U00030000\U000F0000\U0010FFFD');
SELECT remaining FROM rl_limit('k', E'\U00020000\U00030000\U000F0000\U0010FFFD');
SELECT remaining FROM rl_limit('k', E'\x01\x02\x1b\x7f\t\r\n');
SELECT count(*) AS exact_matches FROM rate_limits
WHERE name = 'k' AND key IN (E'\U00020000\U00030000\U000F0000\U0010FFFD', E'\x01\x02\x1b\x7f\t\r\n');
SELECT key FROM rate_limits WHERE name = 'k' AND key NOT IN ('42', '7', '-9223372036854775808', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') AND key !~ '[\x01-\x1f]' ORDER BY key;
-- names and keys up to their bounds work; past them is an error
SELECT ok FROM rl_limit('k', repeat('x', 1024));
SELECT ok FROM rl_limit('k', repeat('x', 1025));
SELECT ok FROM rl_limit('k', repeat('é', 513));
SELECT ok FROM rl_limit(repeat('n', 256), 'k', config => rl_token_bucket(1, '1 hour'));
SELECT ok FROM rl_limit(repeat('n', 257), 'k', config => rl_token_bucket(1, '1 hour'));
SELECT ok FROM rl_limit('k', repeat('x', 1000000));

SELECT rl_undefine('k');
DELETE FROM rate_limits;
