/* ratelimit--1.3.sql */

\echo Use "CREATE EXTENSION ratelimit" to load this file. \quit

-- Every object lives in the schema CREATE EXTENSION chose (@extschema@);
-- the C code finds its tables through the schema of the function called,
-- never through search_path.

CREATE TYPE @extschema@.rl_policy AS (
	kind text,
	rate float8,
	period interval,
	capacity float8,
	max_reserved float8,
	shards integer,
	start timestamptz,
	storage text,
	time_zone text
);
COMMENT ON TYPE @extschema@.rl_policy IS
	'a rate limit policy for inline use; build it with rl_token_bucket(), rl_fixed_window() or rl_sliding_window()';

CREATE TYPE @extschema@.rl_result AS (
	ok boolean,
	retry_after interval,
	remaining float8,
	reset_after interval,
	capacity float8,
	allowed boolean,
	retry_after_ms bigint,
	reset_after_ms bigint,
	granted float8
);
COMMENT ON TYPE @extschema@.rl_result IS
	'the answer of rl_limit and rl_check: granted?, when to retry, tokens left, time until full or next window, the limit''s size, whether to act now, the times in milliseconds, and the tokens taken';
COMMENT ON COLUMN @extschema@.rl_result.ok IS
	'the call got its tokens (a reservation too: see allowed)';
COMMENT ON COLUMN @extschema@.rl_result.retry_after IS
	'refused: when the same call would be granted; a reservation: when to act; NULL otherwise';
COMMENT ON COLUMN @extschema@.rl_result.remaining IS
	'tokens left (whole ones when the limit and the count are whole; negative: reserved ahead)';
COMMENT ON COLUMN @extschema@.rl_result.reset_after IS
	'until the key is full again (token bucket) or its next window starts';
COMMENT ON COLUMN @extschema@.rl_result.capacity IS
	'the limit''s size: the most tokens a key holds (Upstash''s limit)';
COMMENT ON COLUMN @extschema@.rl_result.allowed IS
	'act now: ok, and no wait before it (false for a reservation that must wait retry_after)';
COMMENT ON COLUMN @extschema@.rl_result.retry_after_ms IS
	'retry_after in whole milliseconds, rounded up';
COMMENT ON COLUMN @extschema@.rl_result.reset_after_ms IS
	'reset_after in whole milliseconds, rounded up';
COMMENT ON COLUMN @extschema@.rl_result.granted IS
	'the tokens the call took: count when ok, 0 when refused, what the key held for a partial call (shadow mode, an allowed address: count, though it took nothing); rl_check: what rl_limit would take';

CREATE TYPE @extschema@.rl_state AS (
	value float8,
	ts timestamptz
);
COMMENT ON TYPE @extschema@.rl_state IS
	'the two numbers of a limit, brought forward to now: tokens held and the time they are counted at';

-- Cold: definitions, written rarely, read on every call.
CREATE TABLE @extschema@.rl_definitions (
	name text COLLATE "C" PRIMARY KEY
		CHECK (octet_length(name) OPERATOR(pg_catalog.>=) 1
			AND octet_length(name) OPERATOR(pg_catalog.<=) 256),
	kind text NOT NULL
		CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['token bucket', 'fixed window'])),
	rate float8 NOT NULL,
	period interval NOT NULL,
	capacity float8 NOT NULL,
	max_reserved float8,
	shards integer NOT NULL DEFAULT 1,
	start timestamptz,
	storage text NOT NULL DEFAULT 'table'
		CHECK (storage OPERATOR(pg_catalog.=) ANY (ARRAY['table', 'memory'])),
	shadow boolean NOT NULL DEFAULT false,
	block_for interval
		CHECK (block_for OPERATOR(pg_catalog.>) '0'::pg_catalog.interval),
	block_factor float8
		CHECK (block_factor OPERATOR(pg_catalog.>=) 1),
	block_max interval
		CHECK (block_max OPERATOR(pg_catalog.>) '0'::pg_catalog.interval),
	block_horizon interval
		CHECK (block_horizon OPERATOR(pg_catalog.>) '0'::pg_catalog.interval),
	time_zone text,
	ipv4_prefix smallint
		CHECK (ipv4_prefix OPERATOR(pg_catalog.>=) 1 AND ipv4_prefix OPERATOR(pg_catalog.<=) 32),
	ipv6_prefix smallint
		CHECK (ipv6_prefix OPERATOR(pg_catalog.>=) 1 AND ipv6_prefix OPERATOR(pg_catalog.<=) 128),
	max_debt float8
		CHECK (max_debt OPERATOR(pg_catalog.>=) 0)
);
COMMENT ON COLUMN @extschema@.rl_definitions.storage IS
	'where the limit''s state lives: ''table'' (rows of rate_limits) or ''memory'' (the memory store, in shared memory)';
COMMENT ON COLUMN @extschema@.rl_definitions.shadow IS
	'shadow mode: every call is granted, and those the limit would refuse take nothing and are counted in rl_stats.shadow_refused';
COMMENT ON COLUMN @extschema@.rl_definitions.block_for IS
	'a refused call blocks its key this long (not lengthened by calls refused during the block); NULL: no automatic block';
COMMENT ON COLUMN @extschema@.rl_definitions.block_factor IS
	'escalation: an automatic block lasts block_for times block_factor for every offence the key still owes (each block adds one, one is forgotten per block_horizon); NULL: every block lasts block_for';
COMMENT ON COLUMN @extschema@.rl_definitions.block_max IS
	'escalation: the longest automatic block; NULL: 100 years';
COMMENT ON COLUMN @extschema@.rl_definitions.block_horizon IS
	'escalation: one offence is forgotten per block_horizon once a block ends; NULL: 1 day';
COMMENT ON COLUMN @extschema@.rl_definitions.time_zone IS
	'fixed window: calendar windows (a period of 1 day, 1 week, 1 month or 1 year) starting at local midnight in this time zone; NULL for windows of a period';
COMMENT ON COLUMN @extschema@.rl_definitions.ipv4_prefix IS
	'an IPv4 key counts as its network of this prefix length (24: 10.1.2.0/24 for 10.1.2.3); NULL: each address is a key';
COMMENT ON COLUMN @extschema@.rl_definitions.ipv6_prefix IS
	'an IPv6 key counts as its network of this prefix length (64: 2001:db8::/64 for 2001:db8::1); NULL: each address is a key';
COMMENT ON COLUMN @extschema@.rl_definitions.max_debt IS
	'a call is admitted on a positive balance and may take the key down to -max_debt, as may rl_settle''s charge (token bucket and fixed window, without shards or max_reserved); NULL: a call needs its whole count';
COMMENT ON TABLE @extschema@.rl_definitions IS
	'named rate limit definitions; write them with rl_define() and rl_undefine()';

-- Hot: two numbers per (name, key, shard), updated in place, and a third
-- for a sliding window (prev; NULL, which costs nothing, for the other
-- kinds).  The NULL key is stored as '' (empty keys are refused), so the
-- primary key stays unique.  fillfactor leaves room on each page for HOT
-- updates.
CREATE TABLE @extschema@.rate_limits (
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	shard smallint NOT NULL,
	value float8 NOT NULL,
	ts timestamptz NOT NULL,
	prev float8,
	PRIMARY KEY (name, key, shard)
) WITH (fillfactor = 90);
COMMENT ON TABLE @extschema@.rate_limits IS
	'rate limit state: tokens (value) at time ts per (name, key, shard); key '''' is the shared NULL key';
COMMENT ON COLUMN @extschema@.rate_limits.prev IS
	'sliding window: what the window before the one starting at ts counted; token bucket and fixed window: the key''s offence score s for escalating blocks (block_factor), stored as -(1 + s), NULL for none';

REVOKE ALL ON TABLE @extschema@.rl_definitions FROM PUBLIC;
REVOKE ALL ON TABLE @extschema@.rate_limits FROM PUBLIC;

-- Policy constructors: pure, checked.

CREATE FUNCTION @extschema@.rl_token_bucket(
	rate float8,
	period interval,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1,
	storage text DEFAULT 'table')
RETURNS @extschema@.rl_policy
AS 'MODULE_PATHNAME', 'rl_token_bucket'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.rl_token_bucket(float8, interval, float8, float8, integer, text) IS
	'an inline token bucket policy: rate tokens per period, up to capacity (default rate); storage ''table'' or ''memory''';

CREATE FUNCTION @extschema@.rl_fixed_window(
	rate float8,
	period interval,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1,
	start timestamptz DEFAULT NULL,
	storage text DEFAULT 'table',
	time_zone text DEFAULT NULL)
RETURNS @extschema@.rl_policy
AS 'MODULE_PATHNAME', 'rl_fixed_window'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.rl_fixed_window(float8, interval, float8, float8, integer, timestamptz, text, text) IS
	'an inline fixed window policy: rate tokens at each window start, up to capacity (default rate); storage ''table'' or ''memory''; time_zone: calendar windows (a period of 1 day, 1 week, 1 month or 1 year) starting at local midnight there';

CREATE FUNCTION @extschema@.rl_sliding_window(
	rate float8,
	period interval,
	start timestamptz DEFAULT NULL,
	storage text DEFAULT 'table')
RETURNS @extschema@.rl_policy
AS 'MODULE_PATHNAME', 'rl_sliding_window'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.rl_sliding_window(float8, interval, timestamptz, text) IS
	'an inline sliding window policy: at most rate per period, estimated from the counts of the current and the previous window (windows as a fixed window''s); storage ''table'' or ''memory''';

-- Administration.

CREATE FUNCTION @extschema@.rl_define(
	name text,
	kind text,
	rate float8,
	period interval,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL,
	shards integer DEFAULT 1,
	start timestamptz DEFAULT NULL,
	storage text DEFAULT 'table',
	time_zone text DEFAULT NULL,
	shadow boolean DEFAULT false,
	block_for interval DEFAULT NULL,
	block_factor float8 DEFAULT NULL,
	block_max interval DEFAULT NULL,
	block_horizon interval DEFAULT NULL,
	ipv4_prefix integer DEFAULT NULL,
	ipv6_prefix integer DEFAULT NULL,
	max_debt float8 DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_define'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_define(text, text, float8, interval, float8, float8, integer, timestamptz, text, text, boolean, interval, float8, interval, interval, integer, integer, float8) IS
	'create or replace a named rate limit; storage ''table'' (the default) or ''memory''; time_zone: a fixed window of calendar windows (1 day, 1 week, 1 month or 1 year) starting at local midnight there; shadow: grant and count what it would refuse; block_for: block a key that is refused, for longer on repeated offences with block_factor (up to block_max, one offence forgotten per block_horizon); ipv4_prefix, ipv6_prefix: an inet key counts its whole network of that prefix length as one key; max_debt: admit on a positive balance, and let a call or rl_settle take the key down to -max_debt; the state of the store it keeps is kept';

CREATE FUNCTION @extschema@.rl_undefine(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_undefine'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_undefine(text) IS
	'drop a named limit and its state; leases still held stay, and count if the name is defined again';

-- Per-key functions: one C function serves every key type; a non-text
-- key is stored as its text form.  Only the text version defaults the key,
-- so rl_limit('name') is not ambiguous; smallint has its own versions because
-- it would otherwise be ambiguous between integer and bigint.

CREATE FUNCTION @extschema@.rl_limit(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL,
	partial boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_limit'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_limit(text, text, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them; wait: sleep until granted when retry_after is at most wait; partial: take what the key holds when less than count (granted says how much)';

CREATE FUNCTION @extschema@.rl_limit(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL,
	partial boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_limit'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_limit(text, bigint, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them; wait: sleep until granted when retry_after is at most wait; partial: take what the key holds when less than count (granted says how much)';

CREATE FUNCTION @extschema@.rl_limit(
	name text,
	key integer,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL,
	partial boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_limit'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_limit(text, integer, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them; wait: sleep until granted when retry_after is at most wait; partial: take what the key holds when less than count (granted says how much)';

CREATE FUNCTION @extschema@.rl_limit(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL,
	partial boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_limit'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_limit(text, smallint, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them; wait: sleep until granted when retry_after is at most wait; partial: take what the key holds when less than count (granted says how much)';

CREATE FUNCTION @extschema@.rl_limit(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL,
	partial boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_limit'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_limit(text, uuid, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them; wait: sleep until granted when retry_after is at most wait; partial: take what the key holds when less than count (granted says how much)';

CREATE FUNCTION @extschema@.rl_check(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_check'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_check(text, text, float8, boolean, boolean, @extschema@.rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION @extschema@.rl_check(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_check'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_check(text, bigint, float8, boolean, boolean, @extschema@.rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION @extschema@.rl_check(
	name text,
	key integer,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_check'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_check(text, integer, float8, boolean, boolean, @extschema@.rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION @extschema@.rl_check(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_check'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_check(text, smallint, float8, boolean, boolean, @extschema@.rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION @extschema@.rl_check(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_check'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_check(text, uuid, float8, boolean, boolean, @extschema@.rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking';

CREATE FUNCTION @extschema@.rl_value(
	name text,
	key text DEFAULT NULL,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_value'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_value(text, text, @extschema@.rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION @extschema@.rl_value(
	name text,
	key bigint,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_value'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_value(text, bigint, @extschema@.rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION @extschema@.rl_value(
	name text,
	key integer,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_value'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_value(text, integer, @extschema@.rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION @extschema@.rl_value(
	name text,
	key smallint,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_value'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_value(text, smallint, @extschema@.rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION @extschema@.rl_value(
	name text,
	key uuid,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_value'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_value(text, uuid, @extschema@.rl_policy) IS
	'the tokens a limit holds now, without writing or locking';

CREATE FUNCTION @extschema@.rl_reset(
	name text,
	key text DEFAULT NULL,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_reset'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_reset(text, text, @extschema@.rl_policy) IS
	'forget the state of one key (every shard): it starts again from a full bucket; config: the key''s state under that inline policy, as rl_limit with it uses';

CREATE FUNCTION @extschema@.rl_reset(
	name text,
	key bigint,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_reset'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_reset(text, bigint, @extschema@.rl_policy) IS
	'forget the state of one key (every shard): it starts again from a full bucket; config: the key''s state under that inline policy, as rl_limit with it uses';

CREATE FUNCTION @extschema@.rl_reset(
	name text,
	key integer,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_reset'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_reset(text, integer, @extschema@.rl_policy) IS
	'forget the state of one key (every shard): it starts again from a full bucket; config: the key''s state under that inline policy, as rl_limit with it uses';

CREATE FUNCTION @extschema@.rl_reset(
	name text,
	key smallint,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_reset'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_reset(text, smallint, @extschema@.rl_policy) IS
	'forget the state of one key (every shard): it starts again from a full bucket; config: the key''s state under that inline policy, as rl_limit with it uses';

CREATE FUNCTION @extschema@.rl_reset(
	name text,
	key uuid,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_reset'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_reset(text, uuid, @extschema@.rl_policy) IS
	'forget the state of one key (every shard): it starts again from a full bucket; config: the key''s state under that inline policy, as rl_limit with it uses';

CREATE TYPE @extschema@.rl_all_result AS (
	ok boolean,
	retry_after interval,
	refused_name text,
	refused_key text,
	remaining float8,
	reset_after interval,
	capacity float8,
	allowed boolean,
	retry_after_ms bigint,
	reset_after_ms bigint
);
COMMENT ON TYPE @extschema@.rl_all_result IS
	'the answer of rl_limit_all: granted?, the longest retry_after, the limit that refused, the tokens left, reset and size of the limit that decides the answer, whether to act now, and the times in milliseconds';
COMMENT ON COLUMN @extschema@.rl_all_result.remaining IS
	'tokens left of the limit that decides the answer: the refusing one, or, all granted, the one with the fewest left';
COMMENT ON COLUMN @extschema@.rl_all_result.reset_after IS
	'until that limit''s key is full again (token bucket) or its next window starts';
COMMENT ON COLUMN @extschema@.rl_all_result.capacity IS
	'that limit''s size';
COMMENT ON COLUMN @extschema@.rl_all_result.allowed IS
	'act now: ok, and no limit''s reservation to wait for';
COMMENT ON COLUMN @extschema@.rl_all_result.retry_after_ms IS
	'retry_after in whole milliseconds, rounded up';
COMMENT ON COLUMN @extschema@.rl_all_result.reset_after_ms IS
	'reset_after in whole milliseconds, rounded up';

CREATE FUNCTION @extschema@.rl_limit_all(
	names text[],
	keys text[],
	counts float8[],
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	jitter boolean DEFAULT false)
RETURNS @extschema@.rl_all_result
AS 'MODULE_PATHNAME', 'rl_limit_all'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_limit_all(text[], text[], float8[], boolean, boolean, boolean) IS
	'consume from several limits at once, all or nothing; rows are locked in one canonical order';

CREATE FUNCTION @extschema@.rl_enforce()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rl_enforce'
LANGUAGE C SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_enforce() IS
	'row trigger: rl_enforce(name, key_column [, count]) consumes per row and raises RL001 when refused';

-- Grants: everything starts revoked from PUBLIC; then anyone may build
-- policies and consume, check and read limits.  Defining, undefining and
-- resetting limits stay with the extension owner until granted.
REVOKE ALL ON FUNCTION @extschema@.rl_limit(text, text, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_check(text, text, float8, boolean, boolean, @extschema@.rl_policy, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_value(text, text, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_reset(text, text, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_limit(text, bigint, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_check(text, bigint, float8, boolean, boolean, @extschema@.rl_policy, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_value(text, bigint, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_reset(text, bigint, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_limit(text, integer, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_limit(text, smallint, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_check(text, integer, float8, boolean, boolean, @extschema@.rl_policy, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_check(text, smallint, float8, boolean, boolean, @extschema@.rl_policy, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_value(text, integer, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_value(text, smallint, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_reset(text, integer, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_reset(text, smallint, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_limit(text, uuid, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_check(text, uuid, float8, boolean, boolean, @extschema@.rl_policy, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_value(text, uuid, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_reset(text, uuid, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_token_bucket(float8, interval, float8, float8, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_fixed_window(float8, interval, float8, float8, integer, timestamptz, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_sliding_window(float8, interval, timestamptz, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_define(text, text, float8, interval, float8, float8, integer, timestamptz, text, text, boolean, interval, float8, interval, interval, integer, integer, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_undefine(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_enforce() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_limit_all(text[], text[], float8[], boolean, boolean, boolean) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION @extschema@.rl_limit(text, text, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_check(text, text, float8, boolean, boolean, @extschema@.rl_policy, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_value(text, text, @extschema@.rl_policy) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_limit(text, bigint, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_check(text, bigint, float8, boolean, boolean, @extschema@.rl_policy, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_value(text, bigint, @extschema@.rl_policy) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_limit(text, integer, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_limit(text, smallint, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_check(text, integer, float8, boolean, boolean, @extschema@.rl_policy, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_check(text, smallint, float8, boolean, boolean, @extschema@.rl_policy, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_value(text, integer, @extschema@.rl_policy) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_value(text, smallint, @extschema@.rl_policy) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_limit(text, uuid, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_check(text, uuid, float8, boolean, boolean, @extschema@.rl_policy, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_value(text, uuid, @extschema@.rl_policy) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_limit_all(text[], text[], float8[], boolean, boolean, boolean) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_enforce() TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_token_bucket(float8, interval, float8, float8, integer, text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_fixed_window(float8, interval, float8, float8, integer, timestamptz, text, text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_sliding_window(float8, interval, timestamptz, text) TO PUBLIC;

-- Definitions are configuration: pg_dump saves them with the database.
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rl_definitions', '');

-- Idle-key cleanup.  Administrative: not granted to PUBLIC.
CREATE FUNCTION @extschema@.rl_gc(max_rows integer DEFAULT 10000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'rl_gc'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_gc(integer) IS
	'delete up to max_rows state rows that have refilled to full (indistinguishable from no row), skipping locked rows, then expired leases and records of moves (rl_moves) within the same max_rows, then up to max_rows idle entries of the memory store; returns how many in all';
REVOKE ALL ON FUNCTION @extschema@.rl_gc(integer) FROM PUBLIC;

-- The memory store's cleanup, which works in a read-only transaction and
-- on a hot standby (rl_gc runs it too, with the table's).
CREATE FUNCTION @extschema@.rl_gc_memory(max_keys integer DEFAULT 10000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'rl_gc_memory'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_gc_memory(integer) IS
	'drop up to max_keys idle entries of the memory store, judging this database''s memory limits under their current definitions; works on a hot standby; returns how many';
REVOKE ALL ON FUNCTION @extschema@.rl_gc_memory(integer) FROM PUBLIC;

-- Clearing the memory store by hand (1.3).  Administrative: not granted to
-- PUBLIC.
CREATE FUNCTION @extschema@.rl_memory_forget(inline_only boolean DEFAULT true)
RETURNS bigint
AS 'MODULE_PATHNAME', 'rl_memory_forget'
LANGUAGE C VOLATILE STRICT SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_memory_forget(boolean) IS
	'drop the memory store entries of this database''s inline configs (with inline_only false: of all its memory limits) that no transaction holds, idle or not, at once (a rollback does not bring them back); returns how many';
REVOKE ALL ON FUNCTION @extschema@.rl_memory_forget(boolean) FROM PUBLIC;

-- One stored row brought forward to now; the computing half of rl_status.
CREATE FUNCTION @extschema@.rl_status_row(
	config @extschema@.rl_policy,
	name text,
	key text,
	stored_value float8,
	stored_ts timestamptz,
	stored_prev float8,
	OUT value float8,
	OUT ts timestamptz,
	OUT remaining float8,
	OUT reset_after interval,
	OUT idle boolean)
AS 'MODULE_PATHNAME', 'rl_status_row'
LANGUAGE C VOLATILE STRICT SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_status_row(@extschema@.rl_policy, text, text, float8, timestamptz, float8) IS
	'one state row (stored key, '''' for NULL; stored_prev NaN for NULL) brought forward to now under a policy; used by the view rl_status';
REVOKE ALL ON FUNCTION @extschema@.rl_status_row(@extschema@.rl_policy, text, text, float8, timestamptz, float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_status_row(@extschema@.rl_policy, text, text, float8, timestamptz, float8) TO PUBLIC;

-- The policy in the stored name of a limit used with an inline config:
-- each inline policy of a name keeps a state of its own, stored under the
-- name, U+001F and the policy.
CREATE FUNCTION @extschema@.rl_inline_policy(name text)
RETURNS @extschema@.rl_policy
AS 'MODULE_PATHNAME', 'rl_inline_policy'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.rl_inline_policy(text) IS
	'the inline policy a stored state name carries (name, U+001F, policy); NULL for the name of a defined limit; used by the view rl_status';
REVOKE ALL ON FUNCTION @extschema@.rl_inline_policy(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_inline_policy(text) TO PUBLIC;

-- Every change to rl_definitions tells each backend to drop the
-- definitions it has cached.
CREATE FUNCTION @extschema@.rl_definitions_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rl_definitions_changed'
LANGUAGE C;
COMMENT ON FUNCTION @extschema@.rl_definitions_changed() IS
	'statement and row trigger on rl_definitions: invalidates the definitions every backend has cached';
REVOKE ALL ON FUNCTION @extschema@.rl_definitions_changed() FROM PUBLIC;
CREATE TRIGGER rl_definitions_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.rl_definitions
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_definitions_changed ON @extschema@.rl_definitions IS
	'keeps the per-backend definition caches fresh';
-- ALWAYS: also for a TRUNCATE a logical-replication worker applies, and
-- under session_replication_role = replica (as pg_restore --disable-triggers).
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_changed;
-- A logical-replication apply worker fires row triggers only (TRUNCATE
-- aside), so the changes it applies need a row trigger to be seen; ALWAYS,
-- since apply workers run with session_replication_role = replica.
CREATE TRIGGER rl_definitions_row_changed
	AFTER INSERT OR UPDATE OR DELETE ON @extschema@.rl_definitions
	FOR EACH ROW EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_definitions_row_changed ON @extschema@.rl_definitions IS
	'keeps the per-backend definition caches fresh, also for changes a logical-replication worker applies';
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_row_changed;

-- Live state is data: pg_dump saves it with the definitions, so a
-- restore does not hand everyone a full bucket (or a fresh daily quota).
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rate_limits', '');

-- Refunds, penalties, blocks and HTTP fields (1.2)
--
-- rl_refund gives tokens back, rl_penalize takes them without a check,
-- rl_block refuses every call on a key for a while.  All three write the
-- key's state inside the caller's transaction, like rl_limit.  None is
-- granted to PUBLIC: a refund lets its caller take more than the limit
-- allows, and a penalty or block denies service to any key.  rl_headers
-- only computes, and is granted to PUBLIC like rl_check.
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, text, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, bigint, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key integer,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, integer, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, smallint, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, uuid, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key text DEFAULT NULL,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, text, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key bigint,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, bigint, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key integer,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, integer, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key smallint,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, smallint, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key uuid,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, uuid, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key text,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, text, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key bigint,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, bigint, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key integer,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, integer, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key smallint,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, smallint, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_block(
	name text,
	key uuid,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, uuid, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
CREATE FUNCTION @extschema@.rl_headers(
	name text,
	result @extschema@.rl_result,
	config @extschema@.rl_policy DEFAULT NULL,
	key text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'rl_headers'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_headers(text, @extschema@.rl_result, @extschema@.rl_policy, text) IS
	'the HTTP fields RateLimit-Policy, RateLimit and (when denied) Retry-After for an answer of rl_limit or rl_check on name (and key, for a key with an override), as a jsonb object';
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, text, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, bigint, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, integer, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, smallint, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, uuid, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, text, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, bigint, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, integer, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, smallint, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, uuid, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, text, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, bigint, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, integer, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, smallint, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, uuid, interval, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_headers(text, @extschema@.rl_result, @extschema@.rl_policy, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_headers(text, @extschema@.rl_result, @extschema@.rl_policy, text) TO PUBLIC;
-- Settling a cost known only after the work (1.3): a call admitted on an
-- estimate (rl_limit's count) is charged its actual cost, in the caller's
-- transaction.  Not granted to PUBLIC, as rl_refund: a return gives
-- tokens back.
CREATE FUNCTION @extschema@.rl_settle(
	name text,
	key text,
	estimated float8,
	actual float8,
	config @extschema@.rl_policy DEFAULT NULL,
	OUT value float8,
	OUT ts timestamptz,
	OUT unsettled float8)
AS 'MODULE_PATHNAME', 'rl_settle'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_settle(text, text, float8, float8, @extschema@.rl_policy) IS
	'charge a call admitted on estimated its actual cost, in one step inside the caller''s transaction: take the difference (below zero too, never past -max_debt; unsettled: what that bound left) or give it back (never above capacity, nothing while the key is blocked); an address the allow list admits is not settled; the key''s state';
CREATE FUNCTION @extschema@.rl_settle(
	name text,
	key bigint,
	estimated float8,
	actual float8,
	config @extschema@.rl_policy DEFAULT NULL,
	OUT value float8,
	OUT ts timestamptz,
	OUT unsettled float8)
AS 'MODULE_PATHNAME', 'rl_settle'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_settle(text, bigint, float8, float8, @extschema@.rl_policy) IS
	'charge a call admitted on estimated its actual cost, in one step inside the caller''s transaction: take the difference (below zero too, never past -max_debt; unsettled: what that bound left) or give it back (never above capacity, nothing while the key is blocked); an address the allow list admits is not settled; the key''s state';
CREATE FUNCTION @extschema@.rl_settle(
	name text,
	key integer,
	estimated float8,
	actual float8,
	config @extschema@.rl_policy DEFAULT NULL,
	OUT value float8,
	OUT ts timestamptz,
	OUT unsettled float8)
AS 'MODULE_PATHNAME', 'rl_settle'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_settle(text, integer, float8, float8, @extschema@.rl_policy) IS
	'charge a call admitted on estimated its actual cost, in one step inside the caller''s transaction: take the difference (below zero too, never past -max_debt; unsettled: what that bound left) or give it back (never above capacity, nothing while the key is blocked); an address the allow list admits is not settled; the key''s state';
CREATE FUNCTION @extschema@.rl_settle(
	name text,
	key smallint,
	estimated float8,
	actual float8,
	config @extschema@.rl_policy DEFAULT NULL,
	OUT value float8,
	OUT ts timestamptz,
	OUT unsettled float8)
AS 'MODULE_PATHNAME', 'rl_settle'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_settle(text, smallint, float8, float8, @extschema@.rl_policy) IS
	'charge a call admitted on estimated its actual cost, in one step inside the caller''s transaction: take the difference (below zero too, never past -max_debt; unsettled: what that bound left) or give it back (never above capacity, nothing while the key is blocked); an address the allow list admits is not settled; the key''s state';
CREATE FUNCTION @extschema@.rl_settle(
	name text,
	key uuid,
	estimated float8,
	actual float8,
	config @extschema@.rl_policy DEFAULT NULL,
	OUT value float8,
	OUT ts timestamptz,
	OUT unsettled float8)
AS 'MODULE_PATHNAME', 'rl_settle'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_settle(text, uuid, float8, float8, @extschema@.rl_policy) IS
	'charge a call admitted on estimated its actual cost, in one step inside the caller''s transaction: take the difference (below zero too, never past -max_debt; unsettled: what that bound left) or give it back (never above capacity, nothing while the key is blocked); an address the allow list admits is not settled; the key''s state';
CREATE FUNCTION @extschema@.rl_settle(
	name text,
	key inet,
	estimated float8,
	actual float8,
	config @extschema@.rl_policy DEFAULT NULL,
	OUT value float8,
	OUT ts timestamptz,
	OUT unsettled float8)
AS 'MODULE_PATHNAME', 'rl_settle'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_settle(text, inet, float8, float8, @extschema@.rl_policy) IS
	'charge a call admitted on estimated its actual cost, in one step inside the caller''s transaction: take the difference (below zero too, never past -max_debt; unsettled: what that bound left) or give it back (never above capacity, nothing while the key is blocked); an address the allow list admits is not settled; the key''s state';
REVOKE ALL ON FUNCTION @extschema@.rl_settle(text, text, float8, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_settle(text, bigint, float8, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_settle(text, integer, float8, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_settle(text, smallint, float8, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_settle(text, uuid, float8, float8, @extschema@.rl_policy) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.rl_settle(text, inet, float8, float8, @extschema@.rl_policy) FROM PUBLIC;

-- concurrency limits (1.2)

-- A concurrency limit is a definition of kind 'concurrency' (permits held
-- until the transaction ends, rl_acquire) or 'concurrency lease' (leases
-- held until released or expired, rl_lease), with its permits in capacity
-- and no rate or period.
ALTER TABLE @extschema@.rl_definitions
	ALTER COLUMN rate DROP NOT NULL,
	ALTER COLUMN period DROP NOT NULL,
	DROP CONSTRAINT rl_definitions_kind_check,
	ADD CONSTRAINT rl_definitions_kind_check CHECK (
		CASE WHEN kind OPERATOR(pg_catalog.=) ANY (ARRAY['concurrency', 'concurrency lease'])
		THEN rate IS NULL AND period IS NULL
			AND shards OPERATOR(pg_catalog.=) 1 AND start IS NULL
			AND capacity OPERATOR(pg_catalog.>=) 1
			AND capacity OPERATOR(pg_catalog.<=) 1000
			AND capacity OPERATOR(pg_catalog.=) pg_catalog.trunc(capacity)
			-- permits lowered: the highest number they had (slots in use)
			AND (max_reserved IS NULL OR (kind OPERATOR(pg_catalog.=) 'concurrency'
				AND max_reserved OPERATOR(pg_catalog.>) capacity
				AND max_reserved OPERATOR(pg_catalog.<=) 1000
				AND max_reserved OPERATOR(pg_catalog.=) pg_catalog.trunc(max_reserved)))
		ELSE kind OPERATOR(pg_catalog.=) ANY (ARRAY['token bucket', 'fixed window', 'sliding window'])
			AND rate IS NOT NULL AND period IS NOT NULL
		END);

-- Leases outlive the transaction that took them, so they are rows.  A
-- lease counts while it is neither released nor expired; rl_gc deletes it
-- once it has expired.
CREATE TABLE @extschema@.rl_leases (
	id uuid PRIMARY KEY,
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	permits integer NOT NULL CHECK (permits OPERATOR(pg_catalog.>=) 1),
	acquired timestamptz NOT NULL,
	expires timestamptz NOT NULL,
	released timestamptz
);
CREATE INDEX rl_leases_key ON @extschema@.rl_leases (name, key);
CREATE INDEX rl_leases_expires ON @extschema@.rl_leases (expires);
COMMENT ON TABLE @extschema@.rl_leases IS
	'leases of concurrency limits: permits of (name, key) held from acquired until released or expires; key '''' is the shared NULL key';
REVOKE ALL ON TABLE @extschema@.rl_leases FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rl_leases', '');

CREATE FUNCTION @extschema@.rl_define_concurrency(
	name text,
	permits integer,
	leases boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_define_concurrency'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_define_concurrency(text, integer, boolean) IS
	'create or replace a concurrency limit: at most permits holders per key, taken with rl_acquire (or with rl_lease when leases)';
REVOKE ALL ON FUNCTION @extschema@.rl_define_concurrency(text, integer, boolean) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key text DEFAULT NULL,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, text, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, text, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, text, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key bigint,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, bigint, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, bigint, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, bigint, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key integer,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, integer, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, integer, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, integer, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key smallint,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, smallint, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, smallint, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, smallint, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_acquire(
	name text,
	key uuid,
	permits integer DEFAULT 1,
	wait interval DEFAULT '0',
	throws boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_acquire'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_acquire(text, uuid, integer, interval, boolean) IS
	'take permits of a concurrency limit until the transaction (or savepoint) ends; whether granted';
REVOKE ALL ON FUNCTION @extschema@.rl_acquire(text, uuid, integer, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_acquire(text, uuid, integer, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key text,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, text, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, text, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, text, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key bigint,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, bigint, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, bigint, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, bigint, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key integer,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, integer, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, integer, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, integer, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key smallint,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, smallint, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, smallint, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, smallint, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_lease(
	name text,
	key uuid,
	permits integer,
	ttl interval)
RETURNS uuid
AS 'MODULE_PATHNAME', 'rl_lease'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_lease(text, uuid, integer, interval) IS
	'take a lease of permits of a concurrency limit for ttl; its id, or NULL when the limit is full';
REVOKE ALL ON FUNCTION @extschema@.rl_lease(text, uuid, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_lease(text, uuid, integer, interval) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_release(lease uuid)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_release'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_release(uuid) IS
	'free a lease; true when it was held, false when already released or expired';
REVOKE ALL ON FUNCTION @extschema@.rl_release(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_release(uuid) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_key_hash(key text)
RETURNS oid
AS 'MODULE_PATHNAME', 'rl_key_hash'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.rl_key_hash(text) IS
	'the hash of a name or key (NULL: the NULL key) in the lock tags of rl_acquire''s permits, as pg_locks shows them (classid, objid)';
REVOKE ALL ON FUNCTION @extschema@.rl_key_hash(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_key_hash(text) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_now()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'rl_now'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_now() IS
	'the time ratelimit computes at: ratelimit.now_override when set, else the clock';
REVOKE ALL ON FUNCTION @extschema@.rl_now() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_now() TO PUBLIC;

-- Monitoring.  Not granted to PUBLIC, as rl_status.
CREATE VIEW @extschema@.rl_permits AS
SELECT d.name,
	d.capacity::integer AS permits,
	l.objid AS key_hash,
	pg_catalog.count(*)::integer AS held,
	pg_catalog.array_agg(DISTINCT l.pid) AS pids
FROM pg_catalog.pg_locks l
JOIN @extschema@.rl_definitions d
	ON @extschema@.rl_key_hash(d.name) OPERATOR(pg_catalog.=) l.classid
WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
	AND l.granted
	AND l.objsubid OPERATOR(pg_catalog.>=) 16384
	AND l.objsubid OPERATOR(pg_catalog.<) 17384
	AND l.database OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database
		WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
	AND d.kind OPERATOR(pg_catalog.=) 'concurrency'
GROUP BY d.name, d.capacity, l.objid;
COMMENT ON VIEW @extschema@.rl_permits IS
	'permits of concurrency limits held now by transactions (rl_acquire), per name and key hash, read from pg_locks';
COMMENT ON COLUMN @extschema@.rl_permits.permits IS 'the limit: permits per key';
COMMENT ON COLUMN @extschema@.rl_permits.key_hash IS 'rl_key_hash(key) of the key (pg_locks.objid); rl_key_hash(NULL) for the NULL key';
COMMENT ON COLUMN @extschema@.rl_permits.held IS 'permits held now';
COMMENT ON COLUMN @extschema@.rl_permits.pids IS 'the backends holding them';
REVOKE ALL ON @extschema@.rl_permits FROM PUBLIC;

CREATE VIEW @extschema@.rl_lease_status AS
SELECT l.id AS lease,
	l.name,
	NULLIF(l.key, '') AS key,
	l.permits,
	l.acquired,
	l.expires,
	l.released,
	l.released IS NULL AND l.expires OPERATOR(pg_catalog.>) @extschema@.rl_now() AS held
FROM @extschema@.rl_leases l;
COMMENT ON VIEW @extschema@.rl_lease_status IS
	'every stored lease of a concurrency limit, and whether it holds its permits now';
COMMENT ON COLUMN @extschema@.rl_lease_status.key IS 'the key; NULL for the limit shared by the whole name';
COMMENT ON COLUMN @extschema@.rl_lease_status.released IS 'when rl_release freed it; NULL while not released';
COMMENT ON COLUMN @extschema@.rl_lease_status.held IS 'neither released nor expired: its permits count against the limit';
REVOKE ALL ON @extschema@.rl_lease_status FROM PUBLIC;

-- Redefinitions of concurrency limits (1.3).  A change to rl_definitions
-- that lowers, drops, renames or changes the kind of a concurrency limit
-- waits, under the name's lock, until every transaction holding its
-- permits has ended, so that the new definition never has more holders
-- than it allows; a name becomes a limit of permits only while no lease of
-- it is held.  rl_define_concurrency and rl_undefine do this themselves;
-- the trigger covers changes made by hand.
CREATE FUNCTION @extschema@.rl_definitions_guard()
RETURNS trigger
AS 'MODULE_PATHNAME', 'rl_definitions_guard'
LANGUAGE C;
COMMENT ON FUNCTION @extschema@.rl_definitions_guard() IS
	'trigger on rl_definitions: a change that lowers, drops or replaces a concurrency limit waits for the transactions holding its permits';
REVOKE ALL ON FUNCTION @extschema@.rl_definitions_guard() FROM PUBLIC;
CREATE TRIGGER rl_definitions_guard
	AFTER INSERT OR UPDATE OR DELETE ON @extschema@.rl_definitions
	FOR EACH ROW EXECUTE FUNCTION @extschema@.rl_definitions_guard();
COMMENT ON TRIGGER rl_definitions_guard ON @extschema@.rl_definitions IS
	'keeps every concurrency limit within its permits across changes to its definition';
CREATE TRIGGER rl_definitions_guard_truncate
	BEFORE TRUNCATE ON @extschema@.rl_definitions
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rl_definitions_guard();
COMMENT ON TRIGGER rl_definitions_guard_truncate ON @extschema@.rl_definitions IS
	'a TRUNCATE drops every concurrency limit: it waits as rl_undefine would for each';
-- ALWAYS, as rl_definitions_changed: a change applied by logical
-- replication waits for the subscriber's own holders.
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_guard;
ALTER TABLE @extschema@.rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_guard_truncate;
-- Plans (1.3): named classes of a defined rate limit ("free", "pro"),
-- each with the rate, period, capacity and max_reserved an override has.
-- A key is assigned to one by a row of rl_overrides that names the plan
-- instead of carrying numbers.  The same triggers as rl_definitions keep
-- every backend's cached plans fresh.
CREATE TABLE @extschema@.rl_plans (
	name text COLLATE "C" NOT NULL,
	plan text COLLATE "C" NOT NULL
		CHECK (octet_length(plan) OPERATOR(pg_catalog.>=) 1
			AND octet_length(plan) OPERATOR(pg_catalog.<=) 256),
	rate float8 NOT NULL,
	period interval,
	capacity float8 NOT NULL,
	max_reserved float8,
	time_zone text,
	PRIMARY KEY (name, plan)
);
COMMENT ON TABLE @extschema@.rl_plans IS
	'plans of named rate limits: a named policy for the keys assigned to it; write them with rl_plan() and rl_unplan(), assign keys with rl_assign() and rl_unassign()';
COMMENT ON COLUMN @extschema@.rl_plans.period IS
	'NULL: the definition''s period, whatever it becomes';
COMMENT ON COLUMN @extschema@.rl_plans.time_zone IS
	'a calendar limit: the time zone of its keys'' windows (a customer''s midnight); NULL: the definition''s';
REVOKE ALL ON TABLE @extschema@.rl_plans FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rl_plans', '');
CREATE TRIGGER rl_plans_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.rl_plans
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_plans_changed ON @extschema@.rl_plans IS
	'keeps the per-backend override caches fresh';
ALTER TABLE @extschema@.rl_plans ENABLE ALWAYS TRIGGER rl_plans_changed;
CREATE TRIGGER rl_plans_row_changed
	AFTER INSERT OR UPDATE OR DELETE ON @extschema@.rl_plans
	FOR EACH ROW EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_plans_row_changed ON @extschema@.rl_plans IS
	'keeps the per-backend override caches fresh, also for changes a logical-replication worker applies';
ALTER TABLE @extschema@.rl_plans ENABLE ALWAYS TRIGGER rl_plans_row_changed;

-- Per-key overrides (1.3): a key of a defined rate limit may carry its own
-- rate, period, capacity and max_reserved; every other column (kind,
-- shards, start, storage, shadow, block_for and its escalation) is the
-- definition's.  Its
-- state is the key's own row or memory entry, read under the definition
-- with the override in, so it is kept across changes of either.  The same
-- triggers as rl_definitions keep every backend's cached overrides fresh.
CREATE TABLE @extschema@.rl_overrides (
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL
		CHECK (octet_length(key) OPERATOR(pg_catalog.>=) 1
			AND octet_length(key) OPERATOR(pg_catalog.<=) 1024),
	rate float8,
	period interval,
	capacity float8,
	max_reserved float8,
	plan text COLLATE "C",
	time_zone text,
	PRIMARY KEY (name, key),
	-- rl_unplan refuses a plan that keys are assigned to; so does this
	FOREIGN KEY (name, plan) REFERENCES @extschema@.rl_plans (name, plan),
	-- a key has numbers of its own or a plan, not both
	CONSTRAINT rl_overrides_own_or_plan CHECK (
		(plan IS NULL AND rate IS NOT NULL AND capacity IS NOT NULL)
		OR (plan IS NOT NULL AND rate IS NULL AND period IS NULL
			AND capacity IS NULL AND max_reserved IS NULL))
);
COMMENT ON TABLE @extschema@.rl_overrides IS
	'per-key overrides of named rate limits: the policy of one key of a defined limit, its own numbers or a plan of rl_plans; write them with rl_override() and rl_unoverride(), rl_assign() and rl_unassign()';
COMMENT ON COLUMN @extschema@.rl_overrides.plan IS
	'the plan (rl_plans) whose numbers the key has; NULL for an override with numbers of its own';
COMMENT ON COLUMN @extschema@.rl_overrides.key IS
	'the key, as rl_limit takes it (text; a number as its text)';
COMMENT ON COLUMN @extschema@.rl_overrides.period IS
	'NULL: the definition''s period, whatever it becomes';
COMMENT ON COLUMN @extschema@.rl_overrides.time_zone IS
	'a calendar limit: the time zone of the key''s windows; NULL: its plan''s, else the definition''s';
REVOKE ALL ON TABLE @extschema@.rl_overrides FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rl_overrides', '');
CREATE TRIGGER rl_overrides_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.rl_overrides
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_overrides_changed ON @extschema@.rl_overrides IS
	'keeps the per-backend override caches fresh';
ALTER TABLE @extschema@.rl_overrides ENABLE ALWAYS TRIGGER rl_overrides_changed;
CREATE TRIGGER rl_overrides_row_changed
	AFTER INSERT OR UPDATE OR DELETE ON @extschema@.rl_overrides
	FOR EACH ROW EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_overrides_row_changed ON @extschema@.rl_overrides IS
	'keeps the per-backend override caches fresh, also for changes a logical-replication worker applies';
ALTER TABLE @extschema@.rl_overrides ENABLE ALWAYS TRIGGER rl_overrides_row_changed;

-- What a key's last move to another policy (an override, a plan, a time
-- zone) left to remember, until covered_until: how far the refills it
-- had were paid for, at what rate, and what the move charged for a
-- refill it brought forward.  Read and written only by the moves
-- (rl_override, rl_assign and their inverses), which the definition's row
-- lock serializes; rl_gc deletes a row once covered_until has passed.
CREATE TABLE @extschema@.rl_moves (
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	moved_at timestamptz NOT NULL,
	moved_xact xid8,
	refill_at timestamptz,
	covered_until timestamptz NOT NULL,
	covered_per_us float8 NOT NULL CHECK (covered_per_us OPERATOR(pg_catalog.>=) 0),
	near_until timestamptz,
	near_per_us float8 CHECK (near_per_us OPERATOR(pg_catalog.>=) 0),
	debt float8 NOT NULL CHECK (debt OPERATOR(pg_catalog.>=) 0),
	PRIMARY KEY (name, key)
);
COMMENT ON TABLE @extschema@.rl_moves IS
	'the last move of a key to another policy (rl_override, rl_assign and their inverses), kept until covered_until so that a later move pays for the refill it brings forward; rl_gc deletes rows past covered_until';
COMMENT ON COLUMN @extschema@.rl_moves.moved_at IS
	'when the key moved';
COMMENT ON COLUMN @extschema@.rl_moves.moved_xact IS
	'the transaction that moved the key: a later move in the same transaction gives no payment back';
COMMENT ON COLUMN @extschema@.rl_moves.refill_at IS
	'the end of the fixed window the key moved into, as it was then; NULL for a token bucket or sliding window';
COMMENT ON COLUMN @extschema@.rl_moves.covered_until IS
	'the end of the latest fixed window whose refill the key had when it moved';
COMMENT ON COLUMN @extschema@.rl_moves.covered_per_us IS
	'the highest rate, in tokens per microsecond, of the windows that refilled the key, from near_until (if any) up to covered_until';
COMMENT ON COLUMN @extschema@.rl_moves.near_until IS
	'where the refills were paid for at a higher rate first: up to near_until at near_per_us, then up to covered_until at covered_per_us; NULL for one rate throughout';
COMMENT ON COLUMN @extschema@.rl_moves.near_per_us IS
	'the rate, in tokens per microsecond, up to near_until';
COMMENT ON COLUMN @extschema@.rl_moves.debt IS
	'tokens the move charged for a refill it brought forward, still owed while the key''s window at moved_at lasts';
REVOKE ALL ON TABLE @extschema@.rl_moves FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rl_moves', '');

-- Monitoring.  Reads without locking; not granted to PUBLIC, since it
-- lists every key (user ids, addresses) the limiter has seen.
CREATE VIEW @extschema@.rl_status AS
SELECT pg_catalog.split_part(s.name, E'\x1f', 1) AS name,
	NULLIF(s.key, '') AS key,
	s.shard,
	(p.p).kind,
	(p.p).rate,
	(p.p).period,
	(p.p).capacity,
	(p.p).shards,
	n.value,
	n.ts,
	n.remaining,
	n.reset_after,
	n.idle,
	s.value AS stored_value,
	s.ts AS stored_ts,
	(p.p).max_reserved,
	(p.p).start,
	(p.p).time_zone,
	s.prev AS stored_prev,
	o.plan
FROM @extschema@.rate_limits s
LEFT JOIN @extschema@.rl_definitions d ON d.name OPERATOR(pg_catalog.=) s.name
LEFT JOIN @extschema@.rl_overrides o ON o.name OPERATOR(pg_catalog.=) d.name
	AND o.key OPERATOR(pg_catalog.=) s.key
LEFT JOIN @extschema@.rl_plans pl ON pl.name OPERATOR(pg_catalog.=) o.name
	AND pl.plan OPERATOR(pg_catalog.=) o.plan
CROSS JOIN LATERAL (SELECT CASE WHEN o.name IS NOT NULL THEN
		ROW(d.kind, COALESCE(o.rate, pl.rate),
			COALESCE(o.period, pl.period, d.period),
			COALESCE(o.capacity, pl.capacity),
			COALESCE(o.max_reserved, pl.max_reserved), d.shards, d.start,
			d.storage, COALESCE(o.time_zone, pl.time_zone, d.time_zone))::@extschema@.rl_policy
	WHEN d.name IS NOT NULL THEN
		ROW(d.kind, d.rate, d.period, d.capacity, d.max_reserved, d.shards,
			d.start, d.storage, d.time_zone)::@extschema@.rl_policy
	ELSE @extschema@.rl_inline_policy(s.name)
	END AS p) p
LEFT JOIN LATERAL @extschema@.rl_status_row(p.p, s.name, s.key, s.value, s.ts,
	COALESCE(s.prev, 'NaN'::pg_catalog.float8)) n ON true;
COMMENT ON VIEW @extschema@.rl_status IS
	'every stored (name, key, shard) with its definition and its state brought forward to now; locks nothing';
COMMENT ON COLUMN @extschema@.rl_status.key IS 'the key; NULL for the limit shared by the whole name';
COMMENT ON COLUMN @extschema@.rl_status.shard IS 'the shard, 0 for an unsharded limit';
COMMENT ON COLUMN @extschema@.rl_status.capacity IS 'the whole limit''s capacity (a shard holds capacity / shards)';
COMMENT ON COLUMN @extschema@.rl_status.value IS 'tokens now (negative while a reservation is outstanding; a sliding window: what a call could take now); NULL for a row with no known policy (a name used with an inline config before 1.3)';
COMMENT ON COLUMN @extschema@.rl_status.name IS 'the limit''s name; the rows of each inline policy used with it are told apart by the policy columns';
COMMENT ON COLUMN @extschema@.rl_status.max_reserved IS 'how far below zero reservations may go; NULL for no bound of its own';
COMMENT ON COLUMN @extschema@.rl_status.start IS 'fixed and sliding window: a window start given with the policy; NULL for a phase derived from the name and key';
COMMENT ON COLUMN @extschema@.rl_status.time_zone IS 'fixed window: the time zone of its calendar windows; NULL for windows of a period';
COMMENT ON COLUMN @extschema@.rl_status.ts IS 'the time value is counted at';
COMMENT ON COLUMN @extschema@.rl_status.remaining IS 'tokens a call could take now without reserving';
COMMENT ON COLUMN @extschema@.rl_status.reset_after IS 'token bucket and sliding window: until full again; fixed window: until the next window';
COMMENT ON COLUMN @extschema@.rl_status.idle IS 'full, so rl_gc would delete the row without changing any answer';
COMMENT ON COLUMN @extschema@.rl_status.stored_value IS 'value as stored in rate_limits';
COMMENT ON COLUMN @extschema@.rl_status.stored_ts IS 'ts as stored in rate_limits';
COMMENT ON COLUMN @extschema@.rl_status.stored_prev IS 'sliding window: prev as stored in rate_limits, the count of the window before ts''s; NULL for the other kinds';
COMMENT ON COLUMN @extschema@.rl_status.plan IS 'the plan the key is assigned to (rl_assign); NULL for none';
REVOKE ALL ON @extschema@.rl_status FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_override(
	name text,
	key text,
	rate float8,
	period interval DEFAULT NULL,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL,
	time_zone text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_override'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_override(text, text, float8, interval, float8, float8, text) IS
	'create or replace the override of one key of a named rate limit: its rate per period (default: the definition''s period), capacity (default: the rate), max_reserved and, for a calendar limit, time zone';
REVOKE ALL ON FUNCTION @extschema@.rl_override(text, text, float8, interval, float8, float8, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_unoverride(name text, key text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_unoverride'
LANGUAGE C VOLATILE STRICT SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_unoverride(text, text) IS
	'drop the override of one key: it follows the definition again; false when it had none';
REVOKE ALL ON FUNCTION @extschema@.rl_unoverride(text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_plan(
	name text,
	plan text,
	rate float8,
	period interval DEFAULT NULL,
	capacity float8 DEFAULT NULL,
	max_reserved float8 DEFAULT NULL,
	time_zone text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_plan'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_plan(text, text, float8, interval, float8, float8, text) IS
	'create or replace a plan of a named rate limit: its rate per period (default: the definition''s period), capacity (default: the rate), max_reserved and, for a calendar limit, time zone, for every key assigned to it';
REVOKE ALL ON FUNCTION @extschema@.rl_plan(text, text, float8, interval, float8, float8, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_unplan(name text, plan text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_unplan'
LANGUAGE C VOLATILE STRICT SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_unplan(text, text) IS
	'drop a plan that no key is assigned to; false when there was none';
REVOKE ALL ON FUNCTION @extschema@.rl_unplan(text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_assign(name text, key text, plan text,
	time_zone text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_assign'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_assign(text, text, text, text) IS
	'assign one key of a named rate limit to a plan (and, for a calendar limit, a time zone of its own), replacing its plan or override; the key keeps what it has left, at most the plan''s capacity';
REVOKE ALL ON FUNCTION @extschema@.rl_assign(text, text, text, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_unassign(name text, key text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_unassign'
LANGUAGE C VOLATILE STRICT SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_unassign(text, text) IS
	'take one key off its plan: it follows the definition again and keeps what it has left, at most its capacity; false when it had no plan';
REVOKE ALL ON FUNCTION @extschema@.rl_unassign(text, text) FROM PUBLIC;

-- per-limit statistics (1.2)
-- Cumulative counters per (database, limit name), kept in shared memory by
-- the library (src/stats.c): statistics, not transactional state.
CREATE FUNCTION @extschema@.rl_stats_rows(
	OUT dbid oid,
	OUT name text,
	OUT calls bigint,
	OUT granted bigint,
	OUT refused bigint,
	OUT errors bigint,
	OUT tokens float8,
	OUT reservations bigint,
	OUT deepest_reservation float8,
	OUT lock_waits bigint,
	OUT lock_wait_time float8,
	OUT both_shards_busy bigint,
	OUT last_refusal timestamptz,
	OUT stats_reset timestamptz,
	OUT shadow_refused bigint,
	OUT blocks bigint,
	OUT check_refused bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rl_stats_rows'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_stats_rows() IS
	'the counters behind the view rl_stats, one row per (database, limit name) tracked';
REVOKE ALL ON FUNCTION @extschema@.rl_stats_rows() FROM PUBLIC;

-- Not granted to PUBLIC: it lists every limit name of every database.
CREATE VIEW @extschema@.rl_stats AS
SELECT s.dbid,
	d.datname,
	s.name,
	s.calls,
	s.granted,
	s.refused,
	s.errors,
	s.tokens,
	s.reservations,
	s.deepest_reservation,
	s.lock_waits,
	s.lock_wait_time,
	s.both_shards_busy,
	s.shadow_refused,
	s.blocks,
	s.check_refused,
	s.last_refusal,
	s.stats_reset
FROM @extschema@.rl_stats_rows() s
LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) s.dbid;
COMMENT ON VIEW @extschema@.rl_stats IS
	'per limit name and database: what consuming calls (rl_limit, rl_limit_all, rl_enforce) did since stats_reset; cumulative, not transactional';
COMMENT ON COLUMN @extschema@.rl_stats.dbid IS 'the database the calls ran in';
COMMENT ON COLUMN @extschema@.rl_stats.datname IS 'its name';
COMMENT ON COLUMN @extschema@.rl_stats.name IS 'the limit name';
COMMENT ON COLUMN @extschema@.rl_stats.calls IS 'consuming calls counted: granted + refused + errors';
COMMENT ON COLUMN @extschema@.rl_stats.granted IS 'calls granted (in a refused rl_limit_all, a limit that would have granted)';
COMMENT ON COLUMN @extschema@.rl_stats.refused IS 'calls refused, returned as ok = false or raised as RL001';
COMMENT ON COLUMN @extschema@.rl_stats.errors IS 'calls that raised another error once their limit was known: an impossible count, a lock or statement timeout, a serialization failure, a cancel';
COMMENT ON COLUMN @extschema@.rl_stats.tokens IS 'tokens granted calls took, reservations included';
COMMENT ON COLUMN @extschema@.rl_stats.reservations IS 'granted calls that reserved: took the value below zero, and were told when to run';
COMMENT ON COLUMN @extschema@.rl_stats.deepest_reservation IS 'the most tokens below zero a granted reservation left (0 if none)';
COMMENT ON COLUMN @extschema@.rl_stats.lock_waits IS 'times a call found its row locked by another transaction and waited';
COMMENT ON COLUMN @extschema@.rl_stats.lock_wait_time IS 'milliseconds spent in those waits, timed-out waits included';
COMMENT ON COLUMN @extschema@.rl_stats.both_shards_busy IS 'times a sharded call found both shards it picked locked, and so waited for one';
COMMENT ON COLUMN @extschema@.rl_stats.shadow_refused IS 'calls a limit in shadow mode granted though it would have refused them (counted as granted, taking nothing)';
COMMENT ON COLUMN @extschema@.rl_stats.blocks IS 'refused calls that blocked their key (block_for), rl_check''s included';
COMMENT ON COLUMN @extschema@.rl_stats.check_refused IS 'rl_check calls the limit refused (not counted in calls or refused)';
COMMENT ON COLUMN @extschema@.rl_stats.last_refusal IS 'the time of the latest refusal (the limiter''s clock); NULL if none';
COMMENT ON COLUMN @extschema@.rl_stats.stats_reset IS 'since when this row counts: its first call, or rl_stats_reset(name)';
REVOKE ALL ON @extschema@.rl_stats FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_stats_info_row(
	OUT storage text,
	OUT max_names integer,
	OUT names integer,
	OUT untracked_calls bigint,
	OUT stats_reset timestamptz,
	OUT memory_storage text,
	OUT memory_max_keys bigint,
	OUT memory_keys bigint,
	OUT memory_full_errors bigint,
	OUT memory_empty_since timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'rl_stats_info'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_stats_info_row() IS
	'the row of the view rl_stats_info';
REVOKE ALL ON FUNCTION @extschema@.rl_stats_info_row() FROM PUBLIC;

CREATE VIEW @extschema@.rl_stats_info AS
SELECT storage, max_names, names, untracked_calls, stats_reset,
	memory_storage, memory_max_keys, memory_keys, memory_full_errors,
	memory_empty_since
FROM @extschema@.rl_stats_info_row();
COMMENT ON VIEW @extschema@.rl_stats_info IS
	'where rl_stats is kept, how many names it tracks out of how many it may, and the calls it could not track; where the memory store is kept, and how full';
COMMENT ON COLUMN @extschema@.rl_stats_info.storage IS '''shared memory'' (preloaded), ''dsm registry'' (PostgreSQL 17+, not preloaded) or ''unavailable'' (15 and 16, not preloaded)';
COMMENT ON COLUMN @extschema@.rl_stats_info.max_names IS 'the most (database, name) rows rl_stats holds: ratelimit.stats_max_names when the table was created';
COMMENT ON COLUMN @extschema@.rl_stats_info.names IS 'rows rl_stats holds now';
COMMENT ON COLUMN @extschema@.rl_stats_info.untracked_calls IS 'calls on names that found rl_stats full, counted nowhere else';
COMMENT ON COLUMN @extschema@.rl_stats_info.stats_reset IS 'when the table was last emptied by rl_stats_reset(), or created';
COMMENT ON COLUMN @extschema@.rl_stats_info.memory_storage IS 'where the memory store lives: ''shared memory'' (preloaded), ''dsm registry'' (PostgreSQL 17+, not preloaded) or ''unavailable'' (15 and 16, not preloaded)';
COMMENT ON COLUMN @extschema@.rl_stats_info.memory_max_keys IS 'the most keys the memory store holds: ratelimit.memory_max_keys when it was created';
COMMENT ON COLUMN @extschema@.rl_stats_info.memory_keys IS 'keys the memory store holds now, idle ones not yet dropped included';
COMMENT ON COLUMN @extschema@.rl_stats_info.memory_full_errors IS 'calls on a new key refused with 53400 because the memory store was full of keys that could not be dropped';
COMMENT ON COLUMN @extschema@.rl_stats_info.memory_empty_since IS 'after a crash with ratelimit.memory_after_crash = empty: the restart, from which every key with no entry refills; NULL otherwise';
REVOKE ALL ON @extschema@.rl_stats_info FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_stats_reset(name text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_stats_reset'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_stats_reset(text) IS
	'zero the statistics of one limit name in this database, its rl_refused rows included; with NULL, forget every row of rl_stats and rl_refused (every database)';
REVOKE ALL ON FUNCTION @extschema@.rl_stats_reset(text) FROM PUBLIC;

-- who is refused (1.3)
-- Per limit name, the keys refused and blocked most over the last two
-- windows of ratelimit.refused_window, kept in shared memory by the
-- library (src/refused.c) for every database, each database reading its
-- own: statistics, not transactional state.
CREATE FUNCTION @extschema@.rl_refused_rows(
	OUT dbid oid,
	OUT name text,
	OUT key text,
	OUT refusals bigint,
	OUT blocks bigint,
	OUT error bigint,
	OUT since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'rl_refused_rows'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.rl_refused_rows() IS
	'the rows behind the view rl_refused: per limit name of the current database, the ratelimit.refused_top_k keys with the most refusals and blocks';
REVOKE ALL ON FUNCTION @extschema@.rl_refused_rows() FROM PUBLIC;

-- Not granted to PUBLIC: it lists the keys (addresses, user ids) refused.
CREATE VIEW @extschema@.rl_refused AS
SELECT r.dbid,
	d.datname,
	r.name,
	r.key,
	r.refusals,
	r.blocks,
	r.error,
	r.since
FROM @extschema@.rl_refused_rows() r
LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) r.dbid
ORDER BY r.dbid, r.name,
	r.refusals OPERATOR(pg_catalog.+) r.blocks OPERATOR(pg_catalog.+) r.error DESC,
	r.key;
COMMENT ON VIEW @extschema@.rl_refused IS
	'per limit name of the current database: the keys refused and blocked most in the current and the previous window of ratelimit.refused_window (at most ratelimit.refused_top_k per name); not transactional';
COMMENT ON COLUMN @extschema@.rl_refused.dbid IS 'the database the calls ran in: the current one';
COMMENT ON COLUMN @extschema@.rl_refused.datname IS 'its name';
COMMENT ON COLUMN @extschema@.rl_refused.name IS 'the limit name';
COMMENT ON COLUMN @extschema@.rl_refused.key IS 'the key (its first 128 bytes); NULL for the NULL key';
COMMENT ON COLUMN @extschema@.rl_refused.refusals IS 'refused calls of the key counted since since: consuming calls and rl_check calls';
COMMENT ON COLUMN @extschema@.rl_refused.blocks IS 'blocks of the key that started (block_for) counted since since';
COMMENT ON COLUMN @extschema@.rl_refused.error IS 'at most this many refusals and blocks of the key went uncounted, before it was counted; 0: refusals and blocks are exact';
COMMENT ON COLUMN @extschema@.rl_refused.since IS 'when the key was first counted in the two windows (the limiter''s clock)';
REVOKE ALL ON @extschema@.rl_refused FROM PUBLIC;

-- Roles for the application and for migrations.  rl_grant_sets is the one
-- list of what each set grants: 'app' (what an application calls),
-- 'admin' (what a migration or an operator calls) and 'none' (neither:
-- trigger functions, the tables, and these functions themselves).  Each
-- function is named once, and its grant covers every overload.
-- sql/privileges.sql fails if a member of the extension is missing here.
CREATE VIEW @extschema@.rl_grant_sets (grant_set, object, privilege) AS
VALUES
	-- consume, check and read limits (also granted to PUBLIC)
	('app', 'rl_limit', 'EXECUTE'),
	('app', 'rl_check', 'EXECUTE'),
	('app', 'rl_value', 'EXECUTE'),
	('app', 'rl_limit_all', 'EXECUTE'),
	('app', 'rl_headers', 'EXECUTE'),
	('app', 'rl_enforce', 'EXECUTE'),
	('app', 'rl_token_bucket', 'EXECUTE'),
	('app', 'rl_fixed_window', 'EXECUTE'),
	('app', 'rl_sliding_window', 'EXECUTE'),
	('app', 'rl_acquire', 'EXECUTE'),
	('app', 'rl_lease', 'EXECUTE'),
	('app', 'rl_release', 'EXECUTE'),
	('app', 'rl_key_hash', 'EXECUTE'),
	('app', 'rl_now', 'EXECUTE'),
	-- act on any key by any amount (not granted to PUBLIC)
	('app', 'rl_refund', 'EXECUTE'),
	('app', 'rl_settle', 'EXECUTE'),
	('app', 'rl_penalize', 'EXECUTE'),
	('app', 'rl_block', 'EXECUTE'),
	('app', 'rl_reset', 'EXECUTE'),
	-- move a key between the plans an operator made (a customer upgrades)
	('app', 'rl_assign', 'EXECUTE'),
	('app', 'rl_unassign', 'EXECUTE'),
	-- define and drop limits, overrides, plans and lists, clean up, read every key
	('admin', 'rl_define', 'EXECUTE'),
	('admin', 'rl_define_concurrency', 'EXECUTE'),
	('admin', 'rl_undefine', 'EXECUTE'),
	('admin', 'rl_override', 'EXECUTE'),
	('admin', 'rl_unoverride', 'EXECUTE'),
	('admin', 'rl_plan', 'EXECUTE'),
	('admin', 'rl_unplan', 'EXECUTE'),
	('admin', 'rl_allow', 'EXECUTE'),
	('admin', 'rl_deny', 'EXECUTE'),
	('admin', 'rl_unlist', 'EXECUTE'),
	('admin', 'rl_gc', 'EXECUTE'),
	('admin', 'rl_gc_memory', 'EXECUTE'),
	('admin', 'rl_memory_forget', 'EXECUTE'),
	('admin', 'rl_stats_reset', 'EXECUTE'),
	('admin', 'rl_status', 'SELECT'),
	('admin', 'rl_status_row', 'EXECUTE'),
	('admin', 'rl_inline_policy', 'EXECUTE'),
	('admin', 'rl_stats', 'SELECT'),
	('admin', 'rl_stats_rows', 'EXECUTE'),
	('admin', 'rl_stats_info', 'SELECT'),
	('admin', 'rl_stats_info_row', 'EXECUTE'),
	('admin', 'rl_refused', 'SELECT'),
	('admin', 'rl_refused_rows', 'EXECUTE'),
	('admin', 'rl_permits', 'SELECT'),
	('admin', 'rl_lease_status', 'SELECT'),
	('admin', 'rl_grant_sets', 'SELECT'),
	-- the triggers of rl_definitions, rl_overrides and rl_plans call these
	('none', 'rl_definitions_changed', NULL),
	('none', 'rl_definitions_guard', NULL),
	-- written only through the functions above
	('none', 'rate_limits', NULL),
	('none', 'rl_definitions', NULL),
	('none', 'rl_overrides', NULL),
	('none', 'rl_moves', NULL),
	('none', 'rl_plans', NULL),
	('none', 'rl_access', NULL),
	('none', 'rl_leases', NULL),
	-- granting them would let a role grant
	('none', 'rl_grant_set', NULL),
	('none', 'rl_grant_app', NULL),
	('none', 'rl_grant_admin', NULL),
	('none', 'rl_revoke_app', NULL),
	('none', 'rl_revoke_admin', NULL);
COMMENT ON VIEW @extschema@.rl_grant_sets IS
	'what rl_grant_app (''app'') and rl_grant_admin (''admin'') grant, one row per function (every overload) or view; ''none'': the owner''s alone';
REVOKE ALL ON @extschema@.rl_grant_sets FROM PUBLIC;

-- Grant or revoke one set of rl_grant_sets.  Invoker's rights: the GRANTs
-- are the caller's own, so only the extension's owner (or a superuser)
-- gets past the check.  Members are found through pg_depend by name, so a
-- renamed schema changes nothing.
CREATE FUNCTION @extschema@.rl_grant_set(grant_set text, grantee regrole, revoke boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext pg_catalog.pg_extension;
	list pg_catalog.regclass;
	target record;
BEGIN
	IF grantee IS NULL OR grantee::pg_catalog.oid OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN
		RAISE EXCEPTION 'role must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	SELECT * INTO STRICT ext FROM pg_catalog.pg_extension e
	WHERE e.extname OPERATOR(pg_catalog.=) 'ratelimit';
	IF NOT pg_catalog.pg_has_role(ext.extowner, 'USAGE') THEN
		RAISE EXCEPTION 'permission denied to % the % set of ratelimit',
			CASE WHEN revoke THEN 'revoke' ELSE 'grant' END, grant_set
			USING ERRCODE = 'insufficient_privilege',
				DETAIL = pg_catalog.format('Only the owner of the extension (%s) or a superuser may.',
					ext.extowner::pg_catalog.regrole);
	END IF;
	IF NOT revoke AND NOT pg_catalog.has_schema_privilege(grantee, ext.extnamespace, 'USAGE') THEN
		EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %I TO %s',
			(SELECT n.nspname FROM pg_catalog.pg_namespace n
			 WHERE n.oid OPERATOR(pg_catalog.=) ext.extnamespace), grantee);
	END IF;
	SELECT c.oid INTO STRICT list
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_depend d
		ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
		AND d.objid OPERATOR(pg_catalog.=) c.oid
	WHERE d.refobjid OPERATOR(pg_catalog.=) ext.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
		AND c.relname OPERATOR(pg_catalog.=) 'rl_grant_sets';
	FOR target IN EXECUTE pg_catalog.format($q$
		SELECT s.privilege, 'FUNCTION' AS kind, p.oid::pg_catalog.regprocedure::pg_catalog.text AS object
		FROM %1$s s, pg_catalog.pg_proc p, pg_catalog.pg_depend d
		WHERE s.grant_set OPERATOR(pg_catalog.=) $1
			AND p.proname OPERATOR(pg_catalog.=) s.object
			AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
			AND d.objid OPERATOR(pg_catalog.=) p.oid
			AND d.refobjid OPERATOR(pg_catalog.=) $2 AND d.deptype OPERATOR(pg_catalog.=) 'e'
		UNION ALL
		SELECT s.privilege, 'TABLE', c.oid::pg_catalog.regclass::pg_catalog.text
		FROM %1$s s, pg_catalog.pg_class c, pg_catalog.pg_depend d
		WHERE s.grant_set OPERATOR(pg_catalog.=) $1
			AND c.relname OPERATOR(pg_catalog.=) s.object
			AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
			AND d.objid OPERATOR(pg_catalog.=) c.oid
			AND d.refobjid OPERATOR(pg_catalog.=) $2 AND d.deptype OPERATOR(pg_catalog.=) 'e'
		ORDER BY 2, 3$q$, list) USING grant_set, ext.oid
	LOOP
		EXECUTE pg_catalog.format('%s %s ON %s %s %s %s',
			CASE WHEN revoke THEN 'REVOKE' ELSE 'GRANT' END,
			target.privilege, target.kind, target.object,
			CASE WHEN revoke THEN 'FROM' ELSE 'TO' END, grantee);
	END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.rl_grant_set(text, regrole, boolean) IS
	'grant (revoke false) or revoke one set of rl_grant_sets to or from a role; used by rl_grant_app, rl_grant_admin, rl_revoke_app and rl_revoke_admin';
REVOKE ALL ON FUNCTION @extschema@.rl_grant_set(text, regrole, boolean) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_grant_app(role regrole)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
	SELECT @extschema@.rl_grant_set('app', role, false);
END;
COMMENT ON FUNCTION @extschema@.rl_grant_app(regrole) IS
	'grant a role what an application calls: rl_limit, rl_check, rl_value, rl_limit_all, rl_headers, rl_refund, rl_settle, rl_penalize, rl_block, rl_reset, rl_assign, rl_unassign, concurrency permits and leases (every overload; rl_grant_sets lists them); the extension''s owner or a superuser only';
REVOKE ALL ON FUNCTION @extschema@.rl_grant_app(regrole) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_grant_admin(role regrole)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
	SELECT @extschema@.rl_grant_set('admin', role, false);
END;
COMMENT ON FUNCTION @extschema@.rl_grant_admin(regrole) IS
	'grant a role what a migration or an operator calls: rl_define, rl_define_concurrency, rl_undefine, rl_override, rl_unoverride, rl_plan, rl_unplan, rl_allow, rl_deny, rl_unlist, rl_gc, rl_stats_reset and the views rl_status, rl_stats, rl_refused (rl_grant_sets lists them); the extension''s owner or a superuser only';
REVOKE ALL ON FUNCTION @extschema@.rl_grant_admin(regrole) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_revoke_app(role regrole)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
	SELECT @extschema@.rl_grant_set('app', role, true);
END;
COMMENT ON FUNCTION @extschema@.rl_revoke_app(regrole) IS
	'revoke from a role what rl_grant_app granted it (PUBLIC''s grants stay); the extension''s owner or a superuser only';
REVOKE ALL ON FUNCTION @extschema@.rl_revoke_app(regrole) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_revoke_admin(role regrole)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
	SELECT @extschema@.rl_grant_set('admin', role, true);
END;
COMMENT ON FUNCTION @extschema@.rl_revoke_admin(regrole) IS
	'revoke from a role what rl_grant_admin granted it; the extension''s owner or a superuser only';
REVOKE ALL ON FUNCTION @extschema@.rl_revoke_admin(regrole) FROM PUBLIC;

-- inet keys and allow and deny lists (1.3).  An inet key is stored as its
-- host address in PostgreSQL's form ('10.1.2.3', '2001:db8::1'), the same
-- key as that text; with ipv4_prefix or ipv6_prefix in its definition, as
-- its network ('10.1.2.0/24').  An inet with a netmask is refused.
CREATE FUNCTION @extschema@.rl_limit(
	name text,
	key inet,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false,
	wait interval DEFAULT NULL,
	partial boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_limit'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_limit(text, inet, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) IS
	'consume count tokens inside the caller''s transaction; a rollback returns them; wait: sleep until granted when retry_after is at most wait; partial: take what the key holds when less than count (granted says how much); a denied address is refused at once, an allowed one granted without consuming';
REVOKE ALL ON FUNCTION @extschema@.rl_limit(text, inet, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_limit(text, inet, float8, boolean, boolean, @extschema@.rl_policy, boolean, interval, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_check(
	name text,
	key inet,
	count float8 DEFAULT 1,
	reserve boolean DEFAULT false,
	throws boolean DEFAULT false,
	config @extschema@.rl_policy DEFAULT NULL,
	jitter boolean DEFAULT false)
RETURNS @extschema@.rl_result
AS 'MODULE_PATHNAME', 'rl_check'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_check(text, inet, float8, boolean, boolean, @extschema@.rl_policy, boolean) IS
	'what rl_limit would answer, without consuming, writing or locking; a denied address is refused at once, an allowed one granted without consuming';
REVOKE ALL ON FUNCTION @extschema@.rl_check(text, inet, float8, boolean, boolean, @extschema@.rl_policy, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_check(text, inet, float8, boolean, boolean, @extschema@.rl_policy, boolean) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_value(
	name text,
	key inet,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_value'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_value(text, inet, @extschema@.rl_policy) IS
	'the tokens a limit holds now, without writing or locking';
REVOKE ALL ON FUNCTION @extschema@.rl_value(text, inet, @extschema@.rl_policy) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.rl_value(text, inet, @extschema@.rl_policy) TO PUBLIC;

CREATE FUNCTION @extschema@.rl_reset(
	name text,
	key inet,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_reset'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_reset(text, inet, @extschema@.rl_policy) IS
	'forget the state of one key (every shard): it starts again from a full bucket; config: the key''s state under that inline policy, as rl_limit with it uses';
REVOKE ALL ON FUNCTION @extschema@.rl_reset(text, inet, @extschema@.rl_policy) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_refund(
	name text,
	key inet,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_refund'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_refund(text, inet, float8, @extschema@.rl_policy) IS
	'give count tokens back to a key, never above capacity; inside the callers transaction';
REVOKE ALL ON FUNCTION @extschema@.rl_refund(text, inet, float8, @extschema@.rl_policy) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_penalize(
	name text,
	key inet,
	count float8 DEFAULT 1,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_penalize'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_penalize(text, inet, float8, @extschema@.rl_policy) IS
	'take count tokens from a key without a check; the value may go below zero (full again within 1000 years)';
REVOKE ALL ON FUNCTION @extschema@.rl_penalize(text, inet, float8, @extschema@.rl_policy) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_block(
	name text,
	key inet,
	duration interval,
	config @extschema@.rl_policy DEFAULT NULL)
RETURNS @extschema@.rl_state
AS 'MODULE_PATHNAME', 'rl_block'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_block(text, inet, interval, @extschema@.rl_policy) IS
	'refuse every call on a key for duration (token bucket: empty at now + duration; fixed window: until the first window start at or after it); rl_reset lifts it';
REVOKE ALL ON FUNCTION @extschema@.rl_block(text, inet, interval, @extschema@.rl_policy) FROM PUBLIC;

-- Allow and deny lists: per defined rate limit, networks (a host is a
-- /32 or /128) whose addresses are granted without consuming ('allow') or
-- refused at once ('deny'), until expires_at (NULL: for ever).  Checked
-- for a key that is an address, before its state: the most specific
-- network that holds the address wins, and deny over allow at the same
-- one.  Cached per backend like definitions, by the same triggers.
CREATE TABLE @extschema@.rl_access (
	name text COLLATE "C" NOT NULL,
	net cidr NOT NULL,
	action text NOT NULL
		CHECK (action OPERATOR(pg_catalog.=) ANY (ARRAY['allow', 'deny'])),
	expires_at timestamptz,
	note text,
	PRIMARY KEY (name, net, action)
);
CREATE INDEX rl_access_net ON @extschema@.rl_access USING gist (net inet_ops);
COMMENT ON TABLE @extschema@.rl_access IS
	'allow and deny lists of named rate limits: networks whose addresses are granted without consuming or refused at once; write them with rl_allow(), rl_deny() and rl_unlist()';
COMMENT ON COLUMN @extschema@.rl_access.net IS
	'the network; the most specific one holding a key''s address decides, deny before allow at the same one';
COMMENT ON COLUMN @extschema@.rl_access.expires_at IS
	'from then on the entry is ignored; NULL: never';
REVOKE ALL ON TABLE @extschema@.rl_access FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.rl_access', '');
CREATE TRIGGER rl_access_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON @extschema@.rl_access
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_access_changed ON @extschema@.rl_access IS
	'keeps the per-backend allow and deny list caches fresh';
ALTER TABLE @extschema@.rl_access ENABLE ALWAYS TRIGGER rl_access_changed;
CREATE TRIGGER rl_access_row_changed
	AFTER INSERT OR UPDATE OR DELETE ON @extschema@.rl_access
	FOR EACH ROW EXECUTE FUNCTION @extschema@.rl_definitions_changed();
COMMENT ON TRIGGER rl_access_row_changed ON @extschema@.rl_access IS
	'keeps the per-backend allow and deny list caches fresh, also for changes a logical-replication worker applies';
ALTER TABLE @extschema@.rl_access ENABLE ALWAYS TRIGGER rl_access_row_changed;

CREATE FUNCTION @extschema@.rl_allow(
	name text,
	net cidr,
	expires timestamptz DEFAULT NULL,
	note text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_allow'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_allow(text, cidr, timestamptz, text) IS
	'allow a network (or one address) of a named rate limit until expires (NULL: for ever): its addresses are granted without consuming; replaces an allow of the same network';
REVOKE ALL ON FUNCTION @extschema@.rl_allow(text, cidr, timestamptz, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_deny(
	name text,
	net cidr,
	expires timestamptz DEFAULT NULL,
	note text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'rl_deny'
LANGUAGE C VOLATILE SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_deny(text, cidr, timestamptz, text) IS
	'deny a network (or one address) of a named rate limit until expires (NULL: for ever): its addresses are refused at once, retry_after the time to expiry; replaces a deny of the same network';
REVOKE ALL ON FUNCTION @extschema@.rl_deny(text, cidr, timestamptz, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.rl_unlist(name text, net cidr)
RETURNS boolean
AS 'MODULE_PATHNAME', 'rl_unlist'
LANGUAGE C VOLATILE STRICT SECURITY DEFINER;
COMMENT ON FUNCTION @extschema@.rl_unlist(text, cidr) IS
	'drop the allow and the deny entry of exactly this network; false when it had none';
REVOKE ALL ON FUNCTION @extschema@.rl_unlist(text, cidr) FROM PUBLIC;
