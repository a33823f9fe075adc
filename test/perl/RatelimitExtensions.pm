# RatelimitExtensions: skip a TAP test whose third-party extension (pg_cron,
# PL/Proxy) has no package for the PostgreSQL major under test.
package RatelimitExtensions;

use strict;
use warnings;

use Exporter 'import';
use Test::More;

our @EXPORT_OK = qw(require_extension);

# Skip the whole test unless extension $name is installed in the
# installation whose pg_config comes first in PATH.
sub require_extension
{
	my ($name) = @_;
	chomp(my $share = `pg_config --sharedir`);
	chomp(my $version = `pg_config --version`);
	plan skip_all => "$name is not installed for $version"
	  unless -f "$share/extension/$name.control";
	return;
}

1;
