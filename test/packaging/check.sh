#!/usr/bin/env bash
# Packaging checks: META.json is valid PGXN metadata whose version matches
# the control file, the changelog has an entry for it, and every install
# and upgrade script is shipped, with a path from each released version.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail=0
problem() { echo "packaging: $*" >&2; fail=1; }

control_version=$(sed -n "s/^default_version = '\(.*\)'$/\1/p" ratelimit.control)
[ -n "$control_version" ] || problem "ratelimit.control has no default_version"

# META.json: parses, has the fields PGXN requires, and agrees with the control file.
perl -MJSON::PP -e '
	local $/;
	open my $fh, "<", "META.json" or die "cannot open META.json\n";
	my $m = JSON::PP->new->decode(<$fh>);
	for my $k (qw(name abstract version maintainer license provides meta-spec)) {
		die "META.json lacks $k\n" unless exists $m->{$k};
	}
	die "META.json: version $m->{version} is not semantic (x.y.z)\n"
		unless $m->{version} =~ /^\d+\.\d+\.\d+$/;
	my $p = $m->{provides}{ratelimit} or die "META.json provides no ratelimit\n";
	die "META.json: provides.ratelimit.version differs from version\n"
		unless $p->{version} eq $m->{version};
	die "META.json: $p->{file} does not exist\n" unless -f $p->{file};
	die "META.json: meta-spec version must be 1.0.0\n"
		unless $m->{"meta-spec"}{version} eq "1.0.0";
	(my $v = $m->{version}) =~ s/\.0$//;
	die "META.json version $m->{version} does not match the control file ($ARGV[0])\n"
		unless $v eq $ARGV[0];
	die "META.json provides $p->{file}, not the default version script\n"
		unless $p->{file} eq "ratelimit--$ARGV[0].sql";
' "$control_version" || fail=1

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

[ $fail = 0 ] && echo "packaging: META.json $control_version, changelog, scripts and upgrade paths agree"
exit $fail
