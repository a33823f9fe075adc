# RatelimitPsql: psql's output without trailing newlines, whatever the
# harness does.  Minor releases of PostgreSQL's TAP harness differ (16.x
# among them) on whether PostgreSQL::Test::Cluster's psql and safe_psql,
# and PostgreSQL::Test::BackgroundPsql's query, leave the trailing newline
# of psql's output on it.  Every test in test/t loads this module, which
# wraps the three so that they return the output with every trailing
# newline removed: the same text under either harness, so that the tests
# compare it with expected text that ends without one.  (A last row that
# is empty, such as a void function's, is removed with it: a test that
# needs to see one puts another row after it.)
package RatelimitPsql;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::BackgroundPsql;

sub trim_newlines
{
	my ($s) = @_;
	$s =~ s/(?:\r?\n)+\z// if defined $s;
	return $s;
}

no warnings 'redefine';

my $psql = \&PostgreSQL::Test::Cluster::psql;
*PostgreSQL::Test::Cluster::psql = sub {
	my ($self, $dbname, $sql, %params) = @_;
	if (wantarray)
	{
		my ($ret, $out, $err) = $psql->(@_);
		${ $params{stdout} } = trim_newlines(${ $params{stdout} })
		  if ref $params{stdout};
		return ($ret, trim_newlines($out), $err);
	}
	my $ret = $psql->(@_);
	${ $params{stdout} } = trim_newlines(${ $params{stdout} })
	  if ref $params{stdout};
	return $ret;
};

my $safe_psql = \&PostgreSQL::Test::Cluster::safe_psql;
*PostgreSQL::Test::Cluster::safe_psql = sub {
	return trim_newlines($safe_psql->(@_));
};

my $query = \&PostgreSQL::Test::BackgroundPsql::query;
*PostgreSQL::Test::BackgroundPsql::query = sub {
	if (wantarray)
	{
		my ($out, $ret) = $query->(@_);
		return (trim_newlines($out), $ret);
	}
	return trim_newlines(scalar $query->(@_));
};

1;
