#!/usr/bin/env perl
# Every link in README.md, the other Markdown files at the top of the
# repository (CHANGELOG.md, RELEASING.md) and docs/*.md that points into the
# repository resolves: the file or directory exists inside the repository,
# and a #fragment names a heading (as GitHub makes anchors of headings) or
# an explicit anchor of the file it points to, in this file or in another.
# Inline links ([text](target), also when the text runs over several lines),
# images and reference links ([text][label], [label]: target) are checked;
# links inside code (fenced blocks, `spans`) are not links.  Every file in
# docs/ must be reachable from README.md through such links.  Links to
# other sites are not fetched.  Exits non-zero, naming each broken link,
# when any is broken.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;

chdir(dirname(__FILE__) . '/../..') or die "cannot enter the repository\n";
my @files = ((sort glob('*.md')), (sort glob('docs/*.md')));
my (%anchors, %text);

# A file's text with code blanked out: fenced blocks and inline code spans
# become spaces (newlines kept, so line numbers stay right), so that nothing
# in them is taken for a link or a heading.
sub text_of {
	my ($file) = @_;
	return $text{$file} if exists $text{$file};
	open my $fh, '<:encoding(UTF-8)', $file or return $text{$file} = undef;
	local $/;
	my $t = <$fh>;
	close $fh;
	my $blank = sub { (my $s = shift) =~ s/[^\n]/ /g; $s };
	# fenced code blocks: ``` or ~~~, closed by the same fence (or the end)
	$t =~ s{^([ ]{0,3})(`{3,}|~{3,})[^\n]*\n.*?(?:^[ ]{0,3}\2[`~]*[ \t]*$|\z)}{$blank->($&)}gems;
	# inline code spans: a run of backticks up to the same run
	$t =~ s{(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)}{
		my ($f, $c) = ($1, $2);
		$f . ($c =~ /\n\s*\n/ ? $c : $blank->($c)) . $f
	}gse;
	return $text{$file} = $t;
}

# GitHub's anchor of a heading's text.
sub slug {
	my ($h) = @_;
	$h =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;	# a link: its text
	$h =~ s/<[^>]*>//g;			# HTML tags
	$h = lc $h;
	$h =~ s/[^\w\- ]//g;			# punctuation, backticks included
	$h =~ s/ /-/g;
	return $h;
}

# The anchors of a Markdown file: its headings, GitHub style (a repeated
# heading gets -1, -2...), and explicit <a name="..."> or id="..." ones.
sub anchors_of {
	my ($file) = @_;
	return $anchors{$file} if $anchors{$file};
	open my $fh, '<:encoding(UTF-8)', $file or return undef;
	my (%seen, %set);
	my ($fence, $prev) = ('', undef);
	while (my $line = <$fh>) {
		chomp $line;
		if ($fence eq '' && $line =~ /^ {0,3}(`{3,}|~{3,})/) {
			$fence = $1;
			$prev = undef;
			next;
		}
		if ($fence ne '') {
			$fence = '' if $line =~ /^ {0,3}\Q$fence\E[`~]*\s*$/;
			next;
		}
		my $heading;
		if ($line =~ /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/) {
			$heading = $1;
		} elsif (defined $prev && $prev =~ /\S/ && $line =~ /^ {0,3}(=+|-+)\s*$/
			&& $prev !~ /^\s*([-*+]|\d+[.)]|>|\|)/) {
			$heading = $prev;		# setext: the line above
			$heading =~ s/^\s+|\s+$//g;
		}
		if (defined $heading) {
			# inline code in a heading keeps its text, without backticks
			$heading =~ s/`//g;
			my $slug = slug($heading);
			my $n = $seen{$slug}++;
			$set{$n ? "$slug-$n" : $slug} = 1;
		}
		$set{$1} = 1 while $line =~ /<a\s[^>]*\bname="([^"]+)"/g;
		$set{$1} = 1 while $line =~ /<[a-z][^>]*\bid="([^"]+)"/gi;
		$prev = $line;
	}
	close $fh;
	return $anchors{$file} = \%set;
}

my ($links, @broken, %linked) = (0);

# Check one link target found in $file at line $ln.
sub check {
	my ($file, $ln, $target) = @_;
	return if $target =~ m{^[a-z][a-z0-9+.-]*:}i;	# another site, mail
	$links++;
	my ($path, $frag) = split /#/, $target, 2;
	my $dest = $path eq '' ? $file :
		File::Spec->abs2rel(File::Spec->rel2abs($path, dirname($file)));
	if ($dest =~ m{^\.\.(/|$)}) {
		push @broken, "$file:$ln: $target (outside the repository)";
		return;
	}
	if ($path ne '' && !-e $dest) {
		push @broken, "$file:$ln: $target (no file $dest)";
		return;
	}
	$linked{$dest} = 1;
	return unless defined $frag && $frag ne '';
	if (-d $dest) {
		push @broken, "$file:$ln: $target (a fragment on a directory)";
		return;
	}
	my $set = anchors_of($dest);
	push @broken, "$file:$ln: $target (no heading #$frag in $dest)"
		unless $set && $set->{$frag};
}

my %graph;
for my $file (@files) {
	my $t = text_of($file);
	defined $t or die "cannot read $file\n";
	my $line_at = sub { 1 + (substr($t, 0, $_[0]) =~ tr/\n//) };
	my %defs;
	# reference definitions: [label]: target
	while ($t =~ /^ {0,3}\[([^\]]+)\]:[ \t]*<?([^\s>]+)>?/mg) {
		$defs{lc $1} = 1;
		my $ln = $line_at->($-[0]);
		%linked = ();
		check($file, $ln, $2);
		$graph{$file}{$_} = 1 for keys %linked;
	}
	# inline links and images: [text](target "title"), text over lines too
	while ($t =~ /\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^\s()<>]+)>?(?:\s+"[^"]*")?\s*\)/g) {
		my ($label, $target, $at) = ($1, $2, $-[0]);
		next if $label =~ /\n[ \t]*\n/;		# not within one paragraph
		%linked = ();
		check($file, $line_at->($at), $target);
		$graph{$file}{$_} = 1 for keys %linked;
	}
	# reference links: [text][label] and [label][]
	while ($t =~ /\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\[([^\]]*)\]/g) {
		my $label = lc($2 ne '' ? $2 : $1);
		next if $defs{$label};
		push @broken, "$file:" . $line_at->($-[0]) . ": [$label] (no definition)";
	}
}

# Every file in docs/ can be reached from README.md.
my %seen = ('README.md' => 1);
my @queue = ('README.md');
while (my $f = shift @queue) {
	for my $to (keys %{$graph{$f} || {}}) {
		next if $seen{$to}++;
		push @queue, $to if $to =~ /\.md$/ && $graph{$to};
	}
}
for my $doc (grep { m{^docs/} } @files) {
	push @broken, "$doc: not linked from README.md (nor from a file it links to)"
		unless $seen{$doc};
}

print STDERR "broken link: $_\n" for @broken;
printf "links: %d checked in %d files, %d broken\n", $links, scalar @files, scalar @broken;
exit(@broken ? 1 : 0);
