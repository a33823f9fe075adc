-- Types and tables: the C edition's, column for column, so that state and
-- definitions mean the same in either edition.

-- The edition and its version: what a later script reads to upgrade in
-- place.
CREATE FUNCTION rl_sql_edition(OUT edition text, OUT version text)
RETURNS record
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT 'sql'::text, '1.3'::text$$;
COMMENT ON FUNCTION rl_sql_edition() IS
	'the edition of ratelimit installed in this schema (sql) and its version';

CREATE TYPE rl_policy AS (
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
COMMENT ON TYPE rl_policy IS
	'a rate limit policy for inline use; build it with rl_token_bucket(), rl_fixed_window() or rl_sliding_window()';

CREATE TYPE rl_result AS (
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
COMMENT ON TYPE rl_result IS
	'the answer of rl_limit and rl_check: granted?, when to retry, tokens left, time until full or next window, the limit''s size, whether to act now, the times in milliseconds, and the tokens taken';

CREATE TYPE rl_all_result AS (
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
COMMENT ON TYPE rl_all_result IS
	'the answer of rl_limit_all: granted?, the longest retry_after, the limit that refused, the tokens left, reset and size of the limit that decides the answer, whether to act now, and the times in milliseconds';

CREATE TYPE rl_state AS (
	value float8,
	ts timestamptz
);
COMMENT ON TYPE rl_state IS
	'the two numbers of a limit, brought forward to now: tokens held and the time they are counted at';

CREATE TABLE rl_definitions (
	name text COLLATE "C" PRIMARY KEY
		CHECK (octet_length(name) OPERATOR(pg_catalog.>=) 1
			AND octet_length(name) OPERATOR(pg_catalog.<=) 256),
	kind text NOT NULL,
	rate float8,
	period interval,
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
		CHECK (max_debt OPERATOR(pg_catalog.>=) 0),
	CONSTRAINT rl_definitions_kind_check CHECK (
		CASE WHEN kind OPERATOR(pg_catalog.=) ANY (ARRAY['concurrency', 'concurrency lease'])
		THEN rate IS NULL AND period IS NULL
			AND shards OPERATOR(pg_catalog.=) 1 AND start IS NULL
			AND capacity OPERATOR(pg_catalog.>=) 1
			AND capacity OPERATOR(pg_catalog.<=) 1000
			AND capacity OPERATOR(pg_catalog.=) pg_catalog.trunc(capacity)
			AND (max_reserved IS NULL OR (kind OPERATOR(pg_catalog.=) 'concurrency'
				AND max_reserved OPERATOR(pg_catalog.>) capacity
				AND max_reserved OPERATOR(pg_catalog.<=) 1000
				AND max_reserved OPERATOR(pg_catalog.=) pg_catalog.trunc(max_reserved)))
		ELSE kind OPERATOR(pg_catalog.=) ANY (ARRAY['token bucket', 'fixed window', 'sliding window'])
			AND rate IS NOT NULL AND period IS NOT NULL
		END)
);
COMMENT ON TABLE rl_definitions IS
	'named rate limit definitions; write them with rl_define() and rl_undefine()';
COMMENT ON COLUMN rl_definitions.shadow IS
	'shadow mode: every call is granted, and those the limit would refuse take nothing';
COMMENT ON COLUMN rl_definitions.block_for IS
	'a refused call blocks its key this long (not lengthened by calls refused during the block); NULL: no automatic block';
COMMENT ON COLUMN rl_definitions.block_factor IS
	'escalation: an automatic block lasts block_for times block_factor for every offence the key still owes (each block adds one, one is forgotten per block_horizon); NULL: every block lasts block_for';
COMMENT ON COLUMN rl_definitions.block_max IS
	'escalation: the longest automatic block; NULL: 100 years';
COMMENT ON COLUMN rl_definitions.block_horizon IS
	'escalation: one offence is forgotten per block_horizon once a block ends; NULL: 1 day';
COMMENT ON COLUMN rl_definitions.max_debt IS
	'a call is admitted on a positive balance and may take the key down to -max_debt, as may rl_settle''s charge (token bucket and fixed window, without shards or max_reserved); NULL: a call needs its whole count';

-- Two numbers per (name, key, shard), and a third for a sliding window.
-- The NULL key is stored as '' (empty keys are refused).
CREATE TABLE rate_limits (
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	shard smallint NOT NULL,
	value float8 NOT NULL,
	ts timestamptz NOT NULL,
	prev float8,
	PRIMARY KEY (name, key, shard)
) WITH (fillfactor = 90);
COMMENT ON TABLE rate_limits IS
	'rate limit state: tokens (value) at time ts per (name, key, shard); key '''' is the shared NULL key';
COMMENT ON COLUMN rate_limits.prev IS
	'sliding window: what the window before the one starting at ts counted; token bucket and fixed window: the key''s offence score s for escalating blocks (block_factor), stored as -(1 + s), NULL for none';

REVOKE ALL ON TABLE rl_definitions FROM PUBLIC;
REVOKE ALL ON TABLE rate_limits FROM PUBLIC;

-- Definitions are configuration: as a pg_tle extension, pg_dump saves
-- them with the database (a plain install dumps the table anyway).
DO $rl$
BEGIN
	PERFORM pg_catalog.pg_extension_config_dump('rl_definitions', '');
EXCEPTION WHEN feature_not_supported OR object_not_in_prerequisite_state THEN
	NULL;
END
$rl$;
