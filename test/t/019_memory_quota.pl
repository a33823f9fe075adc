# The memory store's per-database bound: with ratelimit.memory_max_keys =
# 128 and ratelimit.memory_max_keys_per_database = 100, a database holding
# 100 keys none of which is idle gets 53400 for a new key (the detail
# names the bound) while another database still gets entries; the bound
# is kept across a clean restart (restored entries count) and follows a
# reload; rl_memory_forget makes room.  A role given ratelimit.inline_memory
# with ALTER ROLE may use inline memory configs, one without may not.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $t0 = "SET ratelimit.now_override = '2030-01-01 00:00:00+00';";
my $keys = q{SELECT memory_keys FROM rl_stats_info};

my $node = PostgreSQL::Test::Cluster->new('mem_quota');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ratelimit'
ratelimit.memory_max_keys = 128
ratelimit.memory_max_keys_per_database = 100
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE other');
for my $db ('postgres', 'other')
{
	# 1 a century: no key taken from is idle for a long time
	$node->safe_psql($db, q{
		CREATE EXTENSION ratelimit;
		SELECT rl_define('f', 'token bucket', 1, '100 years', storage => 'memory');
	});
}

# A call expected to fail: its SQLSTATE, message and detail.
sub error_of
{
	my ($db, $sql) = @_;
	my ($ret, $out, $err) =
	  $node->psql($db, "\\set VERBOSITY verbose\n$sql");
	return $err =~ /ERROR:  (\w{5}): ([^\n]*)\n(?:DETAIL:  ([^\n]*))?/
	  ? "$1 $2" . (defined $3 ? " / $3" : '')
	  : "no error: $out";
}

is( $node->safe_psql('postgres',
		"$t0 SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 100) AS i,"
		  . " rl_limit('f', i::text)"),
	'100', 'postgres: 100 new keys granted');
is(error_of('postgres', "$t0 SELECT rl_limit('f', 'new')"),
	'53400 the ratelimit memory store is full for this database / '
	  . 'This database holds 100 keys of the memory store, none of them idle; ratelimit.memory_max_keys_per_database is 100.',
	'postgres at its bound: a new key raises 53400 naming the bound');
is($node->safe_psql('postgres', $keys), '100', 'and no key was dropped');
is($node->safe_psql('postgres', "$t0 SELECT ok FROM rl_limit('f', '1')"),
	'f', 'an existing key still works (drained)');
is($node->safe_psql('other', "$t0 SELECT ok FROM rl_limit('f', 'x')"),
	't', 'another database still gets a new key');
is($node->safe_psql('postgres', $keys), '101', 'the store holds 101 keys');

# the bound follows a reload
$node->append_conf('postgresql.conf', 'ratelimit.memory_max_keys_per_database = 110');
$node->reload;
is($node->safe_psql('postgres', "$t0 SELECT ok FROM rl_limit('f', 'new')"),
	't', 'raised by a reload: postgres gets a new key again');
$node->append_conf('postgresql.conf', 'ratelimit.memory_max_keys_per_database = 100');
$node->reload;

# a clean restart restores the entries, and they count
$node->restart;
is($node->safe_psql('postgres', $keys), '102', 'the entries are restored');
is(error_of('postgres', "$t0 SELECT rl_limit('f', 'after')"),
	'53400 the ratelimit memory store is full for this database / '
	  . 'This database holds 101 keys of the memory store, none of them idle; ratelimit.memory_max_keys_per_database is 100.',
	'after the restart postgres is still over its bound');
is($node->safe_psql('other', "$t0 SELECT ok FROM rl_limit('f', 'y')"),
	't', 'and other still gets a new key');

# an administrator clears the database's entries
is($node->safe_psql('postgres', 'SELECT rl_memory_forget(inline_only => false)'),
	'101', 'rl_memory_forget drops the 101 entries of postgres');
is($node->safe_psql('postgres', $keys), '2', 'the two of other are left');
is($node->safe_psql('postgres', "$t0 SELECT ok FROM rl_limit('f', 'after')"),
	't', 'postgres gets new keys again');

# inline memory configs: a role with only CONNECT, then with the setting
# given by ALTER ROLE (read at login)
my $inline = q{config => rl_token_bucket(1, '100 years', storage => 'memory')};
$node->safe_psql('postgres', 'CREATE ROLE app LOGIN');
is( error_of('postgres',
		"SET ROLE app; SELECT rl_limit('i', 'k', $inline)"),
	'42501 permission denied to use an inline config with storage "memory" / '
	  . 'The memory store is shared by every database of the server.',
	'an inline memory config without ratelimit.inline_memory: 42501');
is( $node->psql('postgres', "SET ratelimit.inline_memory = on",
		extra_params => [ '-U', 'app' ]),
	3, 'app cannot turn the setting on itself');
$node->safe_psql('postgres', 'ALTER ROLE app SET ratelimit.inline_memory = on');
is( $node->safe_psql('postgres',
		"SELECT ok FROM rl_limit('i', 'k', $inline)",
		extra_params => [ '-U', 'app' ]),
	't', 'with ALTER ROLE app SET ratelimit.inline_memory = on, app may');
is($node->safe_psql('postgres', 'SELECT rl_memory_forget()'),
	'1', 'rl_memory_forget() drops only the inline entry');
is($node->safe_psql('postgres', $keys), '3', 'the defined keys are left');

$node->stop;
done_testing();
