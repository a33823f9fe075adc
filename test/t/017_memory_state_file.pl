# The memory store's state file is checked before it is trusted: a file
# cut short, with a garbled magic number or a garbled entry restores
# nothing and the start counts as after a crash
# (ratelimit.memory_after_crash decides).  A shutdown that could not put
# the file in place, or that failed (the checkpointer killed during a fast
# shutdown), is a crash for the store too.
use strict;
use warnings;

use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;
use RatelimitMemory qw(memory_node memory_files);

my $node = memory_node('mem_file', "ratelimit.memory_after_crash = 'empty'");
my ($state_file, $running_file) = memory_files($node);

# Drain 20 keys, then stop the server cleanly: the file holds 20 entries.
sub drain_and_stop
{
	$node->safe_psql('postgres', q{
		SELECT count(*) FROM generate_series(1, 20) i,
			rl_limit('m', 'k' || i, 10);
		SELECT rl_reset('m', 'seven'); SELECT rl_limit('m', 'seven', 3);});
	$node->stop('fast');
	ok(-s $state_file, 'a clean shutdown wrote the state file');
}

# Keys restored, whether the start counted as after a crash, and how many
# of the 20 drained keys have a token a second after the restart (or at
# the pinned clock when it was not after a crash).
sub outcome
{
	return $node->safe_psql('postgres', q{
		SELECT set_config('ratelimit.now_override',
			coalesce(memory_empty_since + interval '1 second',
				'2030-01-01 00:00:01+00')::text, false)
		FROM rl_stats_info \gset
		SELECT memory_keys || ' keys, '
			|| CASE WHEN memory_empty_since IS NULL THEN 'not after a crash'
				ELSE 'after a crash' END || ', '
			|| (SELECT count(*) FROM generate_series(1, 20) i,
				rl_value('m', 'k' || i) v WHERE v.value >= 1) || ' with a token'
		FROM rl_stats_info});
}

# Overwrite bytes of the state file at an offset.
sub garble
{
	my ($offset, $bytes) = @_;
	open(my $fh, '+<', $state_file) or die "could not open $state_file: $!";
	binmode $fh;
	seek($fh, $offset, 0) or die;
	my $old;
	read($fh, $old, length $bytes);
	seek($fh, $offset, 0) or die;
	print $fh ($bytes ^ $old);
	close $fh;
}

# CRC-32C (Castagnoli), as PostgreSQL's pg_crc32c computes it.
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xffffffff;
	for my $byte (unpack('C*', $data))
	{
		$crc ^= $byte;
		$crc = ($crc >> 1) ^ (($crc & 1) ? 0x82f63b78 : 0) for 1 .. 8;
	}
	return $crc ^ 0xffffffff;
}

# Replace the first occurrence of a byte string in the state file, and
# write a checksum that matches again.
sub forge
{
	my ($from, $to) = @_;
	my $data = slurp_file($state_file);
	my $at = index($data, $from);
	die 'bytes not found in the state file' if $at < 0;
	substr($data, $at, length $from) = $to;
	substr($data, -4) = pack('V', crc32c(substr($data, 0, -4)));
	open(my $fh, '>', $state_file) or die;
	binmode $fh;
	print $fh $data;
	close $fh;
}

# A valid file: every drained key stays drained, not after a crash
drain_and_stop();
$node->start;
is(outcome(), '21 keys, not after a crash, 0 with a token',
	'a valid state file restores every key');

my @cases = (
	[
		'a file cut to half',
		sub { truncate($state_file, int((-s $state_file) / 2)) or die; }
	],
	[ 'a garbled magic number', sub { garble(0, "\xff\x00\xff\x00"); } ],
	[
		'one entry garbled',
		sub { garble(int((-s $state_file) / 2), "\x01\x02\x04\x08\x10\x20\x40\x80"); }
	],
	[ 'one byte more', sub { open(my $fh, '>>', $state_file) or die; print $fh "x"; close $fh; } ],
	# with a matching checksum: the one key left at 7 tokens made NaN
	[
		'an entry with a value that is not a number',
		sub { forge(pack('d<', 7), pack('d<', 'NaN')); }
	],);

for my $case (@cases)
{
	my ($what, $how) = @$case;
	drain_and_stop();
	$how->();
	my $log_offset = -s $node->logfile;
	$node->start;
	is(outcome(), '0 keys, after a crash, 0 with a token',
		"$what, with empty: nothing restored, every drained key empty");
	like(slurp_file($node->logfile, $log_offset),
		qr/LOG:  ignoring ratelimit memory store file "[^"]*"/,
		"$what: the log says the file was ignored");
	ok(!-e $state_file, "$what: the file is removed");
}

# With 'full', an invalid file starts every key full, as after a crash
$node->append_conf('postgresql.conf', "ratelimit.memory_after_crash = 'full'");
drain_and_stop();
garble(int((-s $state_file) / 2), "\xff");
$node->start;
is(outcome(), '0 keys, not after a crash, 20 with a token',
	'a garbled file, with full: every key starts full');
$node->append_conf('postgresql.conf', "ratelimit.memory_after_crash = 'empty'");
$node->restart;

# A shutdown that could not put the file in place (a directory is in the
# way) leaves the marker: the next start is after a crash
drain_and_stop();
$node->start;
mkdir $state_file or die;
mkdir "$state_file/in the way" or die;
my $log_offset = -s $node->logfile;
$node->stop('fast');
like(slurp_file($node->logfile, $log_offset),
	qr/could not \w+ file "pg_stat\/ratelimit_memory.state/, 'the state file could not be put in place');
ok(-e $running_file, 'the marker of a running server is kept');
rmdir "$state_file/in the way";
rmdir $state_file;
$node->start;
is(outcome(), '0 keys, after a crash, 0 with a token',
	'a shutdown that could not save the store counts as a crash');

# A fast shutdown that fails (its checkpointer killed, as a PANIC for lack
# of space would end it) writes no file and leaves the marker, so the next
# start is after a crash, though pg_ctl stop reported success
$node->safe_psql('postgres', q{
	SELECT count(*) FROM generate_series(1, 20) i, rl_limit('m', 'k' || i, 10)});
my $checkpointer = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'});
kill 'STOP', $checkpointer;
$log_offset = -s $node->logfile;
my $postmaster = $node->{_pid};
system_or_bail('pg_ctl', '-D', $node->data_dir, '-m', 'fast', '--no-wait', 'stop');
$node->wait_for_log(qr/received fast shutdown request/, $log_offset);
sleep 1;
kill 'KILL', $checkpointer;
for (1 .. 60) { last unless kill 0, $postmaster; sleep 1; }
ok(!kill(0, $postmaster), 'the postmaster exited');
$node->{_pid} = undef;
ok(!-e $state_file, 'a failed shutdown writes no state file');
ok(-e $running_file, 'and keeps the marker');
$node->start;
is(outcome(), '0 keys, after a crash, 0 with a token',
	'a failed shutdown counts as a crash: with empty, every drained key empty');

$node->stop;
done_testing();
