# The memory store: a take decided while a definition change is
# committing (its epoch already bumped, the new definition not yet
# visible, so the take is decided under the old policy) lands from the
# time of its call, as the table store's row does.  It was owed from the
# key's older time, and the new, faster rate refilled again the time
# before the take that the old rate had already refilled and the take had
# consumed.  The commit is held open by synchronous replication to a
# standby that does not exist, then cancelled (it stays committed).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $t0 = "SET ratelimit.now_override = '2030-01-01 00:00:00+00';";
my $t3 = "SET ratelimit.now_override = '2030-01-01 00:00:03+00';";

my $node = PostgreSQL::Test::Cluster->new('commit_window');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ratelimit'
});
$node->start;
$node->safe_psql('postgres', qq{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('cw', 'token bucket', 1, '1 second', 20, storage => 'memory');
	$t0 SELECT rl_limit('cw', 'k', 20);
});
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET synchronous_standby_names = 'nobody';
	SELECT pg_reload_conf();
});
# sessions that start from now on wait for the standby at commit
$node->poll_query_until('postgres', 'SHOW synchronous_standby_names', 'nobody')
  or die 'synchronous_standby_names not reloaded';

# the redefinition to 3 a second, waiting for the standby in its commit
my $redefine = $node->background_psql('postgres');
$redefine->query_until(qr/waiting/, q{
	SET application_name = 'redefine';
	\echo waiting
	SELECT rl_define('cw', 'token bucket', 3, '1 second', 20, storage => 'memory');
});
$node->poll_query_until('postgres', q{
	SELECT wait_event = 'SyncRep' FROM pg_stat_activity
	WHERE application_name = 'redefine'}) or die 'the redefinition never waited';

# a take of the 3 tokens 1 a second refilled in 3 seconds, decided under
# the old policy while the change commits
is($node->safe_psql('postgres', "$t3 SELECT ok FROM rl_limit('cw', 'k', 3)"),
	't', 'the take is decided under the old policy');
$node->safe_psql('postgres', q{
	SELECT pg_cancel_backend(pid) FROM pg_stat_activity
	WHERE application_name = 'redefine'});
$redefine->quit;
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET synchronous_standby_names;
	SELECT pg_reload_conf();
});
is($node->safe_psql('postgres', 'SELECT rate FROM rl_definitions WHERE name = \'cw\''),
	'3', 'the redefinition committed');

# the key holds nothing at the take's time, as the table store's row would
is($node->safe_psql('postgres', "$t3 SELECT value FROM rl_value('cw', 'k')"),
	'0', 'the take lands from its own time: nothing left (6 before)');
is($node->safe_psql('postgres', "$t3 SELECT ok FROM rl_limit('cw', 'k')"),
	'f', 'and the next call is refused');

$node->stop;
done_testing();
