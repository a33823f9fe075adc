#!/usr/bin/env perl
# The SQL examples of docs pages, run and checked against the output the
# page shows.  Usage: examples.pl PAGE.md...  (psql from PATH, or from the
# directory in $RL_BIN; the server from PGHOST, PGPORT and PGUSER, a
# superuser).
#
# The convention, stated at the top of each page under this check:
#
# - Every ```sql block runs, in the order of the page, in one psql session
#   (psql -X: no psqlrc, default settings) on a fresh database in which
#   CREATE EXTENSION ratelimit has run and nothing else.  A page that
#   shows times pins them itself, in its own SQL (SET timezone, SET
#   ratelimit.now_override), where the reader sees it.
# - The ```text block right after a ```sql block (nothing but blank lines
#   between) is what psql prints for it: results, notices and errors, an
#   error as "ERROR:  ..." without psql's "psql:file:line: " prefix.
#   Trailing blanks of each line and blank lines at the end of the block
#   are not compared.  A ```sql block with no such ```text block must
#   print nothing.
# - Roles a page creates (CREATE ROLE name) are cluster-wide: they are
#   dropped before the page runs and after it.
#
# Exits non-zero when any block's output differs, naming the page, the
# block and its line, with a diff.
use strict;
use warnings;
use File::Temp qw(tempdir);

my $bin = $ENV{RL_BIN} ? "$ENV{RL_BIN}/" : '';
my $psql = "${bin}psql";
my $db = 'ratelimit_docs_example';
my $tmp = tempdir(CLEANUP => 1);
my $failed = 0;
$| = 1;

# The ```sql blocks of a page: [line, sql, expected output or undef].
sub blocks_of {
	my ($page) = @_;
	open my $fh, '<:encoding(UTF-8)', $page or die "cannot read $page: $!\n";
	my @lines = <$fh>;
	close $fh;
	my (@blocks, $cur, $fence, $lang, $start, $body);
	my $after_sql;		# the last sql block, while only blank lines follow it
	for my $i (0 .. $#lines) {
		my $l = $lines[$i];
		if (!defined $fence) {
			if ($l =~ /^ {0,3}(`{3,}|~{3,})\s*([\w-]*)/) {
				($fence, $lang, $start, $body) = ($1, $2, $i + 1, '');
				next;
			}
			$after_sql = undef if $l =~ /\S/;
			next;
		}
		if ($l =~ /^ {0,3}\Q$fence\E[`~]*\s*$/) {
			if ($lang eq 'sql') {
				push @blocks, [$start, $body, undef];
				$after_sql = $blocks[-1];
			} else {
				$after_sql->[2] = $body if $after_sql && $lang eq 'text';
				$after_sql = undef;
			}
			undef $fence;
			next;
		}
		$body .= $l;
	}
	die "$page: a fence opened at line $start is never closed\n" if defined $fence;
	return @blocks;
}

# Text as compared: no trailing blanks, no blank lines at the end.
sub canonical {
	my ($t) = @_;
	$t //= '';
	$t =~ s/[ \t]+$//mg;
	$t =~ s/\n*\z/\n/;
	$t = '' if $t eq "\n";
	return $t;
}

sub psql_c {
	my ($dbname, $sql) = @_;
	system($psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", $dbname,
		"-c", "SET client_min_messages = warning", "-c", $sql) == 0
		or die "psql -c '$sql' failed\n";
}

# Roles named by CREATE ROLE in the page's SQL, dropped if they exist.
sub drop_roles {
	my @roles = @_;
	psql_c('postgres', qq{DROP ROLE IF EXISTS "$_"}) for @roles;
}

for my $page (@ARGV) {
	my @blocks = blocks_of($page);
	my @roles = do {
		my %r;
		for my $b (@blocks) { $r{lc $1} = 1 while $b->[1] =~ /\bCREATE\s+ROLE\s+"?(\w+)/gi }
		sort keys %r;
	};
	drop_roles(@roles);
	psql_c('postgres', qq{DROP DATABASE IF EXISTS $db});
	psql_c('postgres', qq{CREATE DATABASE $db});
	psql_c($db, 'CREATE EXTENSION ratelimit');

	# One script: each block, then a marker psql echoes.
	my $script = "$tmp/page.sql";
	open my $out, '>:encoding(UTF-8)', $script or die "cannot write $script: $!\n";
	for my $n (0 .. $#blocks) {
		print $out $blocks[$n][1];
		print $out "\n\\echo '\@\@ratelimit-block-$n\@\@'\n";
	}
	close $out;
	my $got = do {
		local $/;
		open my $ph, '-|:encoding(UTF-8)', "'$psql' -X -q -d $db -f '$script' 2>&1"
			or die "cannot run $psql: $!\n";
		my $t = <$ph>;
		close $ph;
		$t // '';
	};
	psql_c('postgres', qq{DROP DATABASE $db});
	drop_roles(@roles);

	$got =~ s/^psql:[^\n]*?:\d+: (?=(?:ERROR|WARNING|NOTICE|INFO|DEBUG|LOG|FATAL):)//mg;
	my @outputs = split /^\@\@ratelimit-block-\d+\@\@\n/m, $got, -1;
	my $bad = 0;
	for my $n (0 .. $#blocks) {
		my ($line, undef, $want) = @{$blocks[$n]};
		my $have = canonical($outputs[$n]);
		$want = canonical($want);
		next if $have eq $want;
		$bad++;
		print STDERR "$page: block " . ($n + 1) . " (```sql at line $line): output differs"
			. (defined $blocks[$n][2] ? '' : ' (the page shows none)') . "\n";
		my ($w, $h) = ("$tmp/shown", "$tmp/printed");
		for ([$w, $want], [$h, $have]) {
			open my $fh, '>:encoding(UTF-8)', $_->[0] or die;
			print $fh $_->[1];
			close $fh;
		}
		system('diff', '-u', '--label', "$page (shown)", '--label', 'psql (printed)', $w, $h);
	}
	if ($bad) {
		$failed++;
		printf STDERR "%s: %d of %d blocks differ\n", $page, $bad, scalar @blocks;
	} else {
		printf "%s: %d blocks, every output as shown\n", $page, scalar @blocks;
	}
}
exit($failed ? 1 : 0);
