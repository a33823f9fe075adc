# rl_gc's memory follows its batch, not the table: a call that scans a
# million rows and deletes none runs in a backend whose address space is
# capped (prlimit) at its size before the call plus 16 MB.  A leak of a
# few bytes per row scanned (the 30 bytes rl_gc once leaked come to 30 MB
# here) ends in "out of memory" instead.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $rows = 1_000_000;
my $margin_mb = 16;

plan skip_all => 'needs prlimit (util-linux) and /proc'
  unless system('prlimit --version >/dev/null 2>&1') == 0
  && -r "/proc/$$/status";

my $node = PostgreSQL::Test::Cluster->new('gc_memory');
$node->init;
# a pinned clock, so no row refills to idle while the test runs; no
# autovacuum, so nothing replans the scan in the middle
$node->append_conf('postgresql.conf',
	"ratelimit.now_override = '2026-01-01 00:00:00+00'");
$node->append_conf('postgresql.conf', "autovacuum = off");
$node->start;

# Every row is drained and refills over ten days: none is idle, so rl_gc
# scans them all and deletes nothing.
my $fill = sub {
	my ($first, $last) = @_;
	$node->safe_psql('postgres', qq{
		INSERT INTO rate_limits (name, key, shard, value, ts)
		SELECT 'gc_mem', i::text, 0, 0, '2026-01-01 00:00:00+00'
		FROM generate_series($first, $last) AS i;
		ANALYZE rate_limits;
	});
};
$node->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('gc_mem', 'token bucket', 1, '1 day', capacity => 10);
});
$fill->(1, 10);

# The session under test loads the library and prepares its plans on a
# small table first, so what the capped call allocates is the scan's own.
my $session = $node->background_psql('postgres', on_error_stop => 0);
is($session->query_safe('SELECT rl_gc(10)'), '0', 'warm-up: nothing idle');
$fill->(11, $rows);
my $pid = $session->query_safe('SELECT pg_backend_pid()');

my $status = slurp_file("/proc/$pid/status");
$status =~ /^VmSize:\s+(\d+) kB/m or die "no VmSize in /proc/$pid/status";
my $cap = ($1 + $margin_mb * 1024) * 1024;
my $out = `prlimit --pid $pid --as=$cap 2>&1`;
is($?, 0, "prlimit capped the backend's address space at $cap bytes")
  or diag($out);

my ($removed, $failed) = $session->query('SELECT rl_gc(10)');
is($failed, 0, "rl_gc scanned $rows rows within $margin_mb MB")
  or diag($session->{stderr});
is($removed, '0', 'and deleted none of them');
is($node->safe_psql('postgres', 'SELECT count(*) FROM rate_limits'),
	$rows, 'every row is still there');

$session->quit;
$node->stop;
done_testing();
