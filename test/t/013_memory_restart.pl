# The memory store across restarts: a clean shutdown (fast, and immediate,
# with a transaction left open, whose take is returned) keeps what was
# committed, exactly; a crash
# (a backend killed, so the postmaster reinitialises shared memory, or the
# postmaster itself killed) starts every key full with
# ratelimit.memory_after_crash = 'full', and with 'empty' starts every key
# emptied at the restart, refilling from there.
use strict;
use warnings;

use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;
use RatelimitMemory qw(memory_node memory_files);

# a clock pinned past the real one
my $node = memory_node('mem_restart', 'restart_after_crash = on');
my ($state_file, $running_file) = memory_files($node);
my $info = q{SELECT memory_storage || ' ' || memory_keys || ' '
	|| coalesce(memory_empty_since::text, 'full') FROM rl_stats_info};

sub value
{
	my ($key) = @_;
	return $node->safe_psql('postgres',
		"SELECT value FROM rl_value('m', '$key')");
}

# Kill a backend: the postmaster kills the others and reinitialises shared
# memory, as after any crash.
sub crash_backend
{
	my $victim = $node->background_psql('postgres');
	my $pid = $victim->query_safe('SELECT pg_backend_pid()');
	my $log_offset = -s $node->logfile;
	kill 'KILL', $pid;
	$victim->{run}->kill_kill;
	$node->poll_query_until('postgres', 'SELECT true')
	  or die 'the server did not come back after the crash';
	like(slurp_file($node->logfile, $log_offset),
		qr/all server processes terminated; reinitializing/,
		'the postmaster reinitialised shared memory');
}

# Kill the postmaster, then start again once its children are gone.
sub crash_postmaster
{
	$node->kill9;
	# the children notice and exit; until then the old shared memory is in
	# use and a start fails (leaving the stale pid behind)
	for my $try (1 .. 60)
	{
		$node->{_pid} = undef;
		last if $node->start(fail_ok => 1);
		sleep 1;
	}
	ok(-e $running_file, 'the marker of a running server is there again');
}

# A clean restart, fast shutdown
$node->safe_psql('postgres', q{
	SELECT rl_limit('m', 'drained', 10);
	SELECT rl_limit('m', 'part', 4);
});
ok(-e $running_file, 'a running server has its marker file');
$node->stop('fast');
ok(-e $state_file, 'a fast shutdown writes the state file');
ok(!-e $running_file, 'and removes the marker');
$node->start;
ok(!-e $state_file, 'the state file is removed once read');
is($node->safe_psql('postgres', "SELECT ok FROM rl_limit('m', 'drained')"),
	'f', 'after a fast shutdown a drained key stays drained');
is(value('part'), '6', 'after a fast shutdown a key keeps its exact value');
is($node->safe_psql('postgres', $info), 'shared memory 2 full',
	'two keys restored, not after a crash');

# An immediate shutdown with a transaction open: it exits normally and
# writes the state.  The store cannot tell a transaction whose commit
# record is flushed (recovery keeps it) from one recovery aborts, so the
# take is kept: fail closed, never a committed take granted twice
$node->safe_psql('postgres', "SELECT rl_limit('m', 'part')");
my $open = $node->background_psql('postgres');
$open->query_safe('BEGIN');
$open->query_safe("SELECT rl_limit('m', 'open', 3)");
$open->query_safe("SELECT rl_block('m', 'blocked', '1 hour')");
$node->stop('immediate');
$open->{run}->kill_kill;
ok(-e $state_file, 'an immediate shutdown writes the state file');
$node->start;
is(value('part'), '5', 'after an immediate shutdown a key keeps its exact value');
is(value('drained'), '0', 'after an immediate shutdown a drained key stays drained');
# and its block, queued for commit, is kept as well: nothing for the hour
is(value('blocked') . ' ' .
	$node->safe_psql('postgres', "SELECT ok FROM rl_limit('m', 'blocked')"),
	'0 f', 'an open transaction\'s block is kept after an immediate shutdown');
is(value('open'), '7',
	'an open transaction\'s take is kept after an immediate shutdown');
# judged again by the next cleanup under the policy in force: not idle
is($node->safe_psql('postgres',
		"SELECT rl_gc_memory(); SELECT memory_keys FROM rl_stats_info"),
	"0\n4", 'the cut-off take\'s and block\'s entries are kept by rl_gc_memory, as the others');

# Cut off by an immediate shutdown, a take is kept at the time it was
# taken when that is later than the shutdown (a clock ahead): 10 taken at
# 01:00 from a key refilled full by then leave nothing at 01:00
my $at1 = q{SET ratelimit.now_override = '2030-01-01 01:00:00+00';};
$node->safe_psql('postgres', "SELECT rl_limit('m', 'ahead', 1)");
# and an inline key's entry, idle since 2020, drained on the real clock:
# restored with the idle_at of before the take, rl_gc dropped it at once
my $inline = q{config => rl_token_bucket(10, '1 hour', storage => 'memory')};
$node->safe_psql('postgres', qq{SET ratelimit.now_override = '2020-01-01';
	SELECT rl_limit('inl', 'k', 1, $inline)});
$open = $node->background_psql('postgres');
$open->query_safe($at1);
$open->query_safe('BEGIN');
$open->query_safe("SELECT rl_limit('m', 'ahead', 10)");
$open->query_safe("SET LOCAL ratelimit.now_override = ''");
$open->query_safe("SELECT rl_limit('inl', 'k', 10, $inline)");
$node->stop('immediate');
$open->{run}->kill_kill;
$node->start;
cmp_ok($node->safe_psql('postgres', "$at1 SELECT value FROM rl_value('m', 'ahead')"),
	'<=', 0, 'a take cut off on a clock ahead is kept at its own time');
is( $node->safe_psql('postgres', qq{SET ratelimit.now_override = '';
		SELECT rl_gc_memory(); SELECT ok FROM rl_limit('inl', 'k', 10, $inline)}),
	"0\nf", 'an inline entry cut off drained is not dropped as idle after the restart');

# A cut-off take of a calendar month limit: restored with an idle_at of
# 30 days a month, rl_gc dropped it before it was full (1 a month,
# capacity 100: 100 taken at the start of 2030 are back on 2038-05-01,
# 101 * 30 days end on 2038-04-19)
my $months = q{config => rl_fixed_window(1, '1 month', 100,
	storage => 'memory', time_zone => 'UTC')};
$open = $node->background_psql('postgres');
$open->query_safe("SET ratelimit.now_override = '2030-01-01 00:00:01+00'");
$open->query_safe('BEGIN');
$open->query_safe("SELECT rl_limit('cal', 'k', 100, $months)");
$node->stop('immediate');
$open->{run}->kill_kill;
$node->start;
is( $node->safe_psql('postgres', qq{SET ratelimit.now_override = '2038-04-25 00:00:00+00';
		SELECT rl_gc_memory() >= 0; SELECT ok FROM rl_limit('cal', 'k', 100, $months)}),
	"t\nf", 'a calendar month entry cut off drained is not dropped before its months have refilled it');

# Crashes, memory_after_crash = 'full': every key starts full
crash_backend();
is(value('drained') . ' ' . value('part') . ' ' . value('open'), '10 10 10',
	'after a backend crash, with full, every key is full');
is($node->safe_psql('postgres', $info), 'shared memory 0 full',
	'no keys after a backend crash, memory_empty_since not set');

$node->safe_psql('postgres', "SELECT rl_limit('m', 'drained', 10)");
crash_postmaster();
ok(!-e $state_file, 'no state file after the postmaster was killed');
is(value('drained'), '10',
	'after the postmaster was killed, with full, a drained key is full');
is($node->safe_psql('postgres', $info), 'shared memory 0 full',
	'no keys after the postmaster was killed, memory_empty_since not set');

# Crashes, memory_after_crash = 'empty': every key without an entry counts
# as emptied at the restart and refills from there (10 an hour: one token
# every 6 minutes)
$node->append_conf('postgresql.conf', "ratelimit.memory_after_crash = 'empty'");
$node->reload;

# The calls of one session at `offset` past the restart.
sub after_restart
{
	my ($offset, $sql) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT set_config('ratelimit.now_override',
			(memory_empty_since + interval '$offset')::text, false)
		FROM rl_stats_info \\gset
		$sql});
}

for my $crash ([ 'a backend crash', \&crash_backend ],
	[ 'the postmaster killed', \&crash_postmaster ])
{
	my ($what, $how) = @$crash;
	# a key drained before the crash, and one never used
	$node->safe_psql('postgres', "SELECT rl_limit('m', 'drained', 10)");
	$how->();
	like($node->safe_psql('postgres', $info),
		qr/^shared memory 0 \d{4}-\d\d-\d\d /,
		"after $what, with empty, memory_empty_since is set");
	ok( $node->safe_psql('postgres',
			q{SELECT memory_empty_since > now() - interval '1 minute'
				AND memory_empty_since <= now() FROM rl_stats_info}),
		"memory_empty_since is the restart ($what)");
	# at the restart itself, and with a clock that reads earlier (set
	# back), a key is as empty as a second later
	is(after_restart('-1 minute', "SELECT ok FROM rl_limit('m', 'never')"),
		'f', "with a clock before $what, with empty, a key never used is refused");
	is(after_restart('0', "SELECT ok FROM rl_limit('m', 'never')"),
		'f', "right at $what, with empty, a key never used is refused");
	is(after_restart('1 second', "SELECT ok FROM rl_limit('m', 'never')"),
		'f', "a second after $what, still refused");
	is( after_restart(
			'6 minutes', q{SELECT ok FROM rl_limit('m', 'never');
				SELECT ok FROM rl_limit('m', 'never');}),
		"t\nf",
		"6 minutes after $what, exactly one token has refilled");
	is(after_restart('1 hour', "SELECT ok, remaining FROM rl_limit('m', 'drained', 10)"),
		't|0', "an hour after $what, with empty, a key is full again");
}

# rl_reset after such a crash starts the key from a full bucket, as the
# reference says (not from the restart's empty one): a key with no entry,
# then the same key once it has one; a rollback resets nothing; and a
# sweep or rl_gc does not take the reset back
is( after_restart(
		'1 minute', q{SELECT rl_reset('m', 'reset');
			SELECT value FROM rl_value('m', 'reset');
			SELECT ok FROM rl_limit('m', 'reset', 3);
			SELECT rl_reset('m', 'reset');
			SELECT value FROM rl_value('m', 'reset');
			BEGIN; SELECT rl_reset('m', 'reset rolled back'); ROLLBACK;
			SELECT ok FROM rl_limit('m', 'reset rolled back');}),
	"\n10\nt\n\n10\n\nf",
	'after a crash with empty, rl_reset makes a key full; rolled back, it stays empty');
is( after_restart(
		'2 minutes', q{SELECT rl_gc_memory(1000) >= 0;
			SELECT ok, remaining FROM rl_limit('m', 'reset', 10);}),
	"t\nt|0",
	'and rl_gc does not drop the reset key back to the empty state');

# A clean shutdown after such a crash keeps it: a key with no entry still
# counts as emptied at the crash's restart (it was full again after the
# next start)
my $since = $node->safe_psql('postgres',
	'SELECT memory_empty_since FROM rl_stats_info');
$node->restart;
is($node->safe_psql('postgres', 'SELECT memory_empty_since FROM rl_stats_info'),
	$since, 'a clean restart keeps memory_empty_since');
is(after_restart('1 second', "SELECT ok FROM rl_limit('m', 'never again')"),
	'f', 'after a clean restart, a key never used is still refused');

$node->stop;
done_testing();
