# REINDEX CONCURRENTLY of rate_limits beside calls on new keys.  While it
# runs, a second unique index on (name, key, shard) exists that is not yet
# valid (rate_limits_pkey_ccnew, later the old one as _ccold): INSERT ...
# ON CONFLICT does not take it as an arbiter, so two sessions inserting the
# same new key could meet on it with 23505, or wait on each other there
# (40P01).  The direct path takes it as an arbiter: no call fails.  The SQL
# path is the statement's own behaviour, counted here, not judged
# (docs/operations.md tells what its callers can see).
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $seconds = 4;

my $node = PostgreSQL::Test::Cluster->new('reindex');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ratelimit'
});
$node->start;
# a new key every millisecond, which the clients call at once; errors kept
$node->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('n', 'token bucket', 100, '1 s');
	CREATE TABLE errors (path text, sqlstate text, message text);
	CREATE FUNCTION new_key_call() RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM rl_limit('n', (extract(epoch FROM clock_timestamp()) * 1000)::bigint::text);
	EXCEPTION WHEN OTHERS THEN
		INSERT INTO errors VALUES (current_setting('ratelimit.direct_access'),
								   SQLSTATE, SQLERRM);
	END
	$$;
});

# Calls from 8 clients for $seconds seconds on one path, and REINDEX
# CONCURRENTLY of the primary key over and over meanwhile.
sub race
{
	my ($path) = @_;
	my $script = $node->basedir . '/new_key.sql';
	my ($out, $err) = ('', '');

	PostgreSQL::Test::Utils::append_to_file($script,
		"SELECT new_key_call();\n") unless -e $script;
	local $ENV{PGOPTIONS} = "-c ratelimit.direct_access=$path";
	my $bench = IPC::Run::start(
		[
			'pgbench', '--no-vacuum', '--client=8', "--time=$seconds",
			'--file=' . $script, $node->connstr('postgres')
		],
		'>', \$out, '2>', \$err);
	my $reindexes = 0;
	while ($bench->pumpable)
	{
		my ($ret) = $node->psql('postgres',
			'REINDEX INDEX CONCURRENTLY rate_limits_pkey');
		$reindexes++ if $ret == 0;
		$bench->pump_nb;
	}
	$bench->finish;
	like($out, qr{number of failed transactions: 0}, "$path: pgbench ran")
	  or diag($err);
	cmp_ok($reindexes, '>', 0, "$path: REINDEX CONCURRENTLY ran");
	return $node->safe_psql('postgres',
		"SELECT sqlstate || ' ' || message FROM errors WHERE path = '$path'"
		  . " ORDER BY 1");
}

is(race('on'), '', 'direct path: no new-key call fails');
race('off');
note('SQL path: '
	  . $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(sqlstate || ' x' || n, ', '), 'none')"
		  . " FROM (SELECT sqlstate, count(*) AS n FROM errors"
		  . " WHERE path = 'off' GROUP BY 1) AS e"));
# the index left valid, and the one it replaced gone
is( $node->safe_psql('postgres',
		q{SELECT string_agg(c.relname || ' ' || i.indisvalid, ', ')
		  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		  WHERE i.indrelid = 'rate_limits'::regclass}),
	'rate_limits_pkey true',
	'only the valid primary key is left');

$node->stop;
done_testing();
