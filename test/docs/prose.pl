#!/usr/bin/env perl
# The prose of README.md and docs/*.md reads in short sentences, and its
# unlinked cross-references point at something that exists.
#
# Sentences: the prose is what is left when fenced code blocks, headings,
# HTML comments and link targets are taken out; an inline code span counts
# as one word.  Each paragraph, list item and table cell is split into
# sentences at a full stop, question or exclamation mark followed by a
# space and a word that does not start in lower case.  No sentence may have
# more than 60 words.  The average per page is printed.
#
# Cross-references that are not links (links.pl checks those):
#   - a repository path in backticks or bare in the text (`docs/foo.md`,
#     src/direct.c, `sql/*.sql`) must exist (a glob must match);
#   - "see the X section", "(see X)", "see X in docs/foo.md", "described in
#     X", "under X in docs/foo.md": X, when it is a capitalised heading name,
#     must be a heading of the page named (or of this page).
# Exits non-zero, naming each long sentence and broken reference.
use strict;
use warnings;
use File::Basename qw(dirname);

chdir(dirname(__FILE__) . '/../..') or die "cannot enter the repository\n";
my @files = ('README.md', (sort glob('docs/*.md')));
my $MAX = 60;
my $roots = join '|', map { quotemeta } grep { -d $_ }
	qw(docs src sql expected test debian examples router);
my (@long, @broken, %headings);
# Files the docs name as not there (yet).
my %absent = map { $_ => 1 } qw(debian/watch debian/upstream/metadata);
my ($all_words, $all_sentences) = (0, 0);

sub read_file {
	my ($file) = @_;
	open my $fh, '<:encoding(UTF-8)', $file or die "cannot read $file\n";
	local $/;
	my $t = <$fh>;
	close $fh;
	return $t;
}

# The headings of a page, lower case, without Markdown.
sub headings_of {
	my ($file) = @_;
	return $headings{$file} if $headings{$file};
	my %h;
	my $t = read_file($file);
	$t =~ s/^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1[`~]*[ \t]*$|\z)//gms;
	for my $line (split /\n/, $t) {
		next unless $line =~ /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
		(my $name = lc $1) =~ s/[`*_]|\[|\]\([^)]*\)|\]//g;
		$h{$name} = 1;
		$h{$1} = 1 if $name =~ /^(.*?)\s*[(:]/;	# "Shards (hot keys)"
	}
	return $headings{$file} = \%h;
}

# A heading X names in $file, or in $page when one is given.
sub check_section {
	my ($file, $ln, $name, $page) = @_;
	my $in = defined $page ? $page : $file;
	if (!-f $in) {
		push @broken, "$file:$ln: \"$name\" in $in (no such file)";
		return;
	}
	(my $key = lc $name) =~ s/[`*_]//g;
	$key =~ s/^the\s+//;
	$key =~ s/\s+section$//;
	my $h = headings_of($in);
	return if $h->{$key};
	return if grep { index($_, $key) == 0 } keys %$h;	# a heading's start
	push @broken, "$file:$ln: see \"$name\" (no heading of that name in $in)";
}

# A path into the repository: it exists, or as a glob it matches.
sub check_path {
	my ($file, $ln, $path) = @_;
	$path =~ s/[#:].*$//;			# a fragment, a line number
	$path =~ s/[.,;)]+$//;
	return if $path =~ /[<>{}\$]|NAME|\bX\b|\.\.\./;	# a pattern, not a path
	return if -e $path || -e "$path.c";		# a program and its source
	return if $absent{$path};
	return if $path =~ /[*?\[]/ && glob($path);
	return if $path =~ m{/$} && -d $path;
	push @broken, "$file:$ln: $path (no such file in the repository)";
}

for my $file (@files) {
	my $t = read_file($file);
	my ($words, $sentences) = (0, 0);
	my $dirof = dirname($file);

	# Paths in backticks and bare ones, before code is taken out; not in
	# fenced blocks (commands there may name files they create).
	my $fenced = $t;
	$fenced =~ s{^([ ]{0,3})(`{3,}|~{3,})[^\n]*\n.*?(?:^[ ]{0,3}\2[`~]*[ \t]*$|\z)}{(my $s = $&) =~ s/[^\n]//g; $s}gems;
	my @lines = split /\n/, $fenced, -1;
	for my $i (0 .. $#lines) {
		my $line = $lines[$i];
		$line =~ s/\]\([^)]*\)/]/g;	# link targets: links.pl's job
		while ($line =~ m{(?<![\w/.\$-])((?:$roots)/[\w./*?-]*)}g) {
			check_path($file, $i + 1, $1);
		}
	}

	# Prose: no fenced code, no HTML comments, no headings; links become
	# their text, code spans one word.
	my $p = $t;
	$p =~ s{^([ ]{0,3})(`{3,}|~{3,})[^\n]*\n.*?(?:^[ ]{0,3}\2[`~]*[ \t]*$|\z)}{(my $s = $&) =~ s/[^\n]//g; "\n" x 0 . $s}gems;
	$p =~ s{<!--.*?-->}{(my $s = $&) =~ s/[^\n]//g; $s}gse;
	$p =~ s{(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)}{
		my $c = $2; my $n = ($c =~ tr/\n//); 'CODE' . ("\n" x $n)
	}gse;
	# a link's text is marked (\x01) so that it is not taken for an
	# unlinked reference below
	$p =~ s/!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)/\x01$1\x01/g;
	$p =~ s/\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\[[^\]]*\]/\x01$1\x01/g;
	$p =~ s/<[^>\n]*>//g;

	# Blocks: paragraphs, list items, table cells; each with its line.
	my @blocks;
	my ($cur, $start) = ('', 0);
	my @pl = split /\n/, $p, -1;
	my $flush = sub { push @blocks, [$start, $cur] if $cur =~ /\S/; $cur = '' };
	for my $i (0 .. $#pl) {
		my $line = $pl[$i];
		if ($line =~ /^\s*$/ || $line =~ /^ {0,3}#{1,6}\s/ || $line =~ /^ {0,3}(=+|-+)\s*$/
			|| $line =~ /^\s*\[[^\]]+\]:\s/) {
			$flush->();
			next;
		}
		if ($line =~ /^\s*\|/) {		# a table row: each cell
			$flush->();
			next if $line =~ /^\s*\|[\s:|-]*$/;
			push @blocks, [$i + 1, $_] for grep { /\S/ } split /\|/, $line;
			next;
		}
		if ($line =~ /^\s*(?:[-*+]|\d+[.)])\s+/) {	# a list item starts
			$flush->();
		}
		$start = $i + 1 if $cur eq '';
		$cur .= "$line ";
	}
	$flush->();

	for my $b (@blocks) {
		my ($ln, $text) = @$b;
		my $refs = $text;
		$text =~ s/\x01//g;
		$text =~ s/^\s*(?:[-*+>]|\d+[.)])\s+//;
		$text =~ s/\s+/ /g;
		# sentence ends: . ! ? (and a closing quote or bracket) before a
		# word that is not lower case; not after e.g. / i.e. / etc.
		my @s = split /(?<![ (]e\.g\.)(?<![ (]i\.e\.)(?<=[.!?]|[.!?][)"'*])\s+(?=[^a-z\s])/, $text;
		for my $s (@s) {
			my @w = grep { /[\w]/ } split /\s+/, $s;
			next unless @w;
			$words += @w;
			$sentences++;
			if (@w > $MAX) {
				my $head = join ' ', @w[0 .. 7];
				push @long, sprintf "%s:%d: %d words: %s ...", $file, $ln, scalar @w, $head;
			}
		}
		# unlinked references to sections
		while ($refs =~ /\b(?:[Ss]ee|described in|explained in)\s+(?:the\s+)?"?((?:[A-Z][\w-]*|CODE)(?:\s+(?:[A-Z][\w-]*|CODE|of|and|a|the))*?)"?\s+(section|in\s+(\S+\.md))\b/g) {
			my ($name, $page) = ($1, $3);
			$page = "$dirof/$page" if defined $page && $dirof ne '.' && $page !~ m{^docs/};
			check_section($file, $ln, $name, $page);
		}
		while ($refs =~ /\(see\s+((?:[A-Z][\w-]*)(?:\s+[A-Z][\w-]*)*)\)/g) {
			check_section($file, $ln, $1, undef);
		}
	}
	$all_words += $words;
	$all_sentences += $sentences;
	printf "%-28s %5d sentences, %6d words, %5.1f words a sentence\n",
		$file, $sentences, $words, $sentences ? $words / $sentences : 0;
}

print STDERR "sentence over $MAX words: $_\n" for @long;
print STDERR "broken reference: $_\n" for @broken;
printf "prose: %d sentences, %d words, %.1f words a sentence; %d over %d words, %d broken references\n",
	$all_sentences, $all_words, $all_sentences ? $all_words / $all_sentences : 0,
	scalar @long, $MAX, scalar @broken;
exit(@long || @broken ? 1 : 0);
