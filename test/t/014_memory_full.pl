# The memory store full: with ratelimit.memory_max_keys = 128 (the
# minimum) and 128 keys none of which is idle, a call on a new key raises
# 53400 and counts in rl_stats_info.memory_full_errors, never dropping live
# state, while the existing keys go on working; once keys have refilled
# completely they are dropped to make room, but never one a transaction
# still holds.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use lib dirname(__FILE__) . '/../perl';
use RatelimitPsql;

my $t0 = "SET ratelimit.now_override = '2030-01-01 00:00:00+00';";
my $t1 = "SET ratelimit.now_override = '2030-01-01 01:00:00+00';";
my $info = q{SELECT memory_keys || '/' || memory_max_keys || ' errors '
	|| memory_full_errors FROM rl_stats_info};

my $node = PostgreSQL::Test::Cluster->new('mem_full');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ratelimit'
ratelimit.memory_max_keys = 128
});
$node->start;
# 2 an hour, capacity 2: a key that took 1 refills completely in 30
# minutes, one drained in an hour
$node->safe_psql('postgres', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('f', 'token bucket', 2, '1 hour', storage => 'memory');
});

# A call expected to fail: its SQLSTATE and message.
sub error_of
{
	my ($sql) = @_;
	my ($ret, $out, $err) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $err =~ /ERROR:  (\w{5}): ([^\n]*)/ ? "$1 $2" : "no error: $out";
}

# Calls on n new keys of a limit in database db at a clock, each one
# that finds the store full ignored: how many did (53400).
sub new_keys
{
	my ($db, $clock, $limit, $prefix, $n) = @_;
	my $before =
	  $node->safe_psql($db, 'SELECT memory_full_errors FROM rl_stats_info');
	return $node->safe_psql($db, "$clock DO \$\$ BEGIN
		FOR i IN 1..$n LOOP
			BEGIN PERFORM rl_limit('$limit', '$prefix' || i);
			EXCEPTION WHEN configuration_limit_exceeded THEN NULL; END;
		END LOOP; END \$\$;
		SELECT memory_full_errors - $before FROM rl_stats_info");
}

# one key held by a transaction left open, 127 committed, none idle
my $open = $node->background_psql('postgres');
$open->query_safe($t0);
$open->query_safe('BEGIN');
$open->query_safe("SELECT rl_limit('f', 'held')");
is( $node->safe_psql('postgres',
		"$t0 SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 127) AS i,"
		  . " rl_limit('f', i)"),
	'127', '127 new keys granted');
is($node->safe_psql('postgres', $info), '128/128 errors 0',
	'the store holds 128 keys');

is(error_of("$t0 SELECT rl_limit('f', 'new')"),
	'53400 the ratelimit memory store is full',
	'a new key in a store full of keys not idle raises 53400');
is($node->safe_psql('postgres', $info), '128/128 errors 1',
	'memory_full_errors counts it, and no key was dropped');
is($node->safe_psql('postgres', "$t0 SELECT ok, remaining FROM rl_limit('f', 1)"),
	't|0', 'an existing key still works: its state is intact');
is($node->safe_psql('postgres', "$t0 SELECT ok FROM rl_limit('f', 1)"),
	'f', 'and is refused once drained');
is($node->safe_psql('postgres', "$t0 SELECT ok, remaining FROM rl_check('f', 'new')"),
	't|1', 'rl_check on a new key needs no entry');
is(error_of("$t0 SELECT rl_limit('f', 'new')"),
	'53400 the ratelimit memory store is full',
	'a new key still raises 53400');
is($node->safe_psql('postgres', $info), '128/128 errors 2',
	'memory_full_errors counts every such call');

# an hour later every committed key has refilled completely: idle, and
# dropped when room is needed; the held one is not
is($node->safe_psql('postgres', "$t1 SELECT ok, remaining FROM rl_limit('f', 'new')"),
	't|1', 'once keys have refilled a new key is granted');
is( $node->safe_psql('postgres',
		"$t1 SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 126) AS i,"
		  . " rl_limit('f', 'b' || i)"),
	'126', '126 more new keys granted');
is($node->safe_psql('postgres', $info), '128/128 errors 2',
	'the idle keys were dropped: the held key, new and 126 more');
is(error_of("$t1 SELECT rl_limit('f', 'b127')"),
	'53400 the ratelimit memory store is full',
	'a key an open transaction holds is never dropped, however long ago it refilled');
is($open->query_safe("SELECT ok, remaining FROM rl_limit('f', 'held')"),
	't|0', 'the open transaction still has its key');

# the open transaction rolls back: its key is full, hence idle
$open->query_safe('ROLLBACK');
$open->quit;
is($node->safe_psql('postgres', "$t1 SELECT ok FROM rl_limit('f', 'b127')"),
	't', 'once the transaction has rolled back its key is dropped for a new one');
is($node->safe_psql('postgres', "$t1 SELECT ok, remaining FROM rl_limit('f', 'new')"),
	't|0', 'the keys of live state are all still there');
is($node->safe_psql('postgres', $info), '128/128 errors 3',
	'128 keys, three errors in all');

# A definition changed by hand while rl_definitions' row trigger is
# disabled fires nothing: the first lookup that finds the trigger not
# firing always makes every idle judgement made so far stop counting, so
# the sweep never drops a key under the old policy.  'g': 10 an hour,
# capacity 10, drained at 03:00; by hand capacity 1000; at 04:00 the key
# holds 10 (1000 if its entry were dropped as idle under the old policy).
my $t3 = "SET ratelimit.now_override = '2030-01-01 03:00:00+00';";
my $t4 = "SET ratelimit.now_override = '2030-01-01 04:00:00+00';";
$node->safe_psql('postgres', q{
	SELECT rl_define('g', 'token bucket', 10, '1 hour', storage => 'memory');
});
$node->safe_psql('postgres', "$t3 SELECT rl_gc_memory(1000)");
is($node->safe_psql('postgres', "$t3 SELECT ok FROM rl_limit('g', 'k', 10)"),
	't', 'g: the key drained at 03:00');
$node->safe_psql('postgres', q{
	ALTER TABLE rl_definitions DISABLE TRIGGER rl_definitions_row_changed;
	UPDATE rl_definitions SET capacity = 1000 WHERE name = 'g';
});
is( $node->safe_psql('postgres', "$t4 DO \$\$ BEGIN
		FOR i IN 1..200 LOOP
			BEGIN PERFORM rl_limit('f', 'c' || i);
			EXCEPTION WHEN configuration_limit_exceeded THEN NULL; END;
		END LOOP; END \$\$; SELECT value FROM rl_value('g', 'k')"),
	'10', 'a definition changed with the trigger disabled: the key is not dropped under the old policy');
$node->safe_psql('postgres', q{
	ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_row_changed;
});

# A change to one memory limit leaves the idle judgements of the others
# standing: 120 keys of 'h' idle after a second; defining 'other' does not
# stop the sweep from dropping them for 120 new keys a minute later.
my $t6 = "SET ratelimit.now_override = '2030-01-02 00:00:00+00';";
my $t7 = "SET ratelimit.now_override = '2030-01-02 00:01:00+00';";
$node->safe_psql('postgres', "$t6 SELECT rl_gc_memory(1000)");
$node->safe_psql('postgres', q{
	SELECT rl_define('h', 'token bucket', 1, '1 second', storage => 'memory');
});
is( $node->safe_psql('postgres',
		"$t6 SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 120) AS i,"
		  . " rl_limit('h', 'a' || i)"),
	'120', 'h: 120 keys taken');
$node->safe_psql('postgres', q{
	SELECT rl_define('other', 'token bucket', 1, '1 hour', storage => 'memory');
});
my $errors = $node->safe_psql('postgres', 'SELECT memory_full_errors FROM rl_stats_info');
is( $node->safe_psql('postgres', "$t7 DO \$\$ DECLARE n int := 0; BEGIN
		FOR i IN 1..120 LOOP
			BEGIN PERFORM rl_limit('h', 'b' || i); n := n + 1;
			EXCEPTION WHEN configuration_limit_exceeded THEN NULL; END;
		END LOOP; RAISE NOTICE 'granted %', n; END \$\$;
		SELECT memory_full_errors - $errors FROM rl_stats_info"),
	'0', 'a change to another limit: the idle keys of h are dropped for new ones, no new 53400');

# Judgements no change may keep: a take under the transaction's own
# definition change, rolled back; and a definition edited by hand between
# disabling and enabling the trigger in one transaction.  Each key drained
# under 10 an hour; after the store is filled half an hour (a) or an hour
# (a2) later, it holds 5 and 10, as under the policy in force.
sub fill_store
{
	my ($clock, $prefix) = @_;
	new_keys('postgres', $clock, 'h', $prefix, 200);
}
my $t8 = "SET ratelimit.now_override = '2030-01-03 03:00:00+00';";
my $t8b = "SET ratelimit.now_override = '2030-01-03 03:00:05+00';";
my $t9 = "SET ratelimit.now_override = '2030-01-03 03:30:00+00';";
my $t10 = "SET ratelimit.now_override = '2030-01-03 04:00:00+00';";
$node->safe_psql('postgres', q{
	SELECT rl_define('a', 'token bucket', 10, '1 hour', storage => 'memory');
	SELECT rl_define('a2', 'token bucket', 10, '1 hour', storage => 'memory');
});
$node->safe_psql('postgres',
	"$t8 SELECT rl_limit('a', 'k', 10); SELECT rl_limit('a2', 'k', 10);");
$node->safe_psql('postgres', "$t8b BEGIN;
	SELECT rl_define('a', 'token bucket', 10, '1 second', storage => 'memory');
	SELECT rl_limit('a', 'k', 1);
	ROLLBACK;");
fill_store($t9, 'd');
is($node->safe_psql('postgres', "$t9 SELECT value FROM rl_value('a', 'k')"),
	'5', 'a take under a rolled-back definition of its own: the key is not dropped');
$node->safe_psql('postgres', q{BEGIN;
	ALTER TABLE rl_definitions DISABLE TRIGGER rl_definitions_row_changed;
	UPDATE rl_definitions SET capacity = 1000 WHERE name = 'a2';
	ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_row_changed;
	COMMIT;});
fill_store($t10, 'e');
is($node->safe_psql('postgres', "$t10 SELECT value FROM rl_value('a2', 'k')"),
	'10', 'a hand edit between disabling and enabling the trigger: the key is not dropped');

# A limit redefined (to the same policy, as a deploy does) while the store
# is full of its own keys makes room for its own new keys once they are
# idle, without rl_gc: its calls judge its entries under the policy in
# force (they waited for rl_gc, and every new key raised 53400).
my $t11 = "SET ratelimit.now_override = '2030-01-04 00:00:00+00';";
my $t12 = "SET ratelimit.now_override = '2030-01-04 00:01:00+00';";
$node->safe_psql('postgres', "$t11 SELECT rl_gc_memory(1000)");
$node->safe_psql('postgres', q{
	SELECT rl_define('r', 'token bucket', 1, '1 second', storage => 'memory');
});
new_keys('postgres', $t11, 'r', 'a', 200);
is($node->safe_psql('postgres', 'SELECT memory_keys FROM rl_stats_info'),
	'128', 'r: the store is full of its keys');
$node->safe_psql('postgres', q{
	SELECT rl_define('r', 'token bucket', 1, '1 second', storage => 'memory');
});
is(new_keys('postgres', $t12, 'r', 'b', 100),
	'0', 'r redefined: its idle keys make room for its new ones, no 53400');
is($node->safe_psql('postgres', "$t12 SELECT value FROM rl_value('r', 'b1')"),
	'0', 'and the new keys keep their state');

# A change in one database leaves another's idle judgements standing:
# database b's store is full of idle keys of 'q1'; in database postgres an
# unrelated memory limit is defined, a trigger of an unrelated table is
# disabled, and a call is made while its rl_definitions trigger is
# disabled; each time, new keys of b's 'q2' still find room (every one
# raised 53400 until rl_gc ran in b).
my $t13 = "SET ratelimit.now_override = '2030-01-05 00:00:00+00';";
$node->safe_psql('postgres', "$t13 SELECT rl_gc_memory(1000)");
$node->safe_psql('postgres', 'CREATE DATABASE b');
$node->safe_psql('b', q{
	CREATE EXTENSION ratelimit;
	SELECT rl_define('q1', 'token bucket', 1, '1 second', storage => 'memory');
	SELECT rl_define('q2', 'token bucket', 1, '1 second', storage => 'memory');
});
$node->safe_psql('postgres', 'CREATE TABLE unrelated (i int);
	CREATE FUNCTION unrelated_trigger() RETURNS trigger LANGUAGE plpgsql
		AS $$BEGIN RETURN NEW; END$$;
	CREATE TRIGGER unrelated_t BEFORE INSERT ON unrelated
		FOR EACH ROW EXECUTE FUNCTION unrelated_trigger();');
my @changes = (
	[ 'an unrelated memory limit defined',
		q{SELECT rl_define('unrelated', 'token bucket', 1, '1 hour', storage => 'memory')} ],
	[ 'a trigger of an unrelated table disabled',
		'ALTER TABLE unrelated DISABLE TRIGGER unrelated_t' ],
	[ 'a call while its rl_definitions trigger is disabled',
		"ALTER TABLE rl_definitions DISABLE TRIGGER rl_definitions_row_changed;
		 SELECT rl_check('r', 'k');
		 ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_row_changed;" ]);
my $minute = 0;
for my $change (@changes)
{
	my ($what, $sql) = @$change;
	my $fill = sprintf("SET ratelimit.now_override = '2030-01-05 00:%02d:00+00';", $minute++);
	my $later = sprintf("SET ratelimit.now_override = '2030-01-05 00:%02d:00+00';", $minute++);
	new_keys('b', $fill, 'q1', $minute, 200);
	$node->safe_psql('postgres', $sql);
	is(new_keys('b', $later, 'q2', $minute, 100),
		'0', "$what in another database: b's idle keys make room, no 53400");
}

$node->stop;

# A store made smaller across a clean restart restores the live entries
# first: 300 idle keys (taken from in 2020, full again) and 20 drained in
# 2030 go into 128 entries without losing a drained one (restored in
# bucket order, most were lost and full again)
my $small = PostgreSQL::Test::Cluster->new('mem_smaller');
$small->init;
$small->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ratelimit'
});
$small->start;
my $inline = q{config => rl_token_bucket(10, '1 hour', storage => 'memory')};
$small->safe_psql('postgres', qq{
	CREATE EXTENSION ratelimit;
	SET ratelimit.now_override = '2020-01-01';
	SELECT count(*) FROM generate_series(1, 300) i,
		rl_limit('idle', i::text, 1, $inline) WHERE ok;
	$t0
	SELECT count(*) FROM generate_series(1, 20) i,
		rl_limit('drained', i::text, 10, $inline) WHERE ok;
});
$small->stop;
$small->append_conf('postgresql.conf', 'ratelimit.memory_max_keys = 128');
$small->start;
is( $small->safe_psql('postgres', qq{$t0
		SELECT count(*) FROM generate_series(1, 20) i,
			rl_limit('drained', i::text, 1, $inline) WHERE ok}),
	'0', 'a smaller store restores live entries before idle ones');
$small->stop;
done_testing();
