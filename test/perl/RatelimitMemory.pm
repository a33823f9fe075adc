# RatelimitMemory: a node that preloads ratelimit, with the clock pinned and
# the memory limit 'm' (10 an hour) defined, and the memory store's files.
package RatelimitMemory;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT_OK = qw(memory_node memory_files);

# A started node named $name; $conf is appended to postgresql.conf.
sub memory_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ratelimit'
ratelimit.now_override = '2030-01-01 00:00:00+00'
$conf
});
	$node->start;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION ratelimit;
		SELECT rl_define('m', 'token bucket', 10, '1 hour', storage => 'memory');
	});
	return $node;
}

# The state file a clean shutdown writes, and the marker of a running server.
sub memory_files
{
	my ($node) = @_;
	my $dir = $node->data_dir . '/pg_stat';
	return ("$dir/ratelimit_memory.state", "$dir/ratelimit_memory.running");
}

1;
