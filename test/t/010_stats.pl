# rl_stats (and rl_refused) on a server that preloads ratelimit and on one
# that does not: where the counters live, the bound on names, and what a clean restart, an
# immediate shutdown (everything) and a crash (nothing) keep.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $rows = q{SELECT string_agg(name || ':' || calls || '/' || granted || '/' || refused, ' ' ORDER BY name) FROM rl_stats};
my $info = q{SELECT storage || ' ' || names || '/' || max_names || ' untracked ' || untracked_calls FROM rl_stats_info};
my $refused = q{SELECT coalesce(string_agg(name || ':' || key || ':' || refusals || '/' || error, ' ' ORDER BY name, key), '') FROM rl_refused};

# Two grants and a refusal on 'a', then one call on each of 12 inline
# names: with room for 10 names, 'a' and the first 9 are tracked and the
# last 3 calls are counted only as untracked.  A tracked name goes on
# counting when the table is full.
sub calls
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		SELECT rl_define('a', 'token bucket', 2, '1 hour');
		SELECT rl_limit('a', 'k');
		SELECT rl_limit('a', 'k');
		SELECT rl_limit('a', 'k');
		SELECT rl_limit('n' || lpad(i::text, 2, '0'), 'k',
			config => rl_token_bucket(1, '1 hour'))
		FROM generate_series(1, 12) AS i;
		SELECT rl_limit('a', 'other');
	});
}

my $tracked = 'a:4/3/1 n01:1/1/0 n02:1/1/0 n03:1/1/0 n04:1/1/0 n05:1/1/0 '
  . 'n06:1/1/0 n07:1/1/0 n08:1/1/0 n09:1/1/0';

# Preloaded: shared memory, on every major.
my $pre = PostgreSQL::Test::Cluster->new('preloaded');
$pre->init;
$pre->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ratelimit'
ratelimit.stats_max_names = 10
restart_after_crash = on
});
$pre->start;
$pre->safe_psql('postgres', 'CREATE EXTENSION ratelimit');
calls($pre);
is($pre->safe_psql('postgres', $info), 'shared memory 10/10 untracked 3',
	'preloaded: shared memory, 10 names tracked, 3 calls past the bound');
is($pre->safe_psql('postgres', $rows), $tracked,
	'preloaded: every tracked name counted, names past the bound not');
is($pre->safe_psql('postgres', $refused), 'a:k:1/0',
	'preloaded: rl_refused has the one key refused');

$pre->restart;
is($pre->safe_psql('postgres', $rows), $tracked,
	'a clean restart keeps every counter');
is($pre->safe_psql('postgres', $refused), '',
	'a clean restart starts rl_refused empty (it is not written)');
is($pre->safe_psql('postgres', $info), 'shared memory 10/10 untracked 3',
	'a clean restart keeps the names and untracked calls');
ok(!-e $pre->data_dir . '/pg_stat/ratelimit.stat',
	'the file is removed once read');

# rl_stats_reset() frees the slots: new names are tracked again
$pre->safe_psql('postgres', q{
	SELECT rl_stats_reset();
	SELECT rl_limit('n12', 'k2', config => rl_token_bucket(1, '1 hour'));
});
is($pre->safe_psql('postgres', $rows), 'n12:1/1/0',
	'after rl_stats_reset() a name past the old bound is tracked');

# a crash: a backend killed, the postmaster restarts the others
my $victim = $pre->background_psql('postgres');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
$victim->{run}->kill_kill;
$pre->poll_query_until('postgres', 'SELECT true')
  or die 'the server did not come back after the crash';
is($pre->safe_psql('postgres', "SELECT count(*) FROM rl_stats"), '0',
	'after a crash the counters start from zero');
is($pre->safe_psql('postgres', $info), 'shared memory 0/10 untracked 0',
	'after a crash nothing is tracked');

# An immediate shutdown: the postmaster stops every other process with
# SIGQUIT (a session left open here too) and skips the shutdown
# checkpoint, so the next start recovers from the WAL, but it still exits
# normally and writes the counters.
$pre->safe_psql('postgres', q{
	SELECT rl_limit('a', 'k3');
	SELECT rl_limit('a', 'k3', 2);
});
my $open = $pre->background_psql('postgres');
$open->query_safe(
	q{SELECT rl_limit('n01', 'k4', config => rl_token_bucket(1, '1 hour'))});
my $log_offset = -s $pre->logfile;
$pre->stop('immediate');
$open->{run}->kill_kill;
ok(-e $pre->data_dir . '/pg_stat/ratelimit.stat',
	'an immediate shutdown writes the file');
$pre->start;
my $log = slurp_file($pre->logfile, $log_offset);
like($log, qr/received immediate shutdown request/,
	'the shutdown was an immediate one');
like($log, qr/database system was not properly shut down; automatic recovery in progress/,
	'the next start recovered from the WAL, as after a crash');
is($pre->safe_psql('postgres', $rows), 'a:2/1/1 n01:1/1/0',
	'an immediate shutdown keeps the counters, the open session\'s too');
is($pre->safe_psql('postgres', $info), 'shared memory 2/10 untracked 0',
	'an immediate shutdown keeps the names');
ok(!-e $pre->data_dir . '/pg_stat/ratelimit.stat',
	'the file is removed once read');
$pre->stop;

# Not preloaded.
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->append_conf('postgresql.conf', 'ratelimit.stats_max_names = 10');
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION ratelimit');
calls($plain);
is($plain->safe_psql('postgres', "SELECT floor(value) FROM rl_value('a', 'k')"),
	'0', 'not preloaded: the limiter works as ever');

if ($plain->pg_version >= 17)
{
	is($plain->safe_psql('postgres', $info), 'dsm registry 10/10 untracked 3',
		'not preloaded, 17+: the DSM registry, with the same bound');
	is($plain->safe_psql('postgres', $rows), $tracked,
		'not preloaded, 17+: every tracked name counted');
	is($plain->safe_psql('postgres', $refused), 'a:k:1/0',
		'not preloaded, 17+: rl_refused in the DSM registry');
	$plain->restart;
	is($plain->safe_psql('postgres', "SELECT count(*) FROM rl_stats"), '0',
		'not preloaded, 17+: a restart starts from zero');
	is($plain->safe_psql('postgres', $refused), '',
		'not preloaded, 17+: and rl_refused empty');
}
else
{
	my ($ret, $out, $err) = $plain->psql('postgres', q{
		SELECT count(*) FROM rl_stats;
		SELECT count(*) FROM rl_stats;
		SELECT count(*) FROM rl_refused;
		SELECT rl_stats_reset();
		SELECT storage, names FROM rl_stats_info;
	});
	is($out, "0\n0\n0\n\nunavailable|",
		'not preloaded, 15 and 16: no rows, in rl_refused neither');
	my @notices = $err =~ /NOTICE:  ratelimit statistics are not available/g;
	is(scalar @notices, 1, 'not preloaded, 15 and 16: one NOTICE per session');
	like($err, qr/shared_preload_libraries = 'ratelimit'/,
		'the NOTICE says what is needed');
}
$plain->stop;
done_testing();
