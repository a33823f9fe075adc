# Definitions replicated by logical replication: a subscription's apply
# worker fires row triggers only, and every change it applies to
# rl_definitions (insert, update, delete, truncate, and the initial copy)
# must still reach a subscriber session that has already cached the
# definition, from its next transaction on.  A stale cache there would
# grant past a lowered capacity, or go on granting an undefined name.
# On the direct path and on the SQL path.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->start;
$pub->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('early', 'token bucket', 1, '1 hour', capacity => 3);
	CREATE PUBLICATION defs FOR TABLE rl_definitions;
});

my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
$sub->start;
# calls(name, key, n): n calls of one token each on (name, key), in the
# calling session; "g of n" granted, or the SQLSTATE of the error.  One
# call per statement inside, so each looks its definition up anew.
$sub->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	CREATE FUNCTION calls(p_name text, p_key text, n integer) RETURNS text
	LANGUAGE plpgsql AS $$
	DECLARE
		granted integer := 0;
	BEGIN
		FOR i IN 1 .. n LOOP
			IF (SELECT ok FROM rl_limit(p_name, p_key)) THEN
				granted := granted + 1;
			END IF;
		END LOOP;
		RETURN granted || ' of ' || n;
	EXCEPTION WHEN OTHERS THEN
		RETURN SQLSTATE;
	END $$;
});

# A session that has used the subscriber since before the subscription.
my $clock = q{SET ratelimit.now_override = '2026-01-01 00:00:00+00'};
my $early = $sub->background_psql('postgres');
$early->query_safe($clock);
is($early->query_safe(q{SELECT calls('early', 'k', 1)}), '42704',
	'before the subscription: "early" is not defined on the subscriber');

my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION defs CONNECTION '$connstr' PUBLICATION defs");
$sub->wait_for_subscription_sync($pub, 'defs');
is($early->query_safe(q{SELECT calls('early', 'fresh', 5)}), '3 of 5',
	'the initial copy reaches a live session: capacity 3');
$early->quit;

for my $direct ('on', 'off')
{
	my $path = "(direct_access = $direct)";
	my ($up, $ins, $del, $tr) = map { "${_}_$direct" } qw(up ins del tr);

	$pub->safe_psql('postgres', qq{
		SELECT rl_define('$up', 'token bucket', 1, '1 hour', capacity => 10);
		SELECT rl_define('$del', 'token bucket', 1, '1 hour', capacity => 10);
		SELECT rl_define('$tr', 'token bucket', 1, '1 hour', capacity => 10);
	});
	$pub->wait_for_catchup('defs');

	# the live session caches every name: three definitions, one absence
	my $s = $sub->background_psql('postgres');
	$s->query_safe("SET ratelimit.direct_access = $direct; $clock");
	is($s->query_safe(qq{SELECT calls('$up', 'k', 1)}), '1 of 1',
		"$up cached with capacity 10 $path");
	is($s->query_safe(qq{SELECT calls('$del', 'k', 1)}), '1 of 1',
		"$del cached $path");
	is($s->query_safe(qq{SELECT calls('$tr', 'k', 1)}), '1 of 1',
		"$tr cached $path");
	is($s->query_safe(qq{SELECT calls('$ins', 'k', 1)}), '42704',
		"$ins cached as not defined $path");

	# update (capacity 10 -> 1), insert, delete on the publisher
	$pub->safe_psql('postgres', qq{
		SELECT rl_define('$up', 'token bucket', 1, '1 hour', capacity => 1);
		SELECT rl_define('$ins', 'token bucket', 1, '1 hour', capacity => 2);
		SELECT rl_undefine('$del');
	});
	$pub->wait_for_catchup('defs');
	is( $sub->safe_psql('postgres',
			"SELECT string_agg(name || ':' || capacity, ' ' ORDER BY name) "
			  . "FROM rl_definitions WHERE name LIKE '%_$direct'"),
		"${ins}:2 ${tr}:10 ${up}:1",
		"the subscriber's table holds the publisher's changes $path");

	is($s->query_safe(qq{SELECT calls('$up', 'fresh', 5)}), '1 of 5',
		"a replicated UPDATE reaches a live session: capacity 1 $path");
	is($s->query_safe(qq{SELECT calls('$ins', 'fresh', 5)}), '2 of 5',
		"a replicated INSERT reaches a live session: capacity 2 $path");
	is($s->query_safe(qq{SELECT calls('$del', 'fresh', 1)}), '42704',
		"a replicated DELETE reaches a live session: 42704 $path");

	# truncate (statement-level, applied by the worker as TRUNCATE)
	$pub->safe_psql('postgres', 'TRUNCATE rl_definitions');
	$pub->wait_for_catchup('defs');
	is($sub->safe_psql('postgres', 'SELECT count(*) FROM rl_definitions'),
		'0', "the subscriber's table is empty after TRUNCATE $path");
	is($s->query_safe(qq{SELECT calls('$tr', 'fresh', 1)}), '42704',
		"a replicated TRUNCATE reaches a live session: 42704 $path");
	is($s->query_safe(qq{SELECT calls('$up', 'fresh2', 1)}), '42704',
		"every name is gone after TRUNCATE $path");
	$s->quit;
}

$sub->stop;
$pub->stop;
done_testing();
