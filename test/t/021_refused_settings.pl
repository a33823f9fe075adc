# rl_refused at settings sql/refused.sql cannot set: the largest sizes in
# range (ratelimit.refused_max_names = 4000, ratelimit.refused_top_k =
# 1000, over 1 GB of sketches), read name by name; and windows of one
# second, to see that a ratelimit.now_override in the future neither stops
# the windows turning for everyone nor, read, empties them.
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

# Windows of one second.
$node = start_node('clock', q{
ratelimit.refused_window = 1
});

# A refusal at a clock in the future, then one at the real clock: the
# windows go on turning at the real clock, and both keys drop out.
$node->safe_psql('postgres', q{
	SELECT rl_stats_reset();
	SET ratelimit.now_override = '2100-01-01 00:00:00+00';
	SELECT rl_limit('w', 'future'), rl_limit('w', 'future');
	RESET ratelimit.now_override;
	SELECT rl_limit('w', 'now'), rl_limit('w', 'now');
});
sleep 3;
is($node->safe_psql('postgres', $keys), '',
	'a clock in the future does not stop the windows turning');

# A reader whose clock is in the future does not empty the windows.
like(
	$node->safe_psql('postgres', qq{
	SELECT rl_stats_reset();
	SELECT rl_limit('v', 'p'), rl_limit('v', 'p');
	SET ratelimit.now_override = '2100-01-01 00:00:00+00';
	$keys;
}),
	qr/^v:p:1$/m,
	'a reader with a clock in the future empties nothing');

$node->stop;
done_testing();
