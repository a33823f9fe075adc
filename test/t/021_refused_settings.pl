# rl_refused at settings sql/refused.sql cannot set: the largest sizes in
# range (ratelimit.refused_max_names = 4000, ratelimit.refused_top_k =
# 1000, over 1 GB of sketches), read name by name.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $keys = q{SELECT coalesce(string_agg(name || ':' || key || ':' || refusals, ' '
	ORDER BY name, key), '') FROM rl_refused};

# A server with the given settings and the limits 'w' and 'v'.
sub start_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'ratelimit'\n" . $conf);
	$node->start;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION ratelimit;
		SELECT rl_define('w', 'token bucket', 1, '1 hour');
		SELECT rl_define('v', 'token bucket', 1, '1 hour');
	});
	return $node;
}

# The largest sizes: the view is read, not refused for its size.
my $node = start_node('sizes', q{
ratelimit.refused_max_names = 4000
ratelimit.refused_top_k = 1000
});
my ($ret, $out, $err) = $node->psql('postgres', qq{
	SELECT rl_limit('w', 'a'), rl_limit('w', 'a'), rl_limit('v', 'b'),
		rl_limit('v', 'b');
	$keys;
});
is($ret, 0, 'the view is read at the largest sizes');
is($err, '', 'without an error');
like($out, qr/^v:b:1 w:a:1$/m, 'and lists the keys refused');
$node->stop;

done_testing();
