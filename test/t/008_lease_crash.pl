# Leases are durable: after an immediate shutdown (no checkpoint, recovery
# from WAL) every committed lease still holds its permits until its ttl
# has passed, a released one stays released, and a lease taken by a
# transaction still open at the crash never existed.  Transaction-scoped
# permits, which live in the lock manager, are all free after the restart.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $node = PostgreSQL::Test::Cluster->new('lease_crash');
$node->init;
$node->append_conf('postgresql.conf', "fsync = on");
$node->append_conf('postgresql.conf',
	"ratelimit.now_override = '2026-01-01 00:00:00+00'");
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define_concurrency('jobs', 3, leases => true);
	SELECT rl_define_concurrency('calls', 1);
	CHECKPOINT;
});

# after the checkpoint: two leases of one hour, one of one minute, one of
# the long ones released; only WAL knows about them
my $long1 = $node->safe_psql('postgres', "SELECT rl_lease('jobs', 'k', 1, '1 hour')");
my $long2 = $node->safe_psql('postgres', "SELECT rl_lease('jobs', 'k', 1, '1 hour')");
$node->safe_psql('postgres', "SELECT rl_lease('jobs', 'k', 1, '1 minute')");
is($node->safe_psql('postgres', "SELECT rl_release('$long2')"), 't',
	'one lease released before the crash');

# an open transaction takes a lease and a transaction-scoped permit
my $open = $node->background_psql('postgres');
$open->query_safe("BEGIN");
$open->query_safe("SELECT rl_lease('jobs', 'k', 2, '1 hour')");
$open->query_safe("SELECT rl_acquire('calls', 'k')");

$node->stop('immediate');
$open->{run}->kill_kill;
$node->start;

is($node->safe_psql('postgres',
		"SELECT count(*), sum(permits) FILTER (WHERE held) FROM rl_lease_status"),
	'3|2', 'the three committed leases survived; two hold permits');
is($node->safe_psql('postgres', "SELECT rl_release('$long2')"), 'f',
	'the released lease stays released');
is($node->safe_psql('postgres', "SELECT rl_lease('jobs', 'k', 2, '1 hour') IS NULL"),
	't', 'the unexpired leases still count: no room for two more');
is($node->safe_psql('postgres', "SELECT rl_lease('jobs', 'k', 1, '1 hour') IS NOT NULL"),
	't', 'the lease of the open transaction never existed: room for one');
is($node->safe_psql('postgres', "SELECT rl_acquire('calls', 'k')"), 't',
	'the open transaction\'s permit is free after the restart');

# past the one-minute lease's ttl, its permit is free; rl_gc removes it
# and only it
$node->safe_psql('postgres',
	"ALTER SYSTEM SET ratelimit.now_override = '2026-01-01 00:01:00+00'; SELECT pg_reload_conf()");
is($node->safe_psql('postgres', "SELECT rl_gc()"), '1',
	'rl_gc removes the expired lease only');
is($node->safe_psql('postgres', "SELECT rl_release('$long1')"), 't',
	'an unexpired lease is still held after the crash and releases');

$node->stop;
done_testing();
