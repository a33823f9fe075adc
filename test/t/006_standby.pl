# A hot standby: every function that consumes, locks or administers raises
# SQLSTATE 25006 there (every transaction on a standby is read-only), on the
# direct path and on the SQL path, whatever its outcome would be; rl_check,
# rl_value and rl_status work and give the primary's answers.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $clock = "SET ratelimit.now_override = '2026-01-01 01:00:00+00';";

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	SET ratelimit.now_override = '2026-01-01 00:00:00+00';
	SELECT rl_define('sb', 'token bucket', 1, '1 hour', capacity => 10);
	SELECT rl_define('sb_sharded', 'token bucket', 40, '1 hour', shards => 4);
	SELECT rl_define('sb_idle', 'token bucket', 1000, '1 second');
	SELECT rl_limit('sb', 'k', 3);
	SELECT rl_limit('sb_sharded', 'k', 2);
	SELECT rl_limit('sb_idle', 'gone', 1);
	SELECT rl_define_concurrency('sb_conc', 2);
	SELECT rl_define_concurrency('sb_lease', 2, leases => true);
	CREATE TABLE msgs (user_id text);
	CREATE TRIGGER enforce BEFORE INSERT ON msgs
	  FOR EACH ROW EXECUTE FUNCTION rl_enforce('sb', 'user_id');
});
$primary->backup('base');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

my @writes = (
	[ 'rl_limit, would be granted', q{SELECT rl_limit('sb', 'k')} ],
	[ 'rl_limit, would be refused', q{SELECT rl_limit('sb', 'k', 9)} ],
	[ 'rl_limit, new key', q{SELECT rl_limit('sb', 'new')} ],
	[ 'rl_limit, sharded', q{SELECT rl_limit('sb_sharded', 'k')} ],
	[ 'rl_limit, inline config',
		q{SELECT rl_limit('inline', 'k', config => rl_token_bucket(1, '1 hour'))} ],
	[ 'rl_limit_all',
		q{SELECT rl_limit_all(ARRAY['sb', 'sb_sharded'], ARRAY['k', 'k'], ARRAY[1, 1])} ],
	[ 'rl_reset', q{SELECT rl_reset('sb', 'k')} ],
	[ 'rl_define', q{SELECT rl_define('x', 'token bucket', 1, '1 second')} ],
	[ 'rl_undefine', q{SELECT rl_undefine('sb')} ],
	[ 'rl_gc, with an idle row', q{SELECT rl_gc()} ],
	[ 'rl_define_concurrency', q{SELECT rl_define_concurrency('y', 1)} ],
	[ 'rl_lease', q{SELECT rl_lease('sb_lease', 'k', 1, '1 minute')} ],
	[ 'rl_release',
		q{SELECT rl_release('00000000-0000-0000-0000-000000000000')} ],
	# writes nothing, but a standby's permits would not count on the primary
	[ 'rl_acquire', q{SELECT rl_acquire('sb_conc', 'k')} ],);

for my $direct ('on', 'off')
{
	my $path = "SET ratelimit.direct_access = $direct;";
	for my $w (@writes)
	{
		my ($what, $sql) = @$w;
		my ($stdout, $stderr);
		my $rc = $standby->psql(
			'postgres', "\\set VERBOSITY verbose\n$clock $path $sql",
			stdout => \$stdout,
			stderr => \$stderr);
		like($stderr,
			qr/ERROR:  25006: cannot execute rl_\w+\(\) (in a read-only transaction|during recovery)/,
			"$what on a standby raises 25006 (direct_access = $direct)");
	}

	# reads give the primary's answers
	my $reads = qq{$clock $path
		SELECT ok, remaining, retry_after FROM rl_check('sb', 'k', 2);
		SELECT ok, remaining FROM rl_check('sb_sharded', 'k', 5);
		SELECT value, ts FROM rl_value('sb', 'k');
		SELECT value FROM rl_value('sb_sharded', 'k');
		SELECT name, key, shard, value, remaining, idle FROM rl_status ORDER BY 1, 2, 3;};
	is($standby->safe_psql('postgres', $reads),
		$primary->safe_psql('postgres', $reads),
		"rl_check, rl_value and rl_status answer as on the primary (direct_access = $direct)");
}

# nothing changed, and the primary still serves
is($standby->safe_psql('postgres', 'SELECT count(*) FROM rate_limits'),
	'3', 'the standby holds the primary\'s rows');
is($primary->safe_psql('postgres', "$clock SELECT ok FROM rl_limit('sb', 'k')"),
	't', 'the primary still consumes');

done_testing();
