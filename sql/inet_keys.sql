-- inet keys, prefixes counted as one key, and allow and deny lists per
-- limit (rl_allow, rl_deny, rl_unlist), on both stores (make test runs
-- this file on the direct path and again on the SQL path).
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';

SELECT rl_define('ip', 'token bucket', 3, '1 hour');
SELECT rl_define('ip_m', 'token bucket', 3, '1 hour', storage => 'memory');
SELECT rl_define('net', 'token bucket', 3, '1 hour', ipv4_prefix => 24,
	ipv6_prefix => 64);
SELECT rl_define('net_m', 'token bucket', 3, '1 hour', ipv4_prefix => 24,
	ipv6_prefix => 64, storage => 'memory');
SELECT name, ipv4_prefix, ipv6_prefix FROM rl_definitions
WHERE name IN ('ip', 'net') ORDER BY name;

-- an inet key is stored as its host address, and names the same key as
-- its text form
SELECT ok, remaining FROM rl_limit('ip', '10.1.2.3'::inet);
SELECT ok, remaining FROM rl_limit('ip', '10.1.2.3/32'::inet);
SELECT ok, remaining FROM rl_limit('ip', '10.1.2.3');
SELECT ok, remaining FROM rl_limit('ip', '2001:db8::1'::inet);
SELECT key FROM rate_limits WHERE name = 'ip' ORDER BY key;
SELECT ok, remaining FROM rl_check('ip', '10.1.2.3'::inet);
SELECT value FROM rl_value('ip', '10.1.2.3'::inet);
SELECT value FROM rl_refund('ip', '10.1.2.3'::inet, 1);
SELECT value FROM rl_penalize('ip', '10.1.2.3'::inet, 1);
SELECT rl_reset('ip', '10.1.2.3'::inet);
SELECT key FROM rate_limits WHERE name = 'ip' ORDER BY key;
-- an untyped literal is still a text key
SELECT ok FROM rl_limit('ip', 'not an address');
SELECT key FROM rate_limits WHERE name = 'ip' ORDER BY key;
-- an inet with a netmask is refused: a key is one address
SELECT rl_limit('ip', '10.1.2.0/24'::inet);
SELECT rl_check('ip', '10.1.2.0/24'::inet);
-- the memory store
SELECT ok, remaining FROM rl_limit('ip_m', '10.1.2.3'::inet);
SELECT ok, remaining FROM rl_limit('ip_m', '10.1.2.3');
SELECT value FROM rl_block('ip_m', '10.1.2.3'::inet, '1 minute');
SELECT ok, retry_after FROM rl_limit('ip_m', '10.1.2.3'::inet);

-- a prefix counts a whole network as one key
SELECT ok, remaining FROM rl_limit('net', '10.1.2.3'::inet);
SELECT ok, remaining FROM rl_limit('net', '10.1.2.200'::inet);
SELECT ok, remaining FROM rl_limit('net', '10.1.2.77');
SELECT ok, remaining FROM rl_limit('net', '10.1.2.9'::inet);
SELECT ok, remaining FROM rl_limit('net', '10.1.3.9'::inet);
SELECT ok, remaining FROM rl_limit('net', '2001:db8:0:1::5'::inet);
SELECT ok, remaining FROM rl_limit('net', '2001:db8:0:1:ffff::9'::inet);
SELECT ok, remaining FROM rl_limit('net', '2001:db8:0:2::5'::inet);
SELECT key, value FROM rate_limits WHERE name = 'net' ORDER BY key;
-- text keys that are not an address in PostgreSQL's form are text keys
SELECT ok, remaining FROM rl_limit('net', 'alice');
SELECT ok, remaining FROM rl_limit('net', '010.1.2.3');
SELECT ok, remaining FROM rl_check('net', '10.1.2.1'::inet);
SELECT value FROM rl_value('net', '10.1.2.1'::inet);
SELECT rl_reset('net', '10.1.2.1'::inet);
SELECT ok, remaining FROM rl_check('net', '10.1.2.1'::inet);
SELECT ok, remaining FROM rl_limit('net_m', '10.1.2.3'::inet);
SELECT ok, remaining FROM rl_limit('net_m', '10.1.2.4'::inet);
SELECT ok, remaining FROM rl_limit('net_m', '10.1.2.5');
SELECT ok, remaining FROM rl_limit('net_m', '10.1.2.6'::inet);
SELECT ok, remaining FROM rl_limit('net_m', '10.1.9.6'::inet);
-- prefixes out of range
SELECT rl_define('bad', 'token bucket', 3, '1 hour', ipv4_prefix => 0);
SELECT rl_define('bad', 'token bucket', 3, '1 hour', ipv4_prefix => 33);
SELECT rl_define('bad', 'token bucket', 3, '1 hour', ipv6_prefix => 129);

-- allow and deny lists
SELECT rl_deny('ip', '192.0.2.0/24', note => 'abuse');
SELECT rl_allow('ip', '192.0.2.10');
SELECT rl_deny('ip', '198.51.100.7', expires => '2026-01-01 00:10:00+00');
SELECT rl_allow('ip_m', '2001:db8::/32');
SELECT rl_deny('ip_m', '2001:db8:bad::/48');
SELECT name, net, action, expires_at, note FROM rl_access
ORDER BY name, net, action;
-- denied: refused at once, nothing taken, retry_after NULL (for ever)
SELECT ok, retry_after, remaining, allowed FROM rl_limit('ip', '192.0.2.5'::inet);
SELECT ok, retry_after FROM rl_check('ip', '192.0.2.5'::inet);
SELECT ok, retry_after FROM rl_limit('ip', '192.0.2.5');
SELECT count(*) FROM rate_limits WHERE name = 'ip' AND key = '192.0.2.5';
SELECT rl_limit('ip', '192.0.2.5'::inet, throws => true);
-- the most specific entry wins: one address of the denied network is allowed,
-- granted without consuming
SELECT ok, retry_after, remaining FROM rl_limit('ip', '192.0.2.10'::inet, 2);
SELECT ok, retry_after, remaining FROM rl_limit('ip', '192.0.2.10'::inet, 2);
SELECT ok, remaining FROM rl_check('ip', '192.0.2.10'::inet, 3);
SELECT count(*) FROM rate_limits WHERE name = 'ip' AND key = '192.0.2.10';
-- an expiring deny: retry_after is the time to its expiry
SELECT ok, retry_after, retry_after_ms FROM rl_limit('ip', '198.51.100.7'::inet);
SET ratelimit.now_override = '2026-01-01 00:09:59.5+00';
SELECT ok, retry_after_ms FROM rl_limit('ip', '198.51.100.7'::inet);
SET ratelimit.now_override = '2026-01-01 00:10:00+00';
SELECT ok, remaining FROM rl_limit('ip', '198.51.100.7'::inet);
-- deny wins over allow at the same prefix
SELECT rl_allow('ip', '192.0.2.0/24');
SELECT ok, retry_after FROM rl_limit('ip', '192.0.2.5'::inet);
SELECT rl_unlist('ip', '192.0.2.0/24');
SELECT ok, remaining FROM rl_limit('ip', '192.0.2.5'::inet);
SELECT rl_unlist('ip', '192.0.2.0/24');
-- a key of another limit, or not an address, is not listed
SELECT ok, remaining FROM rl_limit('net', '192.0.2.5'::inet);
SELECT ok FROM rl_limit('ip', 'somebody');
-- the memory store, IPv6
SELECT ok, retry_after, remaining FROM rl_limit('ip_m', '2001:db8:bad::1'::inet);
SELECT ok, remaining FROM rl_limit('ip_m', '2001:db8:1::1'::inet, 3);
SELECT ok, remaining FROM rl_limit('ip_m', '2001:db8:1::1'::inet, 3);
SELECT ok, remaining FROM rl_limit('ip_m', '2001:db9::1'::inet, 3);
-- a prefix limit checks the caller's own address, then counts its network
SELECT rl_deny('net', '10.1.2.66');
SELECT ok, retry_after FROM rl_limit('net', '10.1.2.66'::inet);
SELECT ok, remaining FROM rl_limit('net', '10.1.2.67'::inet);

-- rl_limit_all: a denied member refuses the whole call; an allowed one
-- takes nothing
SELECT rl_deny('ip', '192.0.2.0/24');
SELECT rl_reset('ip', '192.0.2.99'::inet);
SELECT ok, refused_name, refused_key, retry_after FROM rl_limit_all(
	ARRAY['ip', 'net'], ARRAY['192.0.2.99', '10.7.7.7'], ARRAY[1, 1]::float8[]);
SELECT count(*) FROM rate_limits WHERE key IN ('10.7.7.0/24', '192.0.2.99');
SELECT ok, refused_name FROM rl_limit_all(
	ARRAY['ip', 'net'], ARRAY['192.0.2.10', '10.7.7.7'], ARRAY[3, 1]::float8[]);
SELECT key, value FROM rate_limits WHERE key IN ('10.7.7.0/24', '192.0.2.10');

-- rl_enforce on an inet column
CREATE TABLE logins (addr inet NOT NULL);
CREATE TRIGGER logins_limit BEFORE INSERT ON logins
	FOR EACH ROW EXECUTE FUNCTION rl_enforce('ip', 'addr');
INSERT INTO logins VALUES ('203.0.113.1');
INSERT INTO logins VALUES ('192.0.2.10');
INSERT INTO logins VALUES ('192.0.2.11');
SELECT key, value FROM rate_limits WHERE name = 'ip' AND key LIKE '203.%';

-- statistics count a denial as a refusal
SELECT rl_stats_reset('ip');
SELECT ok FROM rl_limit('ip', '192.0.2.1'::inet);
SELECT granted, refused FROM rl_stats
WHERE datname = current_database() AND name = 'ip';

-- bad input changes nothing
SELECT rl_deny('nosuch', '10.0.0.0/8');
SELECT rl_deny('ip', NULL);
SELECT rl_deny('ip', '10.0.0.1', expires => '-infinity');
SELECT rl_unlist('ip', '10.99.0.0/16');
-- rl_undefine drops the limit's lists
SELECT rl_undefine('ip_m');
SELECT count(*) FROM rl_access WHERE name = 'ip_m';
DROP TABLE logins;
