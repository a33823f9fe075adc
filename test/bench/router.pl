# make bench, scale-out row: pgbench on random keys among 100,000, the
# same clients against one ratelimit node directly and through a PL/Proxy
# proxy in front of four partitions (router/ratelimit_router.sql).  Prints
# one table; run by test/bench/run.sh with the TAP test environment.
use strict;
use warnings;

use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use RatelimitRouter qw(configure_router);
use Test::More;
use IPC::Run ();

my $here = dirname(__FILE__);
my $reps = $ENV{RL_BENCH_REPS} || 3;
my $seconds = $ENV{RL_BENCH_SECONDS} || 5;
my $clients = 8;
my $nparts = 4;

sub node_with_ratelimit
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', "fsync = off\nmax_connections = 50");
	$node->start;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION ratelimit;
		SELECT rl_define('keys', 'token bucket', 1e9, '1 second');
	});
	return $node;
}

my $single = node_with_ratelimit('single');
$single->safe_psql('postgres',
	q{SELECT count(*) FROM (SELECT rl_limit('keys', k) FROM generate_series(1, 100000) k) s});
my @parts = map { node_with_ratelimit("part$_") } 0 .. $nparts - 1;
my $proxy = PostgreSQL::Test::Cluster->new('proxy');
$proxy->init;
$proxy->append_conf('postgresql.conf', "fsync = off\nmax_connections = 50");
$proxy->start;
my ($ret, $err) = configure_router($proxy, \@parts);
die "the router script failed: $err" if $ret != 0;
$proxy->safe_psql('postgres',
	q{SELECT count(*) FROM (SELECT rl_limit('keys', k) FROM generate_series(1, 100000) k) s});

# transactions per second of one pgbench run against a node
sub tps
{
	my ($node) = @_;
	my ($stdout, $stderr);
	IPC::Run::run(
		[ 'pgbench', '-n', '-M', 'prepared', '-c', $clients, '-j', 2,
		  '-T', $seconds, '-f', "$here/keys.sql",
		  '-h', $node->host, '-p', $node->port, 'postgres' ],
		'>', \$stdout, '2>', \$stderr) or die "pgbench failed: $stderr";
	$stdout =~ /^tps = ([0-9.]+)/m or die "no tps in: $stdout";
	return $1;
}

sub median
{
	my @runs = sort { $a <=> $b } @_;
	return $runs[ int(($#runs) / 2) ];
}

# interleaved, so both see the same machine
my (@direct, @routed);
for (1 .. $reps)
{
	push @direct, tps($single);
	push @routed, tps($proxy);
}
my $d = median(@direct);
my $r = median(@routed);
# PostgreSQL::Test::Utils sends STDOUT to the test log; the table goes to
# the TAP output handle, which is the terminal.
my $out = Test::More->builder->output;
print $out sprintf("\n%-52s %12s %10s\n",
  "scale-out, $clients clients (median of $reps x ${seconds}s)", 'tps', 'ratio');
print $out sprintf("%-52s %12.0f %10s\n", 'one node, rl_limit directly (baseline)', $d, '1.00');
print $out sprintf("%-52s %12.0f %10.2f\n", "PL/Proxy router, $nparts partitions", $r, $r / $d);

$_->stop for ($single, @parts, $proxy);
ok(1, 'router benchmark ran');
done_testing();
