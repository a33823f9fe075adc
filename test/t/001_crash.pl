# Crash safety: what committed transactions consumed survives an immediate
# shutdown (no checkpoint, recovery from WAL); what an open transaction
# consumed does not.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
# durable commits, and a pinned clock so no token flows back in
$node->append_conf('postgresql.conf', "fsync = on");
$node->append_conf('postgresql.conf',
	"ratelimit.now_override = '2026-01-01 00:00:00+00'");
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('c', 'token bucket', 1000, '1 hour');
	CHECKPOINT;
});

# 50 committed calls on one key, each its own transaction, after the
# checkpoint: only WAL knows about them
my $n = 50;
$node->safe_psql('postgres',
	join('', map { "SELECT rl_limit('c', 'k');\n" } 1 .. $n));
# 20 new keys created in one committed transaction
$node->safe_psql('postgres',
	"SELECT rl_limit('c', i, 3) FROM generate_series(1, 20) AS i");

# an open transaction consumes from the same key and creates another
my $open = $node->background_psql('postgres');
$open->query_safe("BEGIN");
$open->query_safe("SELECT rl_limit('c', 'k', 100)");
$open->query_safe("SELECT rl_limit('c', 'uncommitted', 7)");

$node->stop('immediate');
$open->{run}->kill_kill;
$node->start;

is($node->safe_psql('postgres', "SELECT value FROM rate_limits WHERE key = 'k'"),
	1000 - $n, 'the committed calls on one key all survived the crash');
is($node->safe_psql('postgres',
		"SELECT count(*), sum(value) FROM rate_limits WHERE key ~ '^[0-9]+\$'"),
	'20|19940', 'the committed new keys survived with their values');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM rate_limits WHERE key = 'uncommitted'"),
	'0', 'the open transaction\'s new key is gone');
is($node->safe_psql('postgres', "SELECT ok, remaining FROM rl_limit('c', 'k')"),
	't|949', 'the limit goes on from the committed state');

$node->stop;
done_testing();
