-- One address in any spelling is one key on a name that treats addresses
-- as addresses (a prefix or lists): an IPv4-mapped IPv6 address counts as
-- its IPv4 address, a text key inet reads as one host is that host, and a
-- text key inet reads as a network is refused.  On both stores (make test
-- runs this file on the direct path and again on the SQL path).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

SELECT rl_define('f_net', 'token bucket', 2, '1 hour', ipv4_prefix => 24);
SELECT rl_define('f_net_m', 'token bucket', 2, '1 hour', ipv4_prefix => 24,
	storage => 'memory');
SELECT rl_define('f_net64', 'token bucket', 2, '1 hour', ipv4_prefix => 24,
	ipv6_prefix => 64);
SELECT rl_define('f_ip', 'token bucket', 2, '1 hour');
SELECT rl_define('f_ip_m', 'token bucket', 2, '1 hour', storage => 'memory');
SELECT rl_define('f_net6', 'token bucket', 1, '1 hour', ipv6_prefix => 64);
SELECT rl_define('f_net6_m', 'token bucket', 1, '1 hour', ipv6_prefix => 64,
	storage => 'memory');
SELECT rl_define('f_plain', 'token bucket', 2, '1 hour');

-- an IPv4-mapped address counts in its IPv4 network
SELECT ok FROM rl_limit('f_net', '10.1.2.3'::inet);
SELECT ok FROM rl_limit('f_net', '10.1.2.4'::inet);
SELECT ok FROM rl_limit('f_net', '::ffff:10.1.2.5'::inet);
SELECT ok FROM rl_limit('f_net', '::ffff:10.1.2.6');
SELECT ok FROM rl_check('f_net', '::ffff:10.1.2.6'::inet);
SELECT key FROM rate_limits WHERE name = 'f_net' ORDER BY key;
SELECT ok FROM rl_limit('f_net_m', '10.1.2.3'::inet);
SELECT ok FROM rl_limit('f_net_m', '10.1.2.4'::inet);
SELECT ok FROM rl_limit('f_net_m', '::ffff:10.1.2.5'::inet);
SELECT ok FROM rl_limit('f_net_m', '::FFFF:10.1.2.6');
-- and not in '::/64' under ipv6_prefix
SELECT ok FROM rl_limit('f_net64', '::ffff:10.1.2.3'::inet);
SELECT ok FROM rl_limit('f_net64', '::ffff:192.0.2.1'::inet);
SELECT ok FROM rl_limit('f_net64', '::ffff:198.51.100.1'::inet);
SELECT key FROM rate_limits WHERE name = 'f_net64' ORDER BY key;
-- an inet key is stored as the IPv4 address on every name
SELECT ok FROM rl_limit('f_plain', '::ffff:10.1.2.3'::inet);
SELECT ok FROM rl_limit('f_plain', '10.1.2.3'::inet);
SELECT ok FROM rl_limit('f_plain', '10.1.2.3'::inet);
SELECT key FROM rate_limits WHERE name = 'f_plain' ORDER BY key;

-- the deny lists judge the IPv4 address of a mapped one
SELECT rl_deny('f_ip', '10.9.0.0/16');
SELECT rl_deny('f_ip_m', '10.9.0.0/16');
SELECT ok FROM rl_limit('f_ip', '10.9.1.1'::inet);
SELECT ok FROM rl_limit('f_ip', '::ffff:10.9.1.1'::inet);
SELECT ok FROM rl_limit('f_ip', '::ffff:10.9.1.1');
SELECT ok FROM rl_check('f_ip', '::ffff:10.9.1.1'::inet);
SELECT ok FROM rl_limit('f_ip_m', '::ffff:10.9.1.1'::inet);
SELECT rl_limit('f_ip', '::ffff:10.9.1.1'::inet, throws => true);
-- a deny written in the mapped form denies the IPv4 network
SELECT rl_deny('f_ip', '::ffff:10.8.0.0/112');
SELECT net FROM rl_access WHERE name = 'f_ip' ORDER BY net;
SELECT ok FROM rl_limit('f_ip', '10.8.1.1'::inet);
SELECT ok FROM rl_limit('f_ip', '::ffff:10.8.1.2'::inet);
SELECT rl_unlist('f_ip', '::ffff:10.8.0.0/112');
SELECT net FROM rl_access WHERE name = 'f_ip' ORDER BY net;

-- a text key in any spelling of one host is that host
SELECT rl_deny('f_net6', '2001:db8:bad::/48');
SELECT rl_deny('f_net6_m', '2001:db8:bad::/48');
SELECT ok FROM rl_limit('f_net6', '2001:db8:1::1');
SELECT ok FROM rl_limit('f_net6', '2001:db8:1::2');
SELECT ok FROM rl_limit('f_net6', '2001:DB8:1::2');
SELECT ok FROM rl_limit('f_net6', '2001:db8:1:0::3');
SELECT ok FROM rl_limit('f_net6', '2001:db8:1::4/128');
SELECT ok FROM rl_limit('f_net6', '2001:db8:bad::1');
SELECT ok FROM rl_limit('f_net6', '2001:DB8:BAD::1');
SELECT ok FROM rl_check('f_net6', '2001:DB8:BAD::1');
SELECT key FROM rate_limits WHERE name = 'f_net6' ORDER BY key;
SELECT ok FROM rl_limit('f_net6_m', '2001:db8:1::1');
SELECT ok FROM rl_limit('f_net6_m', '2001:DB8:1::2');
SELECT ok FROM rl_limit('f_net6_m', '2001:DB8:BAD::1');
SELECT ok FROM rl_limit('f_net', '10.1.2.7/32');
SELECT ok FROM rl_limit('f_net', '010.001.002.008');
SELECT ok FROM rl_limit('f_ip', '010.009.1.1');
-- on a name without a prefix or lists a text key is text
SELECT ok FROM rl_limit('f_plain', '::ffff:10.1.2.3');
SELECT ok FROM rl_limit('f_plain', '10.1.2.3/32');
SELECT key FROM rate_limits WHERE name = 'f_plain' ORDER BY key;

-- rl_limit_all: the two forms of one client are one key
SELECT rl_reset('f_net', '10.1.4.1'::inet);
SELECT ok FROM rl_limit('f_net', '10.1.4.1'::inet, 2);
SELECT ok FROM rl_limit_all(ARRAY['f_net', 'f_ip'],
	ARRAY['::ffff:10.1.4.9', '10.1.4.9'], ARRAY[1, 1]::float8[]);
SELECT ok FROM rl_limit_all(ARRAY['f_ip', 'f_ip'],
	ARRAY['::ffff:10.9.4.9', '10.2.4.9'], ARRAY[1, 1]::float8[]);
SELECT ok, remaining FROM rl_limit_all(ARRAY['f_net', 'f_net'],
	ARRAY['10.1.5.1', '::ffff:10.1.5.2'], ARRAY[1, 1]::float8[]);

-- a text key that is a network is refused, and changes nothing
SELECT * FROM code_of($$SELECT rl_limit('f_net', '10.1.3.0/24')$$);
SELECT rl_limit('f_net', '10.1.3.0/24');
SELECT rl_check('f_net', '10.1.3.0/24');
SELECT rl_value('f_net', '10.1.3.0/24');
SELECT rl_refund('f_net', '10.1.3.0/24', 1);
SELECT rl_reset('f_net', '10.1.3.0/24');
SELECT rl_limit('f_net', '10.1.3.5/24');
SELECT rl_limit('f_ip', '10.1.3.0/24');
SELECT rl_limit('f_net_m', '10.1.3.0/24');
SELECT rl_limit('f_net6', '2001:db8:1::/64');
SELECT rl_limit_all(ARRAY['f_net', 'f_ip'], ARRAY['10.1.3.0/24', '10.2.3.1'],
	ARRAY[1, 1]::float8[]);
SELECT count(*) FROM rate_limits
WHERE name LIKE 'f\_%' AND (key LIKE '10.1.3.%' OR key = '10.2.3.1');
SELECT ok FROM rl_limit('f_net', '10.1.3.1'::inet);
-- but is a text key on a name without a prefix or lists
SELECT ok FROM rl_limit('f_plain', '10.1.3.0/24');
