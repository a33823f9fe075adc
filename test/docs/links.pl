#!/usr/bin/env perl
# Every link in README.md and docs/*.md that points into the repository
# resolves: the file exists, and a #fragment names a heading of it (as
# GitHub makes anchors of headings).  Links to other sites are not
# fetched.  Exits non-zero, naming each broken link, when any is broken.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;

chdir(dirname(__FILE__) . '/../..') or die "cannot enter the repository\n";
my @files = ('README.md', glob('docs/*.md'));
my %anchors;

# The anchors of a Markdown file's headings, GitHub style.
sub anchors_of {
	my ($file) = @_;
	return $anchors{$file} if $anchors{$file};
	open my $fh, '<', $file or return undef;
	my (%seen, %set);
	my $fence = 0;
	while (my $line = <$fh>) {
		$fence = !$fence if $line =~ /^\s*```/;
		next if $fence;
		next unless $line =~ /^#{1,6}\s+(.*?)\s*#*\s*$/;
		my $slug = lc $1;
		$slug =~ s/`//g;
		$slug =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;
		$slug =~ s/[^\w\- ]//g;
		$slug =~ s/ /-/g;
		my $n = $seen{$slug}++;
		$set{$n ? "$slug-$n" : $slug} = 1;
	}
	close $fh;
	return $anchors{$file} = \%set;
}

my ($links, @broken) = (0);
for my $file (@files) {
	open my $fh, '<', $file or die "cannot read $file\n";
	my $fence = 0;
	while (my $line = <$fh>) {
		my $ln = $.;
		$fence = !$fence if $line =~ /^\s*```/;
		next if $fence;
		while ($line =~ /\[[^\]]*\]\(([^)\s]+)\)/g) {
			my $target = $1;
			next if $target =~ m{^[a-z][a-z0-9+.-]*:}i;	# another site, mail
			$links++;
			my ($path, $frag) = split /#/, $target, 2;
			my $dest = $path eq '' ? $file :
				File::Spec->abs2rel(File::Spec->rel2abs($path, dirname($file)));
			if ($path ne '' && !-e $dest) {
				push @broken, "$file:$ln: $target (no file $dest)";
				next;
			}
			next unless defined $frag && $frag ne '';
			next if -d $dest;
			my $set = anchors_of($dest);
			push @broken, "$file:$ln: $target (no heading #$frag in $dest)"
				unless $set && $set->{$frag};
		}
	}
	close $fh;
}
print STDERR "broken link: $_\n" for @broken;
printf "links: %d checked in %d files, %d broken\n", $links, scalar @files, scalar @broken;
exit(@broken ? 1 : 0);
