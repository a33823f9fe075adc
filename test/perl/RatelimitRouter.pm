# RatelimitRouter: make a PostgreSQL::Test::Cluster node the PL/Proxy
# router in front of partition nodes, as docs/scaling.md's recipe does.
# Shared by test/t/004_router.pl and test/bench/router.pl.
package RatelimitRouter;

use strict;
use warnings;

use Exporter 'import';
use File::Basename qw(dirname);

our @EXPORT_OK = qw(configure_router);

my $script = dirname(__FILE__) . '/../../router/ratelimit_router.sql';

# Run router/ratelimit_router.sql in $proxy's database postgres and point
# its cluster "ratelimit" at the database postgres of each node in
# @$parts, in order (p0, p1, ...).  Returns the script's psql exit code
# and error output; the cluster is configured only when the script ran.
sub configure_router
{
	my ($proxy, $parts) = @_;
	my ($ret, $out, $err) = $proxy->psql('postgres', undef,
		extra_params => [ '-v', 'ON_ERROR_STOP=1', '-f', $script ]);
	return ($ret, $err) if $ret != 0;

	my $user = $parts->[0]->safe_psql('postgres', 'SELECT current_user');
	my $options = join(', ', map {
		sprintf("p%d 'host=%s port=%d dbname=postgres'",
			$_, $parts->[$_]->host, $parts->[$_]->port)
	} 0 .. $#$parts);
	$proxy->safe_psql('postgres', qq{
		CREATE SERVER ratelimit FOREIGN DATA WRAPPER plproxy OPTIONS ($options);
		CREATE USER MAPPING FOR PUBLIC SERVER ratelimit OPTIONS (user '$user');
	});
	return ($ret, $err);
}

1;
