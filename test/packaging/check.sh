#!/usr/bin/env bash
# Packaging checks: META.json is valid PGXN metadata whose version matches
# the control file and debian/changelog, the changelog has an entry for it,
# and every install and upgrade script is shipped, with a path from each
# released version.  (Building, installing and testing the Debian package and
# the PGXN archive: deb.sh and pgxn.sh beside this file.)
set -euo pipefail
cd "$(dirname "$0")/../.."

fail=0
problem() { echo "packaging: $*" >&2; fail=1; }

control_version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" ratelimit.control)
[ -n "$control_version" ] || problem "ratelimit.control has no default_version"

# META.json: valid against the PGXN Meta Spec 1.0.0 (https://pgxn.org/spec/:
# required and optional keys and their types, licenses, semantic versions,
# prerequisite phases and relations, resources) and in agreement with the
# control file.
perl -MJSON::PP -e '
	local $/;
	open my $fh, "<", "META.json" or die "cannot open META.json\n";
	my $m = eval { JSON::PP->new->decode(<$fh>) } or die "META.json does not parse: $@";
	my @err;
	my $semver = qr/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;
	my $str = sub { defined $_[0] && !ref $_[0] && length $_[0] };
	my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1
		artistic_2 bsd freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1
		lgpl_3_0 mit mozilla_1_0 mozilla_1_1 openssl perl_5 postgresql qpl_1_0
		ssleay sun zlib open_source restricted unrestricted unknown);
	my %known = map { $_ => 1 } qw(name abstract description version maintainer
		license provides meta-spec prereqs release_status resources tags
		no_index generated_by);
	for my $k (qw(name abstract version maintainer license provides meta-spec)) {
		push @err, "lacks $k" unless exists $m->{$k};
	}
	for my $k (sort keys %$m) {
		push @err, "unknown key $k (custom keys start with x_)"
			unless $known{$k} || $k =~ /^[xX]_/;
	}
	push @err, "name must be 2 or more characters without spaces or slashes"
		unless $str->($m->{name}) && $m->{name} =~ m{^[^\s/\\\\[:cntrl:]]{2,}$};
	push @err, "abstract must be a string" unless $str->($m->{abstract});
	push @err, "version $m->{version} is not semantic (x.y.z)"
		unless $str->($m->{version}) && $m->{version} =~ $semver;
	my $mt = $m->{maintainer};
	push @err, "maintainer must be a string or a list of strings"
		unless $str->($mt) || (ref $mt eq "ARRAY" && @$mt && !grep { !$str->($_) } @$mt);
	my $l = $m->{license};
	my @l = ref $l eq "ARRAY" ? @$l : ref $l eq "HASH" ? () : ($l);
	push @err, "license $_ is not one the spec names" for grep { !$licenses{$_ // ""} } @l;
	my $ms = $m->{"meta-spec"};
	push @err, "meta-spec version must be 1.0.0"
		unless ref $ms eq "HASH" && ($ms->{version} // "") eq "1.0.0";
	my $p = $m->{provides};
	if (ref $p ne "HASH" || !%$p) {
		push @err, "provides must name at least one extension";
		$p = {};
	}
	for my $e (sort keys %$p) {
		my $x = $p->{$e};
		push @err, "provides.$e.file is missing" unless $str->($x->{file});
		push @err, "provides.$e.file $x->{file} does not exist" if $str->($x->{file}) && !-f $x->{file};
		push @err, "provides.$e.version is not semantic (x.y.z)"
			unless $str->($x->{version}) && $x->{version} =~ $semver;
		push @err, "provides.$e.docfile $x->{docfile} does not exist"
			if defined $x->{docfile} && !-f $x->{docfile};
		for my $k (sort keys %$x) {
			push @err, "provides.$e has unknown key $k"
				unless $k =~ /^(file|version|abstract|docfile)$/ || $k =~ /^[xX]_/;
		}
	}
	push @err, "release_status must be stable, testing or unstable"
		if exists $m->{release_status} && ($m->{release_status} // "") !~ /^(stable|testing|unstable)$/;
	push @err, "tags must be a list of strings of at most 255 characters"
		if exists $m->{tags} && (ref $m->{tags} ne "ARRAY"
			|| grep { !$str->($_) || length > 255 } @{$m->{tags}});
	my $pr = $m->{prereqs} // {};
	for my $phase (sort keys %$pr) {
		push @err, "prereqs phase $phase is not configure, build, test, runtime or develop"
			unless $phase =~ /^(configure|build|test|runtime|develop)$/;
		for my $rel (sort keys %{$pr->{$phase}}) {
			push @err, "prereqs.$phase relation $rel is not requires, recommends, suggests or conflicts"
				unless $rel =~ /^(requires|recommends|suggests|conflicts)$/;
			my $deps = $pr->{$phase}{$rel};
			for my $d (sort keys %$deps) {
				my $range = $deps->{$d};
				my $ok = $str->($range) && !grep {
					!/^\s*(?:(?:[<>]=?|==|!=)\s*)?(0|(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*))\s*$/
				} split /,/, $range;
				push @err, "prereqs.$phase.$rel.$d: $range is not a version range" unless $ok;
			}
		}
	}
	if (my $r = $m->{resources}) {
		for my $k (sort keys %$r) {
			push @err, "resources has unknown key $k"
				unless $k =~ /^(homepage|bugtracker|repository)$/ || $k =~ /^[xX]_/;
		}
	}
	die map { "META.json: $_\n" } @err if @err;

	my $x = $p->{ratelimit} or die "META.json provides no ratelimit\n";
	die "META.json: provides.ratelimit.version differs from version\n"
		unless $x->{version} eq $m->{version};
	(my $v = $m->{version}) =~ s/\.0$//;
	die "META.json version $m->{version} does not match the control file ($ARGV[0])\n"
		unless $v eq $ARGV[0];
	die "META.json provides $x->{file}, not the default version script\n"
		unless $x->{file} eq "ratelimit--$ARGV[0].sql";
' "$control_version" || fail=1

# debian/changelog's newest entry packages this version (X.Y.Z-N).
deb_version=$(sed -n '1s/^ratelimit (\([^)]*\)).*/\1/p' debian/changelog)
meta_version=$(perl -MJSON::PP -0777 -ne 'print decode_json($_)->{version}' META.json 2>/dev/null || true)
case $deb_version in
"$meta_version"-[0-9]*) ;;
*) problem "debian/changelog's newest entry is '$deb_version', META.json says $meta_version (expected $meta_version-N)" ;;
esac

# The changelog's newest entry is this version.
newest=$(sed -n 's/^## \([0-9][0-9.]*\).*/\1/p' CHANGELOG.md | head -1)
[ "$newest" = "$control_version" ] ||
	problem "CHANGELOG.md's newest entry is '$newest', the control file says $control_version"

# Every script is shipped (DATA), and each released version has an upgrade path.
data=$(make -s -f Makefile print-data 2>/dev/null || true)
for f in ratelimit--*.sql; do
	case " $data " in *" $f "*) ;; *) problem "$f is not in the Makefile's DATA" ;; esac
done
for f in ratelimit--*.sql; do
	v=${f#ratelimit--}; v=${v%.sql}
	case $v in *--*) continue ;; esac
	cur=$v
	while [ "$cur" != "$control_version" ]; do
		next=$( (ls ratelimit--"$cur"--*.sql 2>/dev/null || true) | sed "s/^ratelimit--$cur--\(.*\)\.sql$/\1/" | head -1)
		[ -n "$next" ] || { problem "no upgrade path from $v to $control_version"; break; }
		cur=$next
	done
done

# What the documentation tells package users to take from the package is
# in it: the examples' files that docs/ names under the package's
# examples directory are installed by debian/rules, and the router script
# (the Makefile's DOCS) is installed with the documentation.
for f in $(grep -ho 'postgresql-NN-ratelimit/examples/[A-Za-z0-9_.]*' README.md docs/*.md | sed 's|.*/||' | sort -u); do
	grep -q "dh_installexamples.*/$f\b\|dh_installexamples.*[ /]$f\b" debian/rules ||
		problem "the docs name examples/$f in the package, which debian/rules does not install"
done
grep -q '^DOCS = router/ratelimit_router.sql' Makefile ||
	problem "the Makefile's DOCS no longer installs router/ratelimit_router.sql, which docs/packaging.md says the package has"

[ $fail = 0 ] && echo "packaging: META.json $control_version, changelogs, scripts and upgrade paths agree"
exit $fail
