# Scale-out with PL/Proxy: one proxy and four partition servers, each
# partition with ratelimit, the proxy with router/ratelimit_router.sql.
# Keys spread over every partition, per-key limits hold exactly through
# the router, definitions and overrides reach every partition, a key's
# override, sliding window and wait act on its partition, and a stopped
# partition fails its keys' calls with an error while the others keep
# serving.
use strict;
use warnings;

use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use RatelimitRouter qw(configure_router);
use RatelimitExtensions qw(require_extension);
use Test::More;

require_extension('plproxy');

my $nparts = 4;

my @parts;
for my $i (0 .. $nparts - 1)
{
	my $node = PostgreSQL::Test::Cluster->new("part$i");
	$node->init;
	# a pinned clock: no token flows back while the test counts
	$node->append_conf('postgresql.conf', q{
ratelimit.now_override = '2026-01-01 00:00:00+00'
shared_preload_libraries = 'ratelimit'
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION ratelimit');
	push @parts, $node;
}
my $proxy = PostgreSQL::Test::Cluster->new('proxy');
$proxy->init;
$proxy->start;

# A query's output, or its error: a function the router lacks fails its
# own check, not the whole test.
sub query
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql);
	return $ret == 0 ? $out : "ERROR: $err";
}

# The partition rl_route sends (name, key) to.
sub home
{
	my ($name, $key) = @_;
	return $proxy->safe_psql('postgres',
		"SELECT rl_route('$name', '$key') & ($nparts - 1)");
}

# What $sql answers on each partition, joined by ' | '.
sub on_each
{
	my ($sql) = @_;
	return join(' | ', map { $_->safe_psql('postgres', $sql) } @parts);
}

# What on_each answers when only partition $home holds $there.
sub only_on
{
	my ($home, $there, $elsewhere) = @_;
	return join(' | ', map { $_ == $home ? $there : $elsewhere } 0 .. $nparts - 1);
}

my ($ret, $err) = configure_router($proxy, \@parts);
is($ret, 0, 'the router script runs on the proxy') or diag($err);

# Definitions go to every partition.
is($proxy->safe_psql('postgres', q{
	SELECT count(*) FROM rl_define('api', 'token bucket', 5, '1 day')}),
	$nparts, 'rl_define answers once per partition');
$proxy->safe_psql('postgres', q{
	SELECT rl_define('hot', 'token bucket', 100, '1 day')});
for my $i (0 .. $nparts - 1)
{
	is($parts[$i]->safe_psql('postgres',
			q{SELECT string_agg(name || ':' || rate || '/' || period, ' ' ORDER BY name) FROM rl_definitions}),
		'api:5/1 day hot:100/1 day', "partition $i has both definitions");
}

# 200 keys, 8 calls each through the router: exactly 5 granted per key.
my $granted = $proxy->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE (r).ok), count(DISTINCT key) FILTER (WHERE (r).ok)
	FROM (SELECT key, rl_limit('api', key) AS r
	      FROM generate_series(1, 200) AS key, generate_series(1, 8) AS call
	      ORDER BY call, key) s});
is($granted, '1000|200', 'exactly 5 of 8 calls granted for each of 200 keys');
is($proxy->safe_psql('postgres', q{
	SELECT count(*) FROM generate_series(1, 200) AS key
	WHERE (rl_check('api', key)).ok OR (rl_value('api', key)).value <> 0}),
	'0', 'rl_check and rl_value through the router see every key empty');

# Keys spread over all partitions, each key on exactly one, the one
# rl_route names (PL/Proxy takes the hash modulo the partition count).
my $total = 0;
for my $i (0 .. $nparts - 1)
{
	my $keys = $parts[$i]->safe_psql('postgres',
		q{SELECT string_agg(key, ',' ORDER BY key::int) FROM rate_limits WHERE name = 'api'});
	my $expected = $proxy->safe_psql('postgres',
		qq{SELECT string_agg(key::text, ',' ORDER BY key) FROM generate_series(1, 200) AS key
		   WHERE rl_route('api', key::text) & ($nparts - 1) = $i});
	my @held = split(/,/, $keys);
	my $n = scalar @held;
	ok($n > 20, "partition $i holds $n of the 200 keys");
	is($keys, $expected, "partition $i holds exactly the keys rl_route sends it");
	$total += $n;
}
is($total, 200, 'no key is stored twice');

# One hot key, 4 clients racing through the router: exactly its 100 tokens.
$proxy->safe_psql('postgres', 'CREATE TABLE grants (n int)');
$proxy->pgbench(
	'--no-vacuum --client=4 --transactions=50',
	0, [qr{processed: 200/200}], [qr{^$}],
	'4 clients race through the router on one key',
	{ 'hot' => q{INSERT INTO grants SELECT 1 WHERE (rl_limit('hot', 'k')).ok;} });
is($proxy->safe_psql('postgres', 'SELECT count(*) FROM grants'), '100',
	'exactly 100 grants for a capacity of 100');

# The transaction contract: the partition commits at once.
$proxy->safe_psql('postgres', q{
	BEGIN; SELECT rl_limit('api', 'rollback', 2); ROLLBACK;});
is($proxy->safe_psql('postgres', q{SELECT value FROM rl_value('api', 'rollback')}),
	'3', 'a rollback on the proxy does not return the tokens');

# Inline policies and the NULL key route too.
is($proxy->safe_psql('postgres', q{
	SELECT (rl_limit('inline', NULL, 2, config => rl_fixed_window(3, '1 hour'))).remaining}),
	'1', 'an inline policy and the NULL key work through the router');

# Memory limits route too: named, and inline (the policy's every column
# goes through), each key's state on its partition.
is($proxy->safe_psql('postgres', q{
	SELECT count(*) FROM rl_define('mem', 'token bucket', 2, '1 day', storage => 'memory')}),
	$nparts, 'a memory limit is defined on every partition');
is($proxy->safe_psql('postgres', q{
	SELECT ok FROM rl_limit('mem', 'k');
	SELECT ok FROM rl_limit('mem', 'k');
	SELECT ok FROM rl_limit('mem', 'k');}),
	"t\nt\nf", 'a memory limit through the router: its capacity exactly');
is($proxy->safe_psql('postgres', q{
	SELECT (rl_limit('inline_mem', 'k', 2,
		config => rl_token_bucket(3, '1 hour', storage => 'memory'))).remaining}),
	'1', 'an inline memory policy works through the router');
my $home = $proxy->safe_psql('postgres',
	"SELECT rl_route('mem', 'k') & ($nparts - 1)");
is( join(' ',
		map { $_->safe_psql('postgres', 'SELECT memory_keys FROM rl_stats_info') }
		  @parts),
	join(' ', map { $_ == $home ? 2 : 0 } 0 .. $nparts - 1),
	'the memory state of key k is on its partition only');

# Per-key overrides go to every partition; the key's own partition
# applies it.
is(query($proxy, q{SELECT count(*) FROM rl_override('api', 'vip', 8)}),
	$nparts, 'rl_override answers once per partition');
is(on_each(q{SELECT string_agg(name || ':' || key || ':' || rate || '/' || capacity, ' ') FROM rl_overrides}),
	join(' | ', ('api:vip:8/8') x $nparts), 'every partition has the override');
is(query($proxy, q{
	SELECT count(*) FILTER (WHERE (rl_limit('api', 'vip')).ok) FROM generate_series(1, 10)}),
	'8', 'the overridden key is granted its own capacity of 8 through the router');
my $vip = home('api', 'vip');
is(on_each(q{SELECT coalesce(string_agg(capacity || ':' || value, ','), '-') FROM rl_status WHERE name = 'api' AND key = 'vip'}),
	only_on($vip, '8:0', '-'), 'the overridden key is counted on its partition only');
is(query($proxy, q{SELECT count(*) FILTER (WHERE r) FROM rl_unoverride('api', 'vip') r}),
	$nparts, 'rl_unoverride answers true once per partition');
is(on_each('SELECT count(*) FROM rl_overrides'),
	join(' | ', ('0') x $nparts), 'no partition keeps the override');
is(on_each(q{SELECT coalesce(string_agg(capacity || ':' || value, ','), '-') FROM rl_status WHERE name = 'api' AND key = 'vip'}),
	only_on($vip, '5:0', '5:5'),
	'the key follows the definition again, state kept (the move writes a full row where the key never counted)');
is(query($proxy, q{SELECT count(*) FILTER (WHERE NOT r) FROM rl_unoverride('api', 'vip') r}),
	$nparts, 'a second rl_unoverride answers false once per partition');

# A key's own time zone on a calendar limit reaches every partition too.
query($proxy, q{SELECT count(*) FROM rl_define('daily', 'fixed window', 10, '1 day', time_zone => 'UTC')});
is(query($proxy, q{SELECT count(*) FROM rl_override('daily', 'cust', 10, time_zone => 'Asia/Tokyo')}),
	$nparts, 'rl_override with a time zone answers once per partition');
is(on_each(q{SELECT string_agg(key || ':' || time_zone, ' ') FROM rl_overrides WHERE name = 'daily'}),
	join(' | ', ('cust:Asia/Tokyo') x $nparts), 'every partition has the key\'s zone');
query($proxy, q{SELECT count(*) FROM rl_undefine('daily')});

# Sliding windows: the constructor is the extension's, and the window
# counts on the key's partition.
is(query($proxy, q{SELECT rl_sliding_window(3, '1 hour', '2026-01-01', 'memory')}),
	$parts[0]->safe_psql('postgres', q{SELECT rl_sliding_window(3, '1 hour', '2026-01-01', 'memory')}),
	"rl_sliding_window through the router is the extension's");
is(query($proxy, q{
	SELECT ok FROM rl_limit('slide', 'k', config => rl_sliding_window(3, '1 hour'));
	SELECT ok FROM rl_limit('slide', 'k', config => rl_sliding_window(3, '1 hour'));
	SELECT ok FROM rl_limit('slide', 'k', config => rl_sliding_window(3, '1 hour'));
	SELECT ok FROM rl_limit('slide', 'k', config => rl_sliding_window(3, '1 hour'));}),
	"t\nt\nt\nf", 'an inline sliding window through the router: its rate exactly');
is(on_each(q{SELECT coalesce(string_agg(kind || ':' || value, ','), '-') FROM rl_status WHERE name = 'slide'}),
	only_on(home('slide', 'k'), 'sliding window:0', '-'),
	'the sliding window of key k is on its partition only');

# The router's answers are the extension's: every rl_result column of a
# call sequence through the router (a partial grant and a settlement
# among them) equals that of the same sequence called on the key's
# partition directly, for a table and a memory limit.
for my $storage ('table', 'memory')
{
	my $name = "cols_$storage";
	$proxy->safe_psql('postgres', qq{
		SELECT count(*) FROM rl_define('$name', 'token bucket', 5, '1 day', storage => '$storage')});
	my $calls = sub {
		my ($key) = @_;
		return qq{
			SELECT * FROM rl_limit('$name', '$key', 2);
			SELECT * FROM rl_limit('$name', '$key', 4);
			SELECT * FROM rl_check('$name', '$key', 3);
			SELECT * FROM rl_limit('$name', '$key', 4, partial => true);
			SELECT * FROM rl_limit('$name', '$key');
			SELECT * FROM rl_settle('$name', '$key', 3, 1);
			SELECT * FROM rl_limit('$name', '$key', 3, partial => true);
			SELECT * FROM rl_value('$name', '$key');};
	};
	my $routed = query($proxy, $calls->('k'));
	my $part = $parts[ home($name, 'k') ];
	my $direct = $part->safe_psql('postgres', $calls->('direct'));
	is($routed, $direct,
		"$storage: every column of rl_limit, rl_check (partial grants) and rl_settle through the router is the partition's");
	like($routed, qr/^t\|\|3\|09:36:00\|5\|t\|\|34560000\|2$/m,
		"$storage: the router's answers carry rl_result's nine columns");
	is(on_each(qq{SELECT value FROM rl_value('$name', 'k')}),
		only_on(home($name, 'k'), '0', '5'),
		"$storage: the partial grants and the settlement act on the key's partition only");
}
is(query($proxy, q{
	SELECT * FROM rl_settle('inline_settle', 7, 1, 3, rl_token_bucket(5, '1 day'))}),
	$parts[ home('inline_settle', '7') ]->safe_psql('postgres', q{
	SELECT * FROM rl_settle('inline_settle', 'seven', 1, 3, rl_token_bucket(5, '1 day'))}),
	'rl_settle with an integer key and an inline policy through the router');
like(query($proxy, q{
	SELECT * FROM rl_limit('cols_table', 'k', 2, reserve => true, partial => true)}),
	qr/^ERROR: .*partial and reserve cannot be combined/s,
	"a partial call with reserve fails through the router, with the partition's error");

# rl_define takes the extension's max_debt: a settlement through the
# router goes below zero down to it, as on the partition.  A prefix is
# refused: the router would spread one network over partitions.
is(query($proxy, q{
	SELECT count(*) FROM rl_define('debt', 'token bucket', 5, '1 day', max_debt => 10)}),
	$nparts, 'rl_define with max_debt answers once per partition');
is(on_each(q{SELECT max_debt FROM rl_definitions WHERE name = 'debt'}),
	join(' | ', ('10') x $nparts), 'every partition has the max_debt');
my $debt_calls = sub {
	my ($key) = @_;
	return qq{
		SELECT * FROM rl_limit('debt', '$key', 4);
		SELECT * FROM rl_settle('debt', '$key', 4, 12);
		SELECT * FROM rl_settle('debt', '$key', 1, 5);
		SELECT * FROM rl_limit('debt', '$key');};
};
is(query($proxy, $debt_calls->('k')),
	$parts[ home('debt', 'k') ]->safe_psql('postgres', $debt_calls->('direct')),
	'a settlement into debt through the router answers as on the partition');
like(query($proxy, q{SELECT unsettled FROM rl_settle('debt', 'k', 0, 3)}),
	qr/^3$/, 'at -max_debt, the whole charge is unsettled through the router');
like(query($proxy, q{
	SELECT count(*) FROM rl_define('net24', 'token bucket', 5, '1 day', ipv4_prefix => 24)}),
	qr/^ERROR: .*ipv4_prefix/s, 'rl_define with ipv4_prefix is refused through the router');
is(on_each(q{SELECT count(*) FROM rl_definitions WHERE name = 'net24'}),
	join(' | ', ('0') x $nparts), 'and no partition has the definition');

# inet keys route by the text the extension stores them as, the host
# address: an inet key and the same address as text are one key, on one
# partition, and the addresses spread over the partitions.
$proxy->safe_psql('postgres', q{
	SELECT count(*) FROM rl_define('net', 'token bucket', 3, '1 day')});
is(query($proxy, q{
	SELECT ok FROM rl_limit('net', '10.1.2.3'::inet);
	SELECT ok FROM rl_limit('net', '10.1.2.3'::text);
	SELECT ok FROM rl_limit('net', '10.1.2.3'::inet);
	SELECT ok FROM rl_limit('net', '10.1.2.3'::text);
	SELECT ok FROM rl_check('net', '10.1.2.3'::inet);}),
	"t\nt\nt\nf\nf", 'an inet key and its text are one key through the router');
is(on_each(q{SELECT value FROM rl_value('net', '10.1.2.3')}),
	only_on(home('net', '10.1.2.3'), '0', '3'),
	'the inet key is counted on its partition only');
is(query($proxy, q{
	SELECT * FROM rl_settle('net', '10.1.2.3'::inet, 3, 1);
	SELECT value FROM rl_value('net', '10.1.2.3'::inet);
	SELECT rl_reset('net', '10.1.2.3'::inet);
	SELECT value FROM rl_value('net', '10.1.2.3'::inet);
	SELECT granted FROM rl_limit('net', '2001:db8::1'::inet, 5, partial => true);
	SELECT ok FROM rl_check('net', '2001:db8::1');}),
	"2|2026-01-01 00:00:00+00|0\n2\n\n3\n3\nf",
	'rl_settle, rl_value, rl_reset and a partial rl_limit take an inet key through the router');
is(on_each(q{SELECT coalesce(string_agg(key, ','), '-') FROM rl_status WHERE name = 'net'}),
	only_on(home('net', '2001:db8::1'), '2001:db8::1', '-'),
	'an IPv6 key is stored as its text on the partition its text routes to');
query($proxy, q{
	SELECT count(*) FILTER (WHERE (rl_limit('net', ('10.0.0.' || i)::inet)).ok)
	FROM generate_series(1, 64) i});
my @held = map { $_->safe_psql('postgres',
		q{SELECT count(*) FROM rate_limits WHERE name = 'net' AND key LIKE '10.0.0.%'}) } @parts;
is(join(' ', @held), join(' ', map { my $i = $_; $proxy->safe_psql('postgres', qq{
		SELECT count(*) FROM generate_series(1, 64) i
		WHERE rl_route('net', '10.0.0.' || i) & ($nparts - 1) = $i}) } 0 .. $nparts - 1),
	'64 inet keys are stored where their text routes');
ok((grep { $_ > 0 } @held) == $nparts, 'and spread over every partition: ' . join(' ', @held));
like(query($proxy, q{SELECT ok FROM rl_limit('net', '10.1.2.0/24'::inet)}),
	qr/^ERROR: .*an inet rate limit key must be a host address/s,
	"an inet with a netmask fails through the router, with the partition's error");

# Allow and deny lists go to every partition, as definitions do: an
# address's own partition judges it.
is(query($proxy, q{
	SELECT count(*) FROM rl_deny('net', '10.9.0.0/16', note => 'abuse');
	SELECT count(*) FROM rl_allow('net', '10.8.0.0/16');}),
	"$nparts\n$nparts", 'rl_deny and rl_allow answer once per partition');
is(on_each(q{SELECT string_agg(net || ':' || action, ' ' ORDER BY net) FROM rl_access WHERE name = 'net'}),
	join(' | ', ('10.8.0.0/16:allow 10.9.0.0/16:deny') x $nparts),
	'every partition has both entries');
is(query($proxy, q{
	SELECT count(*) FILTER (WHERE (rl_limit('net', ('10.9.' || i || '.1')::inet)).ok),
	       count(*) FILTER (WHERE (rl_limit('net', ('10.8.' || i % 4 || '.1')::inet)).ok)
	FROM generate_series(1, 16) i}),
	'0|16', 'denied addresses are refused, and allowed ones granted without consuming, on every partition');
is(query($proxy, q{
	SELECT count(*) FILTER (WHERE r) FROM rl_unlist('net', '10.9.0.0/16') r;
	SELECT count(*) FILTER (WHERE NOT r) FROM rl_unlist('net', '10.7.0.0/16') r;}),
	"$nparts\n$nparts", 'rl_unlist answers once per partition, false where the entry was not');

# rl_reset takes the extension's config: the state of a key under an
# inline policy.
is(query($proxy, q{
	SELECT rl_reset('inline_mem', 'k', rl_token_bucket(3, '1 hour', storage => 'memory'));
	SELECT value FROM rl_value('inline_mem', 'k', rl_token_bucket(3, '1 hour', storage => 'memory'));}),
	"\n3", 'rl_reset with an inline config through the router');

# Fail closed: stop a partition; its keys' calls fail, the rest go on.
my $victim = 2;
my ($down_key, $up_key, $fresh_key) = split(/\|/, $proxy->safe_psql('postgres', qq{
	SELECT (SELECT min(key) FROM generate_series(1, 200) key WHERE rl_route('api', key::text) & 3 = $victim),
	       (SELECT min(key) FROM generate_series(1, 200) key WHERE rl_route('api', key::text) & 3 <> $victim),
	       (SELECT min(key) FROM generate_series(1001, 1200) key WHERE rl_route('api', key::text) & 3 <> $victim)}));
$parts[$victim]->stop;
my $out;
($ret, $out, $err) = $proxy->psql('postgres', qq{SELECT ok FROM rl_limit('api', $down_key)});
isnt($ret, 0, "a call for a key on the stopped partition fails");
like($err, qr/ERROR/, "with an error, not an answer");
note("the error: $err");
($ret, $out, $err) = $proxy->psql('postgres', qq{SELECT ok FROM rl_check('api', $down_key)});
isnt($ret, 0, 'rl_check for that key fails too');
is($proxy->safe_psql('postgres', qq{SELECT ok FROM rl_check('api', $up_key)}),
	'f', 'a key on a running partition is still served (and still refused)');
is($proxy->safe_psql('postgres', qq{SELECT ok FROM rl_limit('api', $fresh_key)}),
	't', 'and a new key on a running partition is granted');
$parts[$victim]->start;
is($proxy->safe_psql('postgres', qq{SELECT ok FROM rl_check('api', $down_key)}),
	'f', 'once the partition is back, its keys are served again, state intact');

# rl_limit's wait goes through: on the real clock, a call for an empty key
# sleeps on the key's partition until its token is back.
for my $part (@parts)
{
	$part->safe_psql('postgres',
		q{ALTER SYSTEM SET ratelimit.now_override = ''; SELECT pg_reload_conf()});
	$part->poll_query_until('postgres',
		q{SELECT current_setting('ratelimit.now_override') = ''})
	  or die 'the clock stays pinned';
}
$proxy->safe_psql('postgres',
	q{SELECT count(*) FROM rl_define('slow', 'token bucket', 1, '3 seconds')});
is(query($proxy, q{
	SELECT ok FROM rl_limit('slow', 'k');
	SELECT ok FROM rl_limit('slow', 'k');
	SELECT ok, clock_timestamp() - statement_timestamp() > '0.5 seconds'
	FROM rl_limit('slow', 'k', wait => '30 seconds');}),
	"t\nf\nt|t", 'a call with a wait sleeps until granted, through the router');
is(on_each(q{SELECT coalesce(string_agg(calls || ':' || granted, ','), '-') FROM rl_stats WHERE name = 'slow'}),
	only_on(home('slow', 'k'), '3:2', '-'),
	"the key's partition counted the three calls, two granted");

$_->stop for (@parts, $proxy);
done_testing();
