# Settings that size shared memory when ratelimit is preloaded
# (ratelimit.memory_max_keys, ratelimit.stats_max_names,
# ratelimit.refused_max_names, ratelimit.refused_top_k) change only at a
# restart: a reload that raises them is refused with a LOG line, and a
# backend crash afterwards (the postmaster reinitialises shared memory at
# the size it asked for at start) brings the server back.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $node = PostgreSQL::Test::Cluster->new('sizing');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ratelimit'
restart_after_crash = on
ratelimit.memory_max_keys = 1000
ratelimit.stats_max_names = 100
ratelimit.refused_max_names = 10
ratelimit.refused_top_k = 4
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ratelimit');

my $settings = q{SELECT string_agg(name || '=' || setting || ' ' || context
		|| CASE WHEN pending_restart THEN ' pending' ELSE '' END, ', ' ORDER BY name)
	FROM pg_settings
	WHERE name IN ('ratelimit.memory_max_keys', 'ratelimit.stats_max_names',
		'ratelimit.refused_max_names', 'ratelimit.refused_top_k')};
is($node->safe_psql('postgres', $settings),
	'ratelimit.memory_max_keys=1000 postmaster, ratelimit.refused_max_names=10 postmaster, '
	  . 'ratelimit.refused_top_k=4 postmaster, ratelimit.stats_max_names=100 postmaster',
	'preloaded, the sizing settings are postmaster settings');

# Raise both by a reload
my $log_offset = -s $node->logfile;
$node->append_conf('postgresql.conf', q{
ratelimit.memory_max_keys = 400000
ratelimit.stats_max_names = 100000
ratelimit.refused_max_names = 100
ratelimit.refused_top_k = 64
});
$node->reload;
$node->wait_for_log(qr/received SIGHUP, reloading configuration files/,
	$log_offset);
# and a backend that starts now has seen it too
sleep 1;
is($node->safe_psql('postgres', $settings),
	'ratelimit.memory_max_keys=1000 postmaster pending, ratelimit.refused_max_names=10 postmaster pending, '
	  . 'ratelimit.refused_top_k=4 postmaster pending, ratelimit.stats_max_names=100 postmaster pending',
	'a reload does not change them, and marks them pending a restart');
is($node->safe_psql('postgres', 'SHOW ratelimit.memory_max_keys'), '1000',
	'SHOW gives the value in force');
my $log = slurp_file($node->logfile, $log_offset);
like($log,
	qr/parameter "ratelimit.memory_max_keys" cannot be changed without restarting the server/,
	'the log says memory_max_keys needs a restart');
like($log,
	qr/parameter "ratelimit.stats_max_names" cannot be changed without restarting the server/,
	'the log says stats_max_names needs a restart');

# Then a backend crash: shared memory is made again, at the size of the start
$log_offset = -s $node->logfile;
my $victim = $node->background_psql('postgres');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
$victim->{run}->kill_kill;
ok($node->poll_query_until('postgres', 'SELECT true'),
	'the server comes back after a backend crash that followed the reload');
$log = slurp_file($node->logfile, $log_offset);
like($log, qr/all server processes terminated; reinitializing/,
	'the postmaster reinitialised shared memory');
unlike($log, qr/not enough shared memory/, 'with the memory it asked for at start');
is($node->safe_psql('postgres',
		'SELECT memory_max_keys || \' \' || memory_storage FROM rl_stats_info'),
	'1000 shared memory', 'the memory store is the size of the start');

# A restart applies the new values
$node->restart;
is($node->safe_psql('postgres', $settings),
	'ratelimit.memory_max_keys=400000 postmaster, ratelimit.refused_max_names=100 postmaster, '
	  . 'ratelimit.refused_top_k=64 postmaster, ratelimit.stats_max_names=100000 postmaster',
	'a restart applies them');
is($node->safe_psql('postgres', 'SELECT memory_max_keys FROM rl_stats_info'),
	'400000', 'and the memory store has the new size');

$node->stop;
done_testing();
