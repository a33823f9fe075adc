# The memory store on a server that does not preload ratelimit: on 17 and
# later it lives in the DSM registry (nothing saved, so a restart starts
# every key full); on 15 and 16 a memory limit raises 55000, naming
# shared_preload_libraries, and table limits work as ever.  The
# superuser's setting ratelimit.inline_memory, given before the library is
# loaded, is judged when it is.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $clock = "SET ratelimit.now_override = '2030-01-01 00:00:00+00';";

my $node = PostgreSQL::Test::Cluster->new('mem_plain');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('t', 'token bucket', 1, '1 hour', capacity => 3);
});

# A statement's SQLSTATE, message and hint, or its output.
sub outcome
{
	my ($sql) = @_;
	my ($ret, $out, $err) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$clock $sql");
	return "ok: $out" if $ret == 0;
	my ($code, $msg) = $err =~ /ERROR:  (\w{5}): ([^\n]*)/;
	my ($hint) = $err =~ /HINT:  ([^\n]*)/;
	return join(' | ', $code // '?', $msg // $err, $hint // 'no hint');
}

my @calls = (
	[ 'a named memory limit', q{SELECT ok FROM rl_limit('m', 'k')} ],
	[ 'an inline memory config',
		q{SELECT ok FROM rl_limit('inl', 'k',
			config => rl_token_bucket(1, '1 hour', capacity => 3, storage => 'memory'))} ],
	[ 'rl_check on a memory limit', q{SELECT ok FROM rl_check('m', 'k')} ],
	[ 'rl_value on a memory limit', q{SELECT value FROM rl_value('m', 'k')} ],);

if ($node->pg_version >= 17)
{
	is( outcome(q{SELECT rl_define('m', 'token bucket', 1, '1 hour',
			capacity => 3, storage => 'memory')}),
		'ok: ', 'not preloaded, 17+: a memory limit can be defined');
	is($node->safe_psql('postgres',
			"$clock SELECT memory_storage FROM rl_stats_info"),
		'dsm registry', 'not preloaded, 17+: the store is in the DSM registry');
	is( join(' ',
			map { $node->safe_psql('postgres', "$clock SELECT ok FROM rl_limit('m', 'k')") }
			  1 .. 4),
		't t t f', 'capacity 3: three grants in three sessions, then a refusal');
	is($node->safe_psql('postgres', "$clock
			BEGIN READ ONLY;
			SELECT ok, remaining FROM rl_limit('inl', 'k',
				config => rl_token_bucket(1, '1 hour', capacity => 3, storage => 'memory'));
			COMMIT;"),
		't|2', 'an inline memory config, in a READ ONLY transaction');
	is($node->safe_psql('postgres',
			"$clock SELECT memory_keys || ' ' || (memory_empty_since IS NULL) FROM rl_stats_info"),
		'2 true', 'two keys; full after a restart (the default), so no memory_empty_since');
	$node->restart;
	is($node->safe_psql('postgres', "$clock SELECT ok, remaining FROM rl_limit('m', 'k')"),
		't|2', 'not preloaded, 17+: nothing is saved, the key is full after a restart');
}
else
{
	my $unavailable = '55000 | the ratelimit memory store is not available'
	  . ' | Add ratelimit to shared_preload_libraries and restart the server.';
	# defining one fails; one written by hand fails where the store is used
	is(outcome(q{SELECT rl_define('m', 'token bucket', 1, '1 hour', capacity => 3,
			storage => 'memory')}), $unavailable,
		'not preloaded, 15 and 16: rl_define of a memory limit raises 55000 naming the setting');
	$node->safe_psql('postgres', q{
		INSERT INTO rl_definitions (name, kind, rate, period, capacity, storage)
		VALUES ('m', 'token bucket', 1, '1 hour', 3, 'memory');
	});
	for my $c (@calls)
	{
		my ($what, $sql) = @$c;
		is(outcome($sql), $unavailable,
			"not preloaded, 15 and 16: $what raises 55000 naming the setting");
	}
	is($node->safe_psql('postgres',
			"$clock SELECT memory_storage FROM rl_stats_info"),
		'unavailable', 'not preloaded, 15 and 16: rl_stats_info says unavailable');
}

is($node->safe_psql('postgres', "$clock SELECT ok, remaining FROM rl_limit('t', 'k')"),
	't|2', 'not preloaded: a table limit works as ever');

# ratelimit.inline_memory is defined when a session first calls the
# library: a value a role set for itself before then is refused then (the
# setting is a superuser's), one an administrator gave with ALTER ROLE is
# kept.
$node->safe_psql('postgres', 'CREATE ROLE app LOGIN');
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET ratelimit.inline_memory = on;
	SELECT ok FROM rl_limit('t', 'app');
	SHOW ratelimit.inline_memory;}, extra_params => [ '-U', 'app' ]);
is($out, "t\noff", 'not preloaded: a role cannot turn ratelimit.inline_memory on before the library loads');
like($err, qr/permission denied to set parameter "ratelimit.inline_memory"/,
	'and is told why');
$node->safe_psql('postgres', 'ALTER ROLE app SET ratelimit.inline_memory = on');
is( $node->safe_psql('postgres',
		q{SELECT ok FROM rl_limit('t', 'app'); SHOW ratelimit.inline_memory;},
		extra_params => [ '-U', 'app' ]),
	"t\non", 'not preloaded: ALTER ROLE app SET ratelimit.inline_memory = on is kept when the library loads');

$node->stop;
done_testing();
