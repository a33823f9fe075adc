# docs/operations.md's pg_cron recipe for idle-key cleanup: scheduled as
# written, the job runs rl_gc in the background and the idle keys go, while
# a key still refilling stays.
use strict;
use warnings;

use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use RatelimitExtensions qw(require_extension);
use Test::More;

require_extension('pg_cron');

my $node = PostgreSQL::Test::Cluster->new('cron');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
});
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_cron;
	CREATE EXTENSION ratelimit;
	-- full again within a millisecond of a call
	SELECT rl_define('burst', 'token bucket', 1000, '1 second');
	SELECT count(*) FROM (SELECT rl_limit('burst', i) FROM generate_series(1, 50) i) s;
	-- a day from full: stays
	SELECT rl_define('daily', 'token bucket', 10, '1 day');
	SELECT rl_limit('daily', 'busy', 5);
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM rate_limits'), '51',
	'51 keys before the job runs');

# The recipe, exactly as docs/operations.md gives it.
$node->safe_psql('postgres', q{
	SELECT cron.schedule('ratelimit-gc', '* * * * *', 'SELECT rl_gc(10000)');
});

# pg_cron runs jobs on minute boundaries: wait for the first run
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM cron.job_run_details
	WHERE status IN ('succeeded', 'failed')
}), 'the scheduled job ran');
is($node->safe_psql('postgres', q{
	SELECT status || ' ' || return_message FROM cron.job_run_details
	ORDER BY runid LIMIT 1
}), 'succeeded SELECT 1', 'rl_gc succeeded in the background');
is($node->safe_psql('postgres', 'SELECT key FROM rate_limits'), 'busy',
	'the idle keys are gone, the key still refilling is kept');

$node->stop;
done_testing();
