#!/usr/bin/perl
# test/sql-edition/shape.pl: the SQL edition declares again the C
# edition's types, tables and functions; prove the two declarations equal.
#
#   shape.pl C.txt SQL.txt docs/managed.md
#
# C.txt and SQL.txt are shape.sql's output on each edition.  For every
# object the SQL edition has, each fact must be the C edition's, but for
# the exceptions below (each with its reason).  A comment may also be the
# C edition's with clauses ("; "-separated) left out, the ones that tell
# of what the SQL edition does not have, its first clause kept.  Every
# function, table and type of the C edition that the SQL edition lacks
# must be in %lacks, so that one added to the C edition later fails here
# until the SQL edition has it or %lacks says why not; and docs/managed.md
# must name the documented ones in a row the SQL edition does not have.
# An exception or a lack that is no longer needed fails too.
use strict;
use warnings;

my ($c_file, $sql_file, $doc_file) = @ARGV;
die "usage: shape.pl C.txt SQL.txt docs/managed.md\n" unless $doc_file;

# Facts of the SQL edition that are not the C edition's, and why.
my %differs = (
	map({ ("function $_|security definer" =>
		'it calls the _rl_ helpers, which only the owner may call') }
		'rl_now()',
		'rl_token_bucket(double precision,interval,double precision,double precision,integer,text)',
		'rl_fixed_window(double precision,interval,double precision,double precision,integer,timestamp with time zone,text,text)',
		'rl_sliding_window(double precision,interval,timestamp with time zone,text)',
		'rl_inline_policy(text)'),
	'function rl_definitions_guard()|security definer' =>
		'it calls the _rl_ helpers, which only the owner may call, for a hand edit by any role',
	'table rl_definitions|comment on column shadow' =>
		'the C edition\'s comment adds that its refusals count in rl_stats, which needs shared memory',
	map({ ("table rl_definitions|comment on column $_" =>
		'the column\'s comment tells of a feature the SQL edition does not have yet') }
		qw(storage time_zone ipv4_prefix ipv6_prefix)),
);
# The time zone of a plan or a key, for a calendar limit, which the SQL
# edition does not have yet: the column time_zone of rl_plans and
# rl_overrides, last, and the last argument time_zone of rl_plan,
# rl_override and rl_assign.  Each of these functions of the SQL edition
# is the C edition's without it (every other fact the same).
my $no_zone = 'no calendar windows: a plan or a key has no time zone of its own yet';
$differs{"table rl_plans|column 7"} = $no_zone;
$differs{"table rl_plans|comment on column time_zone"} = $no_zone;
$differs{"table rl_overrides|column 8"} = $no_zone;
$differs{"table rl_overrides|comment on column time_zone"} = $no_zone;
my %without_zone = map { ("function $_)" => "function $_,text)") }
	'rl_plan(text,text,double precision,interval,double precision,double precision',
	'rl_override(text,text,double precision,interval,double precision,double precision',
	'rl_assign(text,text,text';
my $zone_argument = ', time_zone text DEFAULT NULL::text';

# Objects only the SQL edition has, and why.
my %sql_only = (
	'function rl_sql_edition()' => 'says which edition is installed, for a later upgrade in place',
);
# Names of the C edition's functions, tables and types that the SQL
# edition lacks.  "internal" ones are not in docs/managed.md's table.
my %lacks = (
	(map { $_ => 'allow and deny lists' } qw(rl_allow rl_deny rl_unlist rl_access)),
	(map { $_ => 'internal: the memory store, in shared memory' }
		qw(rl_gc_memory rl_memory_forget)),
	(map { $_ => 'internal: statistics, in shared memory (the views rl_stats, rl_refused)' }
		qw(rl_stats_rows rl_stats_info_row rl_stats_reset rl_refused_rows)),
	rl_definitions_changed => 'internal: the C edition\'s definition cache',
	(map { $_ => 'internal: the C edition\'s role helpers; the SQL edition grants as 80_grants.sql says' }
		qw(rl_grant_admin rl_grant_app rl_grant_set rl_revoke_admin rl_revoke_app)),
);

sub facts {
	my ($file) = @_;
	my %f;
	open my $fh, '<', $file or die "$file: $!\n";
	while (<$fh>) {
		chomp;
		my ($obj, $prop, $value) = split /\|/, $_, 3;
		die "$file: bad line: $_\n" unless defined $value;
		$f{$obj}{$prop} = $value;
	}
	return \%f;
}
sub name_of { my ($obj) = @_; $obj =~ /^\w+ (\w+)/; return $1; }

my $c = facts($c_file);
my $sql = facts($sql_file);
my @fail;
my %used;

# A comment with some of the C edition's clauses left out.
sub clauses_of {
	my ($short, $long) = @_;
	return 0 if $short eq '<null>' || $long eq '<null>';
	my @s = split /; /, $short;
	my @l = split /; /, $long;
	return 0 unless $s[0] eq $l[0];
	for my $clause (@l) {
		shift @s if @s && $s[0] eq $clause;
	}
	return !@s;
}

for my $obj (sort keys %$sql) {
	if ($sql_only{$obj}) {
		$used{"only $obj"} = 1;
		push @fail, "$obj: listed as the SQL edition's alone, but the C edition has it"
			if $c->{$obj};
		next;
	}
	my $cobj = $without_zone{$obj} // $obj;
	unless ($c->{$cobj}) {
		push @fail, "$obj: the C edition has no such object";
		next;
	}
	$used{"zone $obj"} = 1 if $without_zone{$obj};
	my %props = (%{$c->{$cobj}}, %{$sql->{$obj}});
	for my $prop (sort keys %props) {
		my $cv = $c->{$cobj}{$prop} // '<missing>';
		my $sv = $sql->{$obj}{$prop} // '<missing>';
		next if $cv eq $sv;
		next if $without_zone{$obj} && $prop eq 'arguments' && $cv eq $sv . $zone_argument;
		next if $prop =~ /comment/ && clauses_of($sv, $cv);
		if ($differs{"$obj|$prop"}) {
			$used{"differs $obj|$prop"} = 1;
			next;
		}
		push @fail, "$obj: $prop differs\n  C edition:   $cv\n  SQL edition: $sv";
	}
}
for my $key (sort keys %differs) {
	push @fail, "exception no longer needed: $key" unless $used{"differs $key"};
}
for my $obj (sort keys %sql_only) {
	push @fail, "exception no longer needed: $obj" unless $used{"only $obj"};
}
for my $obj (sort keys %without_zone) {
	push @fail, "exception no longer needed: $obj without time_zone" unless $used{"zone $obj"};
}
my %c_of_zone = reverse %without_zone;

# What the SQL edition lacks: whole names, listed; a lacking overload of
# a name it has is never an exception.
my %sql_names = map { name_of($_) => 1 } keys %$sql;
my %lacking;
for my $obj (sort keys %$c) {
	next if $sql->{$obj} || $c_of_zone{$obj};
	my $name = name_of($obj);
	if ($sql_names{$name}) {
		push @fail, "$obj: the SQL edition has $name, but not this one";
	} else {
		$lacking{$name} = 1;
	}
}
for my $name (sort keys %lacking) {
	push @fail, "the SQL edition lacks $name: add it, or list it in shape.pl's %lacks with why"
		unless $lacks{$name};
}
for my $name (sort keys %lacks) {
	push @fail, "%lacks lists $name, but the SQL edition has it, or the C edition has not"
		unless $lacking{$name};
}

# docs/managed.md's table: a name in a row the SQL edition has is the SQL
# edition's; a lacking function, but for the internal ones, is named in a
# row it has not.
my %c_names = map { name_of($_) => 1 } keys %$c;
my %c_functions = map { name_of($_) => 1 } grep { /^function / } keys %$c;
my (%doc_yes, %doc_no);
open my $doc, '<', $doc_file or die "$doc_file: $!\n";
while (<$doc>) {
	next unless /^\| (.*) \| (.*) \| (.*) \|$/;
	my ($feature, $sqled) = ($1, $3);
	for my $name ($feature =~ /`(rl_\w+)`/g) {
		next unless $c_names{$name};
		if ($sqled eq 'yes') { $doc_yes{$name} = 1 } else { $doc_no{$name} = 1 }
	}
}
for my $name (sort keys %doc_yes) {
	push @fail, "$doc_file says the SQL edition has $name, but it has not" if $lacking{$name};
}
for my $name (sort keys %lacks) {
	next if $lacks{$name} =~ /^internal/ || !$c_functions{$name};
	push @fail, "$doc_file does not list $name in a row the SQL edition has not"
		unless $doc_no{$name};
}

if (@fail) {
	print STDERR "$_\n" for @fail;
	exit 1;
}
printf "%d objects of the SQL edition declared as the C edition's (%d facts); it lacks %d names, as listed\n",
	scalar(keys %$sql), scalar(map { keys %$_ } values %$sql), scalar(keys %lacking);
