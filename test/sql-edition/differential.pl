#!/usr/bin/perl
# test/sql-edition/differential.pl: N random calls, with a pinned clock
# advancing by random steps, played against the C edition and the SQL
# edition side by side; every answer must be the same, to the microsecond
# and to the last bit of every float8.
#
#   differential.pl --calls N --seed S --c "PSQL ARGS" --sql "PSQL ARGS"
#
# One script of calls is generated and run by psql on each edition; each
# call goes through pg_temp.try(), which returns the call's result as
# text, or its error's SQLSTATE, message and detail, so that an error
# ends no transaction and both outputs line up call for call.  The script
# mixes every kind, whole and fractional counts, reservations,
# max_reserved, throws, inline and defined names, redefinitions,
# rl_limit_all, rl_check, rl_value, rl_reset, rl_refund, rl_penalize,
# rl_block, rl_settle (costs above and below the estimate) and max_debt,
# overrides, plans and keys moved between them (rl_override,
# rl_unoverride, rl_plan, rl_unplan, rl_assign, rl_unassign), rl_headers of
# answers and of hand-made results, rl_gc, the view rl_status, bad input,
# and transactions rolled back whole or to a savepoint; and concurrency
# limits: permits taken and counted within transactions (rl_acquire,
# rl_permits), leases under the pinned clock (rl_lease, rl_release),
# redefinitions and their errors.  Partial calls too.  Sharded limits (2
# to 8 shards, so that a call probes every shard) play episodes from explicit shard rows: rl_check,
# rl_value, refunds, penalties and blocks are compared whole, and the rows
# they leave; rl_limit picks its shard at random in both editions, so of
# its answer only what no pick changes is compared (ok, and granted and
# capacity when granted; the whole answer when refused), and then the
# tokens the key holds.  Sharded episodes run outside transactions.
# Last, the rows each edition stored are compared too.  Exits non-zero at the first difference, printing the
# call.
use strict;
use warnings;
use Getopt::Long;
use File::Temp qw(tempdir);
use Time::HiRes qw(time);

my $calls = 1000;
my $seed = 1;
my ($c_psql, $sql_psql);
GetOptions('calls=i' => \$calls, 'seed=i' => \$seed,
	'c=s' => \$c_psql, 'sql=s' => \$sql_psql) or die "bad arguments\n";
defined $c_psql && defined $sql_psql or die "--c and --sql are required\n";
srand($seed);

sub pick { $_[int(rand(@_))] }

# The pinned clock, in microseconds from the Unix epoch.
my $now = 1767225600 * 1_000_000;    # 2026-01-01 00:00:00 UTC
sub clock_text {
	my ($s, $us) = (int($now / 1_000_000), $now % 1_000_000);
	my @t = gmtime($s);
	return sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d+00",
		$t[5] + 1900, $t[4] + 1, $t[3], $t[2], $t[1], $t[0], $us);
}

my @periods = ("'1 second'", "'10 seconds'", "'1 minute'", "'7 seconds'",
	"'1 hour'", "'1 day'", "'1500 milliseconds'", "'333 milliseconds'",
	"'2 hours 30 minutes'");
my @rates = (1, 3, 10, 2, 2.5, 7.3, 5, 60, 0.5);

# A random policy: its SQL arguments, and its capacity and kind.
sub policy {
	my $kind = pick('token bucket', 'token bucket', 'fixed window', 'sliding window');
	my $rate = pick(@rates);
	my $period = pick(@periods);
	my %p = (kind => $kind, rate => $rate, period => $period, capacity => $rate);
	if ($kind ne 'sliding window') {
		my $r = rand();
		$p{capacity} = $rate * 2 if $r < 0.2;
		$p{capacity} = $rate / 2 if $r >= 0.2 && $r < 0.3;
		$p{capacity} = 5 if $r >= 0.3 && $r < 0.35;
		$p{max_reserved} = pick(0, 1, 2.5, $rate, 10) if rand() < 0.3;
		$p{start} = "'2025-06-01 00:00:03.25+00'" if $kind eq 'fixed window' && rand() < 0.3;
	}
	else {
		$p{start} = "'2024-02-29 12:00:00+00'" if rand() < 0.3;
	}
	return \%p;
}

# A random sharded policy: a token bucket or fixed window of 2 to 8 shards.
sub sharded_policy {
	my $p;
	do { $p = policy() } while $p->{kind} eq 'sliding window';
	$p->{shards} = pick(2, 2, 3, 4, 8);
	return $p;
}

sub define_sql {
	my ($name, $p) = @_;
	my $s = "rl_define('$name', '$p->{kind}', $p->{rate}, $p->{period}";
	$s .= ", capacity => $p->{capacity}" if $p->{capacity} != $p->{rate};
	$s .= ", shards => $p->{shards}" if defined $p->{shards};
	$s .= ", max_reserved => $p->{max_reserved}" if defined $p->{max_reserved};
	$s .= ", start => $p->{start}" if defined $p->{start};
	$s .= ", max_debt => $p->{max_debt}" if defined $p->{max_debt};
	return "$s)";
}

# A random policy with max_debt: a token bucket or fixed window without
# shards or max_reserved.
sub debt_policy {
	my $p;
	do { $p = policy() } while $p->{kind} eq 'sliding window';
	delete $p->{max_reserved};
	$p->{max_debt} = pick(0, 1, 2.5, $p->{capacity}, 10, 0.3);
	return $p;
}

# rl_settle of a call admitted on estimated: the actual cost above it, below
# it, the same, or now and then bad.
sub settle_call {
	my ($name, $key, $estimated, $rest) = @_;
	$estimated = 1 unless $estimated =~ /^[0-9.]+$/;
	my $actual = pick(0, $estimated, $estimated * 2, $estimated / 2, $estimated + 1,
		$estimated + 7.5, sprintf("%.3f", rand() * $estimated * 3), 40);
	$actual = pick('NULL', -1, "'NaN'", "1e16", "'Infinity'") if rand() < 0.02;
	$estimated = pick('NULL', -0.5) if rand() < 0.01;
	emit_call("rl_settle('$name', $key, $estimated, $actual$rest)");
}

sub config_sql {
	my ($p) = @_;
	if ($p->{kind} eq 'sliding window') {
		return "rl_sliding_window($p->{rate}, $p->{period}"
		  . (defined $p->{start} ? ", start => $p->{start}" : "") . ")";
	}
	my $f = $p->{kind} eq 'token bucket' ? 'rl_token_bucket' : 'rl_fixed_window';
	my $s = "$f($p->{rate}, $p->{period}, capacity => $p->{capacity}";
	$s .= ", max_reserved => $p->{max_reserved}" if defined $p->{max_reserved};
	$s .= ", shards => $p->{shards}" if defined $p->{shards};
	$s .= ", start => $p->{start}" if defined $p->{start};
	return "$s)";
}

# A random policy with a defined limit's options: shadow mode, or
# block_for, with escalation now and then (not for a sliding window).
sub options_policy {
	my $p = policy();
	if (rand() < 0.3) {
		$p->{options} = ", shadow => true";
		$p->{options} .= ", block_for => '1 minute'" if rand() < 0.3;
		return $p;
	}
	$p->{options} = ", block_for => " . pick("'1 second'", "'10 seconds'", "'1 minute'", "'7 minutes'");
	if ($p->{kind} ne 'sliding window' && rand() < 0.6) {
		$p->{options} .= ", block_factor => " . pick(1, 2, 1.5, 3);
		$p->{options} .= ", block_max => " . pick("'1 hour'", "'10 minutes'") if rand() < 0.6;
		$p->{options} .= ", block_horizon => " . pick("'1 hour'", "'5 minutes'", "'1 day'") if rand() < 0.6;
	}
	return $p;
}

sub define_options_sql {
	my ($name, $p) = @_;
	my $s = define_sql($name, $p);
	$s =~ s/\)$/$p->{options})/ if defined $p->{options};
	return $s;
}

my @defined = map { ["d$_", policy()] } 0 .. 4;
# names with options (shadow mode, block_for, escalation), called as the
# defined names are
my @optioned = map { ["o$_", options_policy()] } 0 .. 2;
my @inline = map { ["i$_", policy()] } 0 .. 3;
# names with max_debt, called as the defined names are, and settled
my @debt = map { ["b$_", debt_policy()] } 0 .. 2;
my @keys = ("'alice'", "'bob'", "NULL", "42::bigint", "'user:ü'", "'10.1.2.3'::inet",
	"'2001:db8::1'::inet", "'::ffff:10.1.2.3'::inet", "'::FFFF:0A01:0203/128'::inet",
	"'2001:DB8:0::1/128'::inet", "'::10.1.2.3'::inet", "'::ffff:10.1.2.0/120'::inet",
	"'::ffff:0:0/96'::inet", "'10.1.2.0/24'::inet");

# every stored row as rl_status shows it
my $status = q{(SELECT COALESCE(string_agg(l, ' ; ' ORDER BY l COLLATE "C"), '') FROM (SELECT }
	. q{format('%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s', }
	. q{name, key, shard, kind, rate, period, capacity, shards, value, ts, remaining, reset_after, idle, }
	. q{stored_value, stored_ts, max_reserved, start, stored_prev, plan) AS l FROM rl_status) s)};

# keys as rl_override takes them (text; a number or an address as its text)
my @text_keys = ("'alice'", "'bob'", "'42'", "'user:ü'", "'10.1.2.3'", "'2001:db8::1'", "NULL", "''");

my @lines;
my @what;    # what each output line is, for the report
sub emit_call {
	my ($call, $wrapper) = @_;
	$wrapper //= 'try';
	(my $q = $call) =~ s/'/''/g;
	push @lines, "SELECT pg_temp.$wrapper('$q');";
	push @what, $call;
}

# A call on a concurrency limit: c0 (3 permits), c1 (1), c2 (redefined
# between 1 and 3), l0 (leases of 2).  Permits are counted within the
# transaction that holds them; a lease's id is random, so a lease call
# answers whether it was granted, and a release takes the oldest lease of
# a key (leases that tie on every column are alike).
my @ckeys = ("'alice'", "'bob'", "NULL", "42::bigint", "7::smallint",
	"'00000000-0000-0000-0000-000000000001'::uuid", "'user:ü'");
sub concurrency_call {
	my ($in_xact) = @_;
	my $c = rand();
	my $key = pick(@ckeys);
	if ($c < 0.45) {
		my $permits = pick(1, 1, 1, 2, 3);
		$permits = pick(0, 4, 'NULL', 1001) if rand() < 0.03;
		my $wait = rand() < 0.02 ? ", wait => '1 millisecond'" : "";
		my $throws = rand() < 0.1 ? ", throws => true" : "";
		$key = pick("'alice'", "NULL") if rand() < 0.6;
		# within a transaction, again and again: the permits add up
		my $name = pick('c0', 'c1', 'c2');
		emit_call("rl_acquire('$name', $key, $permits$wait$throws)")
			for 1 .. ($in_xact ? 1 + int(rand(3)) : 1);
	}
	elsif ($c < 0.55) {
		emit_call("(SELECT string_agg(format('%s %s %s/%s', name, key_hash, held, permits), ', '"
			. " ORDER BY name, key_hash) FROM rl_permits)");
	}
	elsif ($c < 0.78) {
		emit_call("rl_lease('l0', $key, " . pick(1, 1, 2, 3) . ", "
			. pick("'1 second'", "'10 seconds'", "'1 minute'", "'1 hour'") . ") IS NOT NULL");
	}
	elsif ($c < 0.88) {
		emit_call("(SELECT rl_release(id) FROM rl_leases WHERE key = COALESCE(($key)::text, '')"
			. " ORDER BY acquired, expires, permits, released NULLS FIRST LIMIT 1)");
	}
	elsif ($c < 0.94) {
		emit_call("rl_define_concurrency('c2', " . pick(1, 2, 3) . ")");
	}
	elsif ($c < 0.95) {
		emit_call("rl_undefine('" . pick('c2', 'l0') . "')");
		emit_call("rl_define_concurrency('c2', 2)");
		emit_call("rl_define_concurrency('l0', 2, leases => true)");
	}
	else {
		emit_call(pick("rl_acquire('d0', 'k')", "rl_acquire('l0', 'k')", "rl_acquire('nope')",
			"rl_lease('c0', 'k', 1, '1 minute')", "rl_limit('c0', 'k')", "rl_check('l0', 'k')",
			"rl_acquire('c0', 'k', wait => '-1 second')", "rl_acquire('c0', '')",
			"rl_acquire('c0', 'k', throws => NULL)", "rl_lease('l0', 'k', 1, '0')",
			"rl_lease('l0', 'k', 1, '2 days')", "rl_lease('l0', 'k', 3, NULL)",
			"rl_define_concurrency('c0', 0)", "rl_define_concurrency('d0', 1)",
			"rl_define_concurrency('c0', 3, leases => true)", "rl_define_concurrency('c0', 3, NULL)",
			"rl_define('c0', 'token bucket', 1, '1 second')",
			"rl_limit('x', 'k', config => ROW('concurrency', 1, '1 second', 2, NULL, 1, NULL, NULL, NULL)::rl_policy)",
			"rl_release('00000000-0000-0000-0000-000000000000')", "rl_release(NULL)",
			"rl_key_hash('alice')", "rl_key_hash(NULL)"));
	}
}

my @sharded = map { ["s$_", sharded_policy()] } 0 .. 2;
my @sharded_inline = map { ["j$_", sharded_policy()] } 0 .. 1;

# One episode of a sharded limit (see the top).
sub sharded_episode {
	my $inline = rand() < 0.3;
	my ($name, $p) = @{ $inline ? pick(@sharded_inline) : pick(@sharded) };
	my $key = pick("'alice'", "'bob'", "NULL");
	my $cfg = $inline ? config_sql($p) : undef;
	my $n = $p->{shards};
	my $per = $p->{capacity} / $n;
	if (!$inline) {
		# explicit rows: some shards missing, the rest anywhere from a
		# deficit to full, counted from some time before now
		(my $rowkey = $key) =~ s/^NULL$/''/;
		my @rows;
		for my $s (0 .. $n - 1) {
			next if rand() < 0.3;
			my $v = rand() < 0.2 ? $per : sprintf("%.4f", rand() * ($per + 1) - 1);
			my $then = $now - int(rand(rand() < 0.5 ? 2_000_000 : 600_000_000));
			my ($sec, $us) = (int($then / 1_000_000), $then % 1_000_000);
			my @t = gmtime($sec);
			push @rows, sprintf("('%s', %s, %d, %s, '%04d-%02d-%02d %02d:%02d:%02d.%06d+00')",
				$name, $rowkey, $s, $v, $t[5] + 1900, $t[4] + 1, $t[3], $t[2], $t[1], $t[0], $us);
		}
		push @lines, "DELETE FROM rate_limits WHERE name = '$name';";
		push @lines, "INSERT INTO rate_limits (name, key, shard, value, ts) VALUES "
		  . join(', ', @rows) . ";" if @rows;
	}
	my $rest = $inline ? ", config => $cfg" : "";
	my $count = pick(1, 1, 2, 0.5, $per, $per * 1.5, $per * 2, $per * 2 + 1,
		sprintf("%.3f", rand() * $per * 2 + 0.001));
	my $reserve = rand() < 0.2 ? ", reserve => true" : "";
	my $throws = rand() < 0.05 ? ", throws => true" : "";
	my $a = rand();
	if ($a < 0.03) {
		emit_call("rl_limit('$name', $key, $count, partial => true$rest)");
	}
	elsif ($a < 0.4) {
		emit_call("rl_limit('$name', $key, $count$reserve$throws$rest)", 'try_picked');
		emit_call("rl_value('$name', $key" . ($inline ? ", $cfg" : "") . ")", 'try_rounded');
	}
	elsif ($a < 0.6) {
		emit_call("rl_check('$name', $key, $count$reserve$throws$rest)");
	}
	elsif ($a < 0.75) {
		emit_call("rl_value('$name', $key" . ($inline ? ", $cfg" : "") . ")");
	}
	elsif ($a < 0.85 && !$inline) {
		emit_call("rl_limit_all(ARRAY['$name', 'd0']::text[], ARRAY[$key, 'x']::text[], ARRAY[$count, 1]::float8[]$reserve)",
			'try_picked');
	}
	else {
		my $amount = pick(1, 0.5, 2, 3.7, $p->{capacity}, $per);
		my $b = rand();
		if ($b < 0.4) {
			emit_call("rl_refund('$name', $key, $amount$rest)");
		}
		elsif ($b < 0.75) {
			emit_call("rl_penalize('$name', $key, $amount$rest)");
		}
		elsif ($b < 0.85) {
			emit_call("rl_block('$name', $key, " . pick("'1 second'", "'10 seconds'", "'1 hour'") . "$rest)");
		}
		else {
			settle_call($name, $key, $count, $rest);
		}
		if (!$inline) {
			push @lines, "SELECT 'rows ' || COALESCE(string_agg(format('%s|%s|%s|%s|%s', key, shard, value, ts, prev), ' ; ' ORDER BY key COLLATE \"C\", shard), '') FROM rate_limits WHERE name = '$name';";
			push @what, "the rows of $name after the adjustment";
		}
	}
	# the shards a pick chose differ between the editions: forget them
	if ($inline) {
		emit_call("rl_reset('$name', $key, $cfg)");
	}
	else {
		push @lines, "DELETE FROM rate_limits WHERE name = '$name';";
	}
}

push @lines, "SET ratelimit.now_override = '" . clock_text() . "';";
emit_call(define_sql(@$_)) for @defined, @sharded, @debt;
# a key at exactly 0 under max_debt, refused a call within the debt: it
# waits for the least float8 above zero (a fixed window of rate 10 and a
# token bucket of 1e15 a microsecond divide it below the least float8)
emit_call($_) for "rl_define('b9', 'fixed window', 10, '1 minute', max_debt => 5)",
	"rl_limit('b9', 'k', 10)", "rl_limit('b9', 'k', 1)", "rl_check('b9', 'k', 1)",
	"rl_define('b9', 'token bucket', 1e15, '1 microsecond', max_debt => 5)",
	"rl_reset('b9', 'k')", "rl_limit('b9', 'k', 1e15)", "rl_limit('b9', 'k', 1)",
	"rl_undefine('b9')";
emit_call(define_options_sql(@$_)) for @optioned;
emit_call($_) for "rl_define_concurrency('c0', 3)", "rl_define_concurrency('c1', 1)",
	"rl_define_concurrency('c2', 2)", "rl_define_concurrency('l0', 2, leases => true)";

my ($in_xact, $savepoint) = (0, 0);
for (my $n = 0; $n < $calls; $n++) {
	my $r = rand();
	# the clock: mostly small steps, now and then a long one
	if (rand() < 0.3) {
		my $step = rand() < 0.9 ? int(rand(100_000)) : int(rand(7_200_000_000));
		$step = 86_400_000_000 * (1 + int(rand(3))) if rand() < 0.01;
		$now += $step;
		push @lines, "SET ratelimit.now_override = '" . clock_text() . "';";
	}
	# transactions
	if (!$in_xact && rand() < 0.03) {
		push @lines, "BEGIN;";
		$in_xact = 1;
		$savepoint = 0;
	}
	elsif ($in_xact && !$savepoint && rand() < 0.1) {
		push @lines, "SAVEPOINT s;";
		$savepoint = 1;
	}
	elsif ($in_xact && $savepoint && rand() < 0.1) {
		push @lines, rand() < 0.6 ? "ROLLBACK TO SAVEPOINT s;" : "RELEASE SAVEPOINT s;";
		$savepoint = 0;
	}
	elsif ($in_xact && rand() < 0.08) {
		push @lines, rand() < 0.5 ? "COMMIT;" : "ROLLBACK;";
		$in_xact = 0;
	}

	# concurrency limits, more often within a transaction, where permits add up
	if (rand() < ($in_xact ? 0.4 : 0.08)) {
		concurrency_call($in_xact);
		next;
	}
	# (outside transactions: a transaction that holds some of a key's
	# shards takes the others by rules a random pick makes differ)
	if (!$in_xact && rand() < 0.15) {
		if (rand() < 0.05) {
			# redefine a sharded name: another number of shards
			my $d = pick(@sharded);
			$d->[1] = sharded_policy();
			emit_call(define_sql(@$d));
		}
		sharded_episode();
		next;
	}
	my $inline = rand() < 0.4;
	my $named = rand();
	my ($name, $p) = @{ $inline ? pick(@inline) : $named < 0.25 ? pick(@optioned)
		: $named < 0.45 ? pick(@debt) : pick(@defined) };
	my $key = pick(@keys);
	my $cfg = $inline ? ", config => " . config_sql($p) : "";
	my $count = pick(1, 1, 1, 1, 1, 1, 2, 3, 0.5, 1.7, $p->{capacity},
		sprintf("%.3f", rand() * $p->{capacity} + 0.001));
	$count = $p->{capacity} + 1 if rand() < 0.02;
	$count = 1 if $count > $p->{capacity} && rand() < 0.8;
	# under max_debt a call may ask for up to capacity plus max_debt
	$count = pick($p->{capacity} + $p->{max_debt}, $p->{capacity} + $p->{max_debt} / 2,
		$p->{capacity} + $p->{max_debt} + 0.5, $p->{max_debt} + 0.001)
		if defined $p->{max_debt} && rand() < 0.15;
	$count = pick(0, -1, "'NaN'", "1e16") if rand() < 0.01;
	my $reserve = $p->{kind} ne 'sliding window'
		&& rand() < (defined $p->{max_debt} ? 0.02 : 0.25) ? ", reserve => true" : "";
	my $throws = rand() < 0.05 ? ", throws => true" : "";

	if ($r < 0.56) {
		# partial calls take what the key holds, up to a count that may
		# exceed the capacity
		my $partial = "";
		if (!$reserve && rand() < 0.15) {
			$partial = ", partial => true";
			$count = pick($count, $p->{capacity} * 1.5, $p->{capacity} + 0.25) if rand() < 0.3;
		}
		emit_call("rl_limit('$name', $key, $count$reserve$throws$partial$cfg)");
		# the call's actual cost, known after it
		settle_call($name, $key, $count, $cfg)
			if rand() < (defined $p->{max_debt} ? 0.35 : 0.1);
	}
	elsif ($r < 0.60) {
		# several limits, all or nothing; a limit may be named twice
		my $m = 1 + int(rand(4));
		my (@n, @k, @c);
		for (1 .. $m) {
			my $l = rand() < 0.95 ? pick(@defined, @optioned, @debt) : pick(@inline);
			push @n, "'$l->[0]'";
			my $key = pick(@keys);
			$key =~ s/::(bigint|inet)//;
			$key = "'$key'" if $key =~ /^\d+$/;
			push @k, $key;
			push @c, pick(1, 1, 2, 0.5, $l->[1]{capacity});
		}
		$reserve = rand() < 0.2 ? ", reserve => true" : "";
		emit_call("rl_limit_all(ARRAY[" . join(', ', @n) . "]::text[], ARRAY["
			. join(', ', @k) . "]::text[], ARRAY[" . join(', ', @c) . "]::float8[]$reserve$throws)");
	}
	elsif ($r < 0.75) {
		emit_call("rl_check('$name', $key, $count$reserve$throws$cfg)");
	}
	elsif ($r < 0.88) {
		emit_call("rl_value('$name', $key" . ($inline ? ", " . config_sql($p) : "") . ")");
	}
	elsif ($r < 0.90) {
		# refunds, penalties and blocks (the count is not bound by capacity)
		my $a = rand();
		my $amount = pick(1, 0.5, 2, 3.7, $p->{capacity}, $p->{capacity} * 3);
		my $rest = $inline ? ", config => " . config_sql($p) : "";
		if ($a < 0.4) {
			emit_call("rl_refund('$name', $key, $amount$rest)");
		}
		elsif ($a < 0.75) {
			emit_call("rl_penalize('$name', $key, $amount$rest)");
		}
		else {
			my $d = pick("'1 second'", "'250 milliseconds'", "'10 seconds'",
				"'1 minute'", "'1 hour'", "'0.000001 seconds'", "'1 day'");
			$d = pick("'0 seconds'", "'-1 second'", "NULL", "'1001 years'") if rand() < 0.05;
			emit_call("rl_block('$name', $key, $d$rest)");
		}
	}
	elsif ($r < 0.92) {
		emit_call("rl_reset('$name', $key" . ($inline && rand() < 0.5 ? ", " . config_sql($p) : "") . ")");
	}
	elsif ($r < 0.94) {
		# redefine: a new policy for a defined name (state is kept); a
		# name with max_debt now and then without it, and back
		my $d = pick(@defined, @debt);
		$d->[1] = $d->[0] =~ /^b/ && rand() < 0.8 ? debt_policy() : policy();
		emit_call(define_sql(@$d));
	}
	elsif ($r < 0.945) {
		my $d = pick(@defined);
		emit_call("rl_undefine('$d->[0]')");
		emit_call(define_sql(@$d));
		# and options, changed on a name with state
		my $o = pick(@optioned);
		$o->[1] = options_policy();
		emit_call(define_options_sql(@$o));
	}
	elsif ($r < 0.965) {
		# a key's own policy: overrides, plans, and keys moved between them
		# (names with max_debt too)
		my $d = rand() < 0.8 ? pick(@defined) : pick(@debt);
		$d = pick(@inline) if rand() < 0.03;
		my $k = pick(@text_keys);
		my $a = rand();
		my $numbers = pick(@rates) . (rand() < 0.5 ? ", " . pick(@periods) : ", NULL")
			. (rand() < 0.4 ? ", capacity => " . pick(1, 2.5, 5, 20, 100) : "")
			. (rand() < 0.2 ? ", max_reserved => " . pick(0, 1, 10) : "");
		$numbers = pick("0", "NULL", "1, '101 years'", "1, capacity => 1e16", "'NaN'") if rand() < 0.05;
		my $plan = pick("'free'", "'pro'", "'gold'");
		$plan = pick("NULL", "''", "'nope'") if rand() < 0.05;
		if ($a < 0.2) {
			emit_call("rl_override('$d->[0]', $k, $numbers)");
		}
		elsif ($a < 0.28) {
			emit_call("rl_unoverride('$d->[0]', $k)");
		}
		elsif ($a < 0.4) {
			emit_call("rl_plan('$d->[0]', $plan, $numbers)");
		}
		elsif ($a < 0.43) {
			emit_call("rl_unplan('$d->[0]', $plan)");
		}
		elsif ($a < 0.85) {
			# a move to a plan, often one just (re)written
			emit_call("rl_plan('$d->[0]', $plan, $numbers)") if rand() < 0.5;
			emit_call("rl_assign('$d->[0]', $k, $plan)");
		}
		else {
			emit_call("rl_unassign('$d->[0]', $k)");
		}
	}
	elsif ($r < 0.975) {
		# the HTTP fields of an answer, or of a hand-made result
		my $res = "rl_check('$name', $key, $count$reserve$cfg)";
		if (rand() < 0.3) {
			$res = sprintf("ROW(%s, %s, %s, %s, NULL, NULL, NULL, NULL, NULL)::rl_result",
				pick('true', 'false', 'NULL'),
				pick('NULL', "'00:00:01.5'", "'-00:00:03'", "'00:00:00.000001'", "'1001 years'", "'0'"),
				pick(0, 7.999, -2, '1e300', "'NaN'", 1e15, 3.5, 'NULL'),
				pick("'00:00:01.000001'", "'-00:00:05'", "'00:01:00'", "'1001 years'", 'NULL'));
		}
		my $hkey = !$inline && rand() < 0.5 ? ", key => " . pick(@text_keys) : "";
		emit_call("rl_headers('$name', $res" . ($inline ? ", " . config_sql($p) : "") . "$hkey)");
	}
	elsif ($r < 0.98) {
		# idle rows collected, and every row as rl_status shows it
		emit_call(rand() < 0.5 ? "rl_gc(" . pick(10000, 10000, 0, -1, 'NULL') . ")" : $status);
	}
	else {
		# bad input and the edges of the arguments
		emit_call(pick("rl_limit('nope', 'k')", "rl_limit('', 'k')",
			"rl_limit('d0', '')", "rl_limit('d0', 'k', reserve => NULL)",
			"rl_limit('d0', 'k', config => rl_token_bucket(1, '1 second'))",
			"rl_token_bucket(0, '1 second')", "rl_fixed_window(1, '101 years')",
			"rl_sliding_window(1, '1 second', storage => 'disk')",
			"rl_define('bad', 'leaky bucket', 1, '1 second')",
			"rl_define('bad', 'sliding window', 1, '1 second', capacity => 2)",
			"rl_limit('d1', 'k', 1e15)",
			"rl_limit('i9', 'k', 2, config => rl_token_bucket(1, '1 second'))",
			"rl_value('nope')", "rl_reset('nope', 'k')", "rl_undefine('nope')",
			"rl_limit('d0', '10.0.0.0/8'::inet)",
			"rl_limit('d0', 'k', partial => true, reserve => true)",
			"rl_limit('d0', 'k', partial => NULL)",
			"rl_define('bad', 'token bucket', 1, '1 second', block_factor => 2)",
			"rl_define('bad', 'token bucket', 1, '1 second', block_for => '1 second', block_factor => 0.5)",
			"rl_define('bad', 'token bucket', 1, '1 second', block_for => '1 second', block_factor => 'NaN')",
			"rl_define('bad', 'token bucket', 1, '1 second', block_max => '1 hour')",
			"rl_define('bad', 'token bucket', 1, '1 second', block_for => '1 hour', block_factor => 2, block_max => '1 minute')",
			"rl_define('bad', 'sliding window', 1, '1 second', block_for => '1 hour', block_factor => 2)",
			"rl_define('bad', 'token bucket', 1, '1 second', block_for => '0 seconds')",
			"rl_define('bad', 'token bucket', 1, '1 second', block_for => '101 years')",
			"rl_define('bad', 'token bucket', 1, '1 second', block_for => '1 hour', block_factor => 2, block_horizon => '0.1 microseconds')",
			"rl_define('bad', 'token bucket', 4, '1 second', shards => 2, block_for => '1 second')",
			"rl_define('bad', 'sliding window', 1, '1 second', max_debt => 1)",
			"rl_define('bad', 'token bucket', 1, '1 second', max_debt => -1)",
			"rl_define('bad', 'token bucket', 1, '1 second', max_debt => 'NaN')",
			"rl_define('bad', 'token bucket', 1, '1 second', max_debt => 1e16)",
			"rl_define('bad', 'token bucket', 1, '1 second', max_reserved => 1, max_debt => 1)",
			"rl_define('bad', 'fixed window', 4, '1 second', shards => 2, max_debt => 1)",
			"rl_define('bad', 'token bucket', 1, '100 years', max_debt => 1e14)",
			"rl_define('bad', 'fixed window', 1, '1 day', max_debt => 2, shadow => true, block_for => '1 minute')",
			"rl_limit('b0', 'k', 1e15)", "rl_limit('b1', 'k', reserve => true)",
			"rl_check('b2', 'k', 1000)", "rl_settle('nope', 'k', 1, 2)",
			"rl_settle('b0', '', 1, 2)", "rl_settle('d0', 'k', 1, 2, rl_token_bucket(1, '1 second'))",
			"rl_settle('i9', 'k', 2, 1, rl_token_bucket(1, '1 second'))",
			"rl_settle('c0', 'k', 1, 2)", "rl_settle('l0', 'k', 1, 1)"));
	}
}
push @lines, "COMMIT;" if $in_xact;
emit_call($status);
# and at the end, what each edition stored: the same rows, an inline
# policy's stored name included, and the same definitions
push @lines, q{SELECT 'rate_limits ' || COALESCE(string_agg(format('%s|%s|%s|%s|%s|%s', name, key, shard, value, ts, prev), ' ; ' ORDER BY name COLLATE "C", key COLLATE "C", shard), '') FROM rate_limits;};
push @what, "the rows of rate_limits after the calls";
push @lines, q{SELECT 'rl_definitions ' || COALESCE(string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s', name, kind, rate, period, capacity, max_reserved, shards, start, storage, shadow, block_for, block_factor, block_max, block_horizon, max_debt), ' ; ' ORDER BY name COLLATE "C"), '') FROM rl_definitions;};
push @what, "the rows of rl_definitions after the calls";
push @lines, q{SELECT 'rl_leases ' || COALESCE(string_agg(format('%s|%s|%s|%s|%s|%s', name, key, permits, acquired, expires, released), ' ; ' ORDER BY name COLLATE "C", key COLLATE "C", acquired, expires, permits, released), '') FROM rl_leases;};
push @what, "the rows of rl_leases after the calls";
push @lines, q{SELECT 'rl_plans ' || COALESCE(string_agg(format('%s|%s|%s|%s|%s|%s', name, plan, rate, period, capacity, max_reserved), ' ; ' ORDER BY name COLLATE "C", plan COLLATE "C"), '') FROM rl_plans;};
push @what, "the rows of rl_plans after the calls";
push @lines, q{SELECT 'rl_overrides ' || COALESCE(string_agg(format('%s|%s|%s|%s|%s|%s|%s', name, key, rate, period, capacity, max_reserved, plan), ' ; ' ORDER BY name COLLATE "C", key COLLATE "C"), '') FROM rl_overrides;};
push @what, "the rows of rl_overrides after the calls";
push @lines, q{SELECT 'rl_moves ' || COALESCE(string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s|%s', name, key, moved_at, refill_at, covered_until, covered_per_us, near_until, near_per_us, debt), ' ; ' ORDER BY name COLLATE "C", key COLLATE "C"), '') FROM rl_moves;};
push @what, "the rows of rl_moves after the calls";

my $dir = tempdir(CLEANUP => 1);
my $try = <<'SQL';
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	r text;
	st text;
	msg text;
	det text;
BEGIN
	EXECUTE 'SELECT (' || q || ')::text' INTO r;
	RETURN COALESCE(r, '<null>');
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
	RETURN 'ERROR ' || st || ' ' || msg || ' / ' || COALESCE(det, '');
END
$f$;
-- a sharded call's answer where its pick changes nothing: ok, and when
-- granted what it took and the limit's size
CREATE FUNCTION pg_temp.try_picked(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	r text := pg_temp.try(q);
BEGIN
	IF r NOT LIKE '(t,%' THEN
		RETURN r;
	END IF;
	IF q LIKE 'rl_limit_all%' THEN
		RETURN 'granted';
	END IF;
	RETURN format('granted %s of %s', (r::rl_result).granted, (r::rl_result).capacity);
END
$f$;
-- a value that floating-point order may change in its last bits
CREATE FUNCTION pg_temp.try_rounded(q text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	v float8;
	t timestamptz;
BEGIN
	EXECUTE 'SELECT value, ts FROM ' || q INTO v, t;
	RETURN round(v::numeric, 6) || ' ' || t;
EXCEPTION WHEN OTHERS THEN
	RETURN pg_temp.try(q);
END
$f$;
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
TRUNCATE rate_limits, rl_definitions, rl_leases, rl_overrides, rl_plans, rl_moves;
SQL
open(my $fh, '>', "$dir/calls.sql") or die;
print $fh $try, join("\n", @lines), "\n";
close $fh;

my %out;
my %secs;
for my $ed (['c', $c_psql], ['sql', $sql_psql]) {
	my $t0 = time();
	my $cmd = "$ed->[1] -X -q -A -t -v ON_ERROR_STOP=1 -f $dir/calls.sql";
	my @got = `$cmd`;
	die "psql failed on the $ed->[0] edition ($cmd): $?\n" if $?;
	chomp @got;
	$out{ $ed->[0] } = \@got;
	$secs{ $ed->[0] } = time() - $t0;
}
my ($c, $s) = ($out{c}, $out{sql});
die "the C edition answered " . @$c . " calls, expected " . @what . "\n" if @$c != @what;
my $ncalls = @what;
for my $i (0 .. $#what) {
	next if defined $s->[$i] && $c->[$i] eq $s->[$i];
	# rl_gc stops at the first row it cannot judge (an override its
	# definition no longer admits), which each edition's scan meets in an
	# order of its own: the same error, not always of the same name or key
	next if $what[$i] =~ /^rl_gc\(/ && defined $s->[$i]
		&& $c->[$i] =~ /^(ERROR 22023 invalid override of rate limit )/
		&& index($s->[$i], $1) == 0;
	# so does the view rl_status (an override or plan its definition no
	# longer admits: each bad row fails with a problem of its own)
	next if $what[$i] eq $status && defined $s->[$i]
		&& $c->[$i] =~ /^ERROR 22023 / && $s->[$i] =~ /^ERROR 22023 /;
	print "difference at call $i of $ncalls: $what[$i]\n";
	print "  C edition:   $c->[$i]\n";
	print "  SQL edition: ", $s->[$i] // '<missing>', "\n";
	exit 1;
}
if (($ENV{RL_SQLED_VERBOSE} // 0) > 1) {
	print "$what[$_]\n  $c->[$_]\n" for 0 .. $#what;
}
my $errors = grep { /^ERROR/ } @$c;
if ($ENV{RL_SQLED_VERBOSE}) {
	my %kinds;
	$kinds{ (/^(ERROR \S+ [^\/]*)/)[0] }++ for grep { /^ERROR/ } @$c;
	printf "%6d %s\n", $kinds{$_}, $_ for sort { $kinds{$b} <=> $kinds{$a} } keys %kinds;
	my $ok = grep { /^\(t,/ } @$c;
	my $refused = grep { /^\(f,/ } @$c;
	print "granted $ok, refused $refused\n";
}
printf "%d calls compared (%d errors among them), no difference; C edition %.1f s, SQL edition %.1f s (seed %d)\n",
	$ncalls, $errors, $secs{c}, $secs{sql}, $seed;
