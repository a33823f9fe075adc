# Dump and restore: pg_dump saves the definitions and the live state (both
# tables are extension configuration), and pg_restore into a fresh
# database brings back a limiter that answers exactly as the original.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->append_conf('postgresql.conf',
	"ratelimit.now_override = '2026-02-01 00:00:00+00'");
$node->start;

$node->safe_psql('postgres', q{
	CREATE DATABASE source;
});
$node->safe_psql('source', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('msg', 'token bucket', 10, '1 minute', capacity => 20, max_reserved => 5);
	SELECT rl_define('daily', 'fixed window', 1000, '1 day', start => '2026-01-01 00:00:00+00');
	SELECT rl_define('global', 'token bucket', 100, '1 second', shards => 8);
	SELECT rl_limit('msg', 'alice', 18), rl_limit('msg', 42, 3);
	SELECT rl_limit('msg', NULL, 24, reserve => true);
	SELECT rl_limit('daily', 'bob', 999);
	SELECT rl_limit('global', NULL, 20);
	SELECT rl_limit('inline', 'k', 1, config => rl_token_bucket(1, '1 hour'));
	-- a sliding window whose row holds the previous window's count (prev)
	SELECT rl_define('slide', 'sliding window', 6, '1 minute', start => '2026-01-01 00:00:00+00');
	SET ratelimit.now_override = '2026-01-31 23:59:30+00';
	SELECT rl_limit('slide', 'carol', 4);
	RESET ratelimit.now_override;
	SELECT rl_limit('slide', 'carol', 1);
});

my $definitions = q{SELECT string_agg(d::text, ' ' ORDER BY name) FROM rl_definitions d};
my $state = q{SELECT string_agg(format('%s/%s/%s=%s@%s prev %s', name, key, shard, value, ts,
	coalesce(prev::text, 'NULL')), ' ' ORDER BY name, key, shard) FROM rate_limits};
my $answers = q{SELECT string_agg(r::text, ' ' ORDER BY n) FROM (
	SELECT 1 AS n, rl_check('msg', 'alice', 5) AS r
	UNION ALL SELECT 2, rl_check('msg', 42, 18)
	UNION ALL SELECT 3, rl_check('msg', NULL, 1)
	UNION ALL SELECT 4, rl_check('daily', 'bob', 2)
	UNION ALL SELECT 5, rl_check('inline', 'k', 1, config => rl_token_bucket(1, '1 hour'))
	UNION ALL SELECT 6, rl_check('slide', 'carol', 1)
	UNION ALL SELECT 7, rl_check('slide', 'carol', 2)
) s};

my $dump = $node->basedir . '/source.dump';
$node->command_ok(
	[ 'pg_dump', '--format=custom', '--file', $dump, '--dbname', $node->connstr('source') ],
	'pg_dump of a database using ratelimit');

$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '--dbname', $node->connstr('restored'), $dump ],
	'pg_restore into a fresh database, without an error');

is($node->safe_psql('restored',
		"SELECT extversion FROM pg_extension WHERE extname = 'ratelimit'"),
	$node->safe_psql('source',
		"SELECT extversion FROM pg_extension WHERE extname = 'ratelimit'"),
	'the same extension version');
my $defs = $node->safe_psql('source', $definitions);
like($defs, qr/daily.*global.*msg/, 'the source has its three definitions');
is($node->safe_psql('restored', $definitions), $defs, 'every definition is restored');
my $rows = $node->safe_psql('source', $state);
like($rows, qr/daily\/bob.*msg\/alice.*slide\/carol\/0=5@.* prev 4/, 'the source has live state, a sliding window\'s prev among it');
like($rows, qr/msg\/alice\/0=[^ ]+ [^ ]+ prev NULL/, 'and no prev for the other kinds');
is($node->safe_psql('restored', $state), $rows,
	'the live state is restored row for row: nobody gets a fresh bucket');
is($node->safe_psql('restored', $answers), $node->safe_psql('source', $answers),
	'the restored limiter answers exactly as the original');
# 6 - 1 - 4 (the whole previous window still counts at its end): 1 left
is($node->safe_psql('restored', "SELECT ok FROM rl_check('slide', 'carol', 2)"),
	'f', 'the restored sliding window still counts the previous window');

# the restored copy is a working limiter, not a snapshot
is($node->safe_psql('restored', "SELECT ok, remaining FROM rl_limit('msg', 'alice', 2)"),
	't|0', 'consuming goes on from the restored state');
is($node->safe_psql('restored', "SELECT ok FROM rl_limit('msg', 'alice', 1)"),
	'f', 'and the restored limit still refuses');

# a dump without the state: definitions only, every key starts full
my $defs_only = $node->basedir . '/definitions.dump';
$node->command_ok(
	[ 'pg_dump', '--format=custom', '--exclude-table-data=rate_limits',
	  '--file', $defs_only, '--dbname', $node->connstr('source') ],
	'pg_dump --exclude-table-data=rate_limits');
$node->safe_psql('postgres', 'CREATE DATABASE definitions_only');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '--dbname', $node->connstr('definitions_only'), $defs_only ],
	'pg_restore of the definitions-only dump');
is($node->safe_psql('definitions_only', $definitions), $defs,
	'the definitions-only dump keeps the definitions');
is($node->safe_psql('definitions_only', 'SELECT count(*) FROM rate_limits'), '0',
	'and no state');

# EXECUTE granted by hand on a function that the update to 1.3 drops and
# creates again with a new signature: kept by the update, carried by the
# dump as an ordinary GRANT, and there after the restore.
$node->safe_psql('postgres', q{
	CREATE ROLE app;
	CREATE DATABASE upgraded;
});
$node->safe_psql('upgraded', q{
	CREATE EXTENSION ratelimit VERSION '1.2';
	GRANT EXECUTE ON FUNCTION rl_define(text, text, float8, interval, float8, float8, integer, timestamptz)
		TO app WITH GRANT OPTION;
	GRANT EXECUTE ON FUNCTION rl_reset(text, text) TO app;
	ALTER EXTENSION ratelimit UPDATE TO '1.3';
});
my $app_may = q{SELECT string_agg(format('%s %s', p.oid::regprocedure,
		CASE WHEN has_function_privilege('app', p.oid, 'EXECUTE WITH GRANT OPTION') THEN 'with grant option'
		ELSE 'execute' END), ', ' ORDER BY p.proname)
	FROM pg_proc p
	WHERE p.proname IN ('rl_define', 'rl_reset') AND has_function_privilege('app', p.oid, 'EXECUTE')};
my $kept = $node->safe_psql('upgraded', $app_may);
is($kept, 'rl_define(text,text,double precision,interval,double precision,double precision,integer,'
	. 'timestamp with time zone,text,text,boolean,interval,double precision,interval,interval,integer,integer,'
	. 'double precision) with grant option, '
	. 'rl_reset(text,text,rl_policy) execute',
	'the update keeps EXECUTE granted by hand, on the new signatures');
my $upgraded_dump = $node->basedir . '/upgraded.dump';
$node->command_ok(
	[ 'pg_dump', '--format=custom', '--file', $upgraded_dump, '--dbname', $node->connstr('upgraded') ],
	'pg_dump of the updated database');
$node->safe_psql('postgres', 'CREATE DATABASE upgraded_restored');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '--dbname', $node->connstr('upgraded_restored'), $upgraded_dump ],
	'pg_restore of it into a fresh database');
is($node->safe_psql('upgraded_restored', $app_may), $kept,
	'the grants made by hand are restored');

# The grant sets of rl_grant_app and rl_grant_admin are ordinary grants on
# the extension's members: the dump carries them.
$node->safe_psql('postgres', q{
	CREATE ROLE web;
	CREATE ROLE migrator;
	CREATE DATABASE roles;
});
$node->safe_psql('roles', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_grant_app('web');
	SELECT rl_grant_admin('migrator');
});
my $granted = q{SELECT string_agg(format('%s %s', a.grantee::regrole, o.object), ', '
		ORDER BY a.grantee::regrole::text, o.object)
	FROM (SELECT p.oid::regprocedure::text AS object, p.proacl AS acl FROM pg_proc p
	      UNION ALL SELECT c.oid::regclass::text, c.relacl FROM pg_class c) o,
		aclexplode(o.acl) a
	WHERE a.grantee IN ('web'::regrole, 'migrator'::regrole)};
my $roles_before = $node->safe_psql('roles', $granted);
like($roles_before, qr/migrator rl_define\(.*web rl_refund\(text,text,/,
	'rl_grant_app and rl_grant_admin grant their sets');
my $roles_dump = $node->basedir . '/roles.dump';
$node->command_ok(
	[ 'pg_dump', '--format=custom', '--file', $roles_dump, '--dbname', $node->connstr('roles') ],
	'pg_dump of the database with the grant sets');
$node->safe_psql('postgres', 'CREATE DATABASE roles_restored');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '--dbname', $node->connstr('roles_restored'), $roles_dump ],
	'pg_restore of it into a fresh database');
is($node->safe_psql('roles_restored', $granted), $roles_before,
	'the grant sets are restored');

$node->stop;
done_testing();
