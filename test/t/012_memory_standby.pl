# A memory limit on a hot standby: its definition replicates, its state
# does not.  The standby grants in its own (read-only) transactions, exactly
# what the limit allows, a rollback returns what it took, and neither
# server's grants touch the other's state; a table limit still raises 25006
# there.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

# a pinned clock: nothing refills between calls
my $clock = "SET ratelimit.now_override = '2026-01-01 00:00:00+00';";

my $primary = PostgreSQL::Test::Cluster->new('mem_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf',
	"shared_preload_libraries = 'ratelimit'");
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION ratelimit');
$primary->backup('base');

my $standby = PostgreSQL::Test::Cluster->new('mem_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# defined once the standby runs: it learns the definitions from the WAL
$primary->safe_psql('postgres', q{
	SELECT rl_define('mem', 'token bucket', 1, '1 hour', capacity => 3,
		storage => 'memory');
	SELECT rl_define('tbl', 'token bucket', 1, '1 hour', capacity => 3);
});
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	't', 'the standby is in recovery');

# One call per psql session: each its own read-only transaction on the
# standby.  The answers, in order.
sub calls
{
	my ($node, $sql, $n) = @_;
	return join(' ',
		map { $node->safe_psql('postgres', "$clock $sql") } 1 .. $n);
}

is(calls($standby, q{SELECT ok FROM rl_limit('mem', 'k')}, 4),
	't t t f', 'the standby grants a capacity of 3 exactly, then refuses');
is($standby->safe_psql('postgres',
		"$clock SELECT ok, remaining FROM rl_limit('mem', 'other')"),
	't|2', 'another key on the standby is untouched');

is($primary->safe_psql('postgres',
		"$clock SELECT value FROM rl_value('mem', 'k')"),
	'3', 'the primary\'s state of the key is full: the standby\'s grants stay there');
is(calls($primary, q{SELECT ok FROM rl_limit('mem', 'k', 2)}, 2),
	't f', 'the primary grants from its own state');
is($primary->safe_psql('postgres', "$clock
		BEGIN READ ONLY;
		SELECT ok, remaining FROM rl_limit('mem', 'k');
		COMMIT;"),
	't|0', 'the primary grants in a READ ONLY transaction too');
is($primary->safe_psql('postgres',
		"$clock SELECT ok FROM rl_limit('mem', 'k')"),
	'f', 'the primary refuses once its own state is drained');

# the primary's calls changed nothing on the standby: still drained there,
# and 'other' still has the 2 the standby left it
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres',
		"$clock SELECT ok, remaining FROM rl_limit('mem', 'other', 2)"),
	't|0', 'the standby\'s state is its own: the primary\'s grants are not there');

# a rollback on the standby returns what it took
is($standby->safe_psql('postgres', "$clock
		BEGIN;
		SELECT ok FROM rl_limit('mem', 'rb', 3);
		SELECT ok FROM rl_limit('mem', 'rb');
		ROLLBACK;
		SELECT ok, remaining FROM rl_limit('mem', 'rb', 3);"),
	"t\nf\nt|0", 'a rollback on the standby returns the tokens');

# a refund on the standby applies at commit
is($standby->safe_psql('postgres', "$clock
		SELECT value FROM rl_refund('mem', 'rb', 2);
		SELECT ok, remaining FROM rl_limit('mem', 'rb');"),
	"2\nt|1", 'a refund on the standby gives tokens back');

# an inline memory key on the standby: rl_reset with its config resets it
# there (at commit, writing no table)
my $inline = q{config => rl_token_bucket(1, '1 hour', capacity => 3, storage => 'memory')};
is($standby->safe_psql('postgres', "$clock
		SELECT ok FROM rl_limit('inl', 'k', 3, $inline);
		SELECT ok FROM rl_limit('inl', 'k', $inline);
		SELECT 'reset' FROM rl_reset('inl', 'k', $inline);
		SELECT ok, remaining FROM rl_limit('inl', 'k', 3, $inline);"),
	"t\nf\nreset\nt|0", 'rl_reset with its config resets an inline memory key on the standby');

# a table limit still needs a writable server
my ($ret, $out, $err) = $standby->psql('postgres',
	"\\set VERBOSITY verbose\n$clock SELECT rl_limit('tbl', 'k')");
like($err,
	qr/ERROR:  25006: cannot execute rl_limit\(\) (in a read-only transaction|during recovery)/,
	'a table limit on the standby raises 25006');

# a redefinition on the primary reaches the standby's calls
$primary->safe_psql('postgres', q{
	SELECT rl_define('mem', 'token bucket', 1, '1 hour', capacity => 5,
		storage => 'memory');
});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres',
		"$clock SELECT ok, remaining FROM rl_limit('mem', 'fresh')"),
	't|4', 'the standby uses the primary\'s new definition');

done_testing();
