/*-------------------------------------------------------------------------
 *
 * storage.c
 *	  Reading and writing rl_definitions and rate_limits.
 *
 * Reading, locking, updating and inserting a state row go through the
 * direct path (direct.c) when it can serve the table and
 * ratelimit.direct_access is on; everything else, and those when it
 * cannot, runs the SQL below through SPI.  Both paths follow the
 * protocol described here.
 *
 * Locking protocol.  A consuming call first decides from its row read
 * without a lock (rl_storage_consume): a refusal ends there, locking and
 * writing nothing.  A decision that writes holds the row until the caller
 * commits or rolls back (a rollback, or a rollback to a savepoint,
 * restores the tokens): on the direct path one heap_update of the version
 * read, when nobody holds it and it is still the newest, which is what
 * SELECT ... FOR NO KEY UPDATE and then UPDATE would have written, holding
 * the same lock; otherwise, and always on the SQL path, the call locks the
 * row with SELECT ... FOR NO KEY UPDATE, decides again, and updates that
 * row version by ctid.  (rl_gc locks FOR UPDATE, as its DELETE does.)  Under
 * READ COMMITTED a caller that waited on the lock sees the newest
 * committed version; under REPEATABLE READ and SERIALIZABLE the executor
 * raises SQLSTATE 40001 instead, as for any locking read.
 *
 * A key with no row is inserted with INSERT ... ON CONFLICT DO NOTHING
 * (on the direct path, by the same speculative insertion).
 * When two sessions race to create the same key, the loser's insert waits
 * for the winner, inserts nothing, and the caller goes back to locking the
 * winner's row, so nobody ever starts from a second full bucket.
 *
 * A sharded limit passes over shards another transaction holds (up to 8
 * probed: the direct path sees the holder, the SQL path locks with SKIP
 * LOCKED; then with SKIP LOCKED on two); it waits only when every shard it
 * probed is busy and its transaction holds no shard of the key.
 *
 * Reads for rl_check and rl_value take no lock.  Like the locking read,
 * every statement runs with a fresh snapshot (SPI's read_only = false), so
 * a check sees what an rl_limit earlier in the same statement consumed
 * and answers what rl_limit would answer at that moment.
 *
 * Every statement names the extension's own schema and operators
 * explicitly and takes names and keys as parameters, so the caller's
 * search_path cannot change what runs; each reads and writes ONLY the
 * extension's tables, never a table someone made inherit from them (as
 * the direct path, which reads the heap of the table itself).  Plans are prepared once per
 * backend and schema and kept.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/uuid.h"

#include "direct.h"
#include "names.h"
#include "policy.h"
#include "stats.h"
#include "storage.h"

typedef enum RlPlanId
{
	PLAN_GET_DEFINITION,
	PLAN_PUT_DEFINITION,
	PLAN_DELETE_DEFINITION,
	PLAN_READ,
	PLAN_LOCK,
	PLAN_LOCK_SKIP,
	PLAN_LOCK_KEY,
	PLAN_LOCK_KEY_SKIP,
	PLAN_READ_SHARDS,
	PLAN_INSERT,
	PLAN_UPDATE,
	PLAN_DELETE_KEY,
	PLAN_DELETE_NAME,
	PLAN_DELETE_ROW,
	PLAN_SCAN,
	PLAN_CORE_COUNT,			/* prepared together; those after, on first use */
	PLAN_LEASE_HELD = PLAN_CORE_COUNT,
	PLAN_LEASE_INSERT,
	PLAN_LEASE_LOOKUP,
	PLAN_LEASE_RELEASE,
	PLAN_LEASE_DELETE_NAME,
	PLAN_LEASE_GC,
	PLAN_DELETE_STORED_KEY,		/* rl_reset's config: from 1.3 on */
	PLAN_COUNT
} RlPlanId;

typedef struct RlPlanSpec
{
	const char *sql;			/* each %s stands for the quoted schema name */
	int			nargs;
	Oid			argtypes[18];
} RlPlanSpec;

#define EQ " OPERATOR(pg_catalog.=) "
#define GT " OPERATOR(pg_catalog.>) "
/* whether a name has overrides: its own column, so old schemas replace it */
#define OVERRIDDEN \
	"EXISTS (SELECT FROM ONLY %s.rl_overrides o WHERE o.name" EQ "$1)"
/* whether a scanned row's key has an override: old schemas replace it too */
#define KEY_OVERRIDDEN \
	"EXISTS (SELECT FROM ONLY %s.rl_overrides o WHERE o.name" EQ "s.name" \
	" AND o.key" EQ "s.key)"
/* whether a name has allow or deny entries: old schemas replace it too */
#define ACCESS_LISTED \
	"EXISTS (SELECT FROM ONLY %s.rl_access a WHERE a.name" EQ "$1)"
#define ROW_MATCH "name" EQ "$1 AND key" EQ "$2 AND shard" EQ "$3"
/*
 * Every read of state rows selects prev (the sliding window's third
 * number, from 1.3 on) as its last column, which table_state reads.
 */
/* a read of one state row that locks it: strength is the FOR clause */
#define LOCKING_READ(strength) \
	{ \
		"SELECT value, ts, ctid, prev FROM ONLY %s.rate_limits WHERE " ROW_MATCH \
		" " strength, \
		3, {TEXTOID, TEXTOID, INT2OID} \
	}

static const RlPlanSpec plan_specs[PLAN_COUNT] = {
	[PLAN_GET_DEFINITION] = {
		"SELECT kind, rate, period, capacity, max_reserved, shards, start,"
		" storage, time_zone, shadow, block_for, block_factor, block_max,"
		" block_horizon, ipv4_prefix::pg_catalog.int4,"
		" ipv6_prefix::pg_catalog.int4, max_debt, " OVERRIDDEN ", " ACCESS_LISTED
		" FROM ONLY %s.rl_definitions WHERE name" EQ "$1",
		1, {TEXTOID}
	},
	[PLAN_PUT_DEFINITION] = {
		"INSERT INTO %s.rl_definitions AS d"
		" (name, kind, rate, period, capacity, max_reserved, shards, start,"
		" storage, time_zone, shadow, block_for, block_factor, block_max,"
		" block_horizon, ipv4_prefix, ipv6_prefix, max_debt)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,"
		" COALESCE($11, false), $12, $13, $14, $15, $16, $17, $18)"
		" ON CONFLICT (name) DO UPDATE SET kind = excluded.kind,"
		" rate = excluded.rate, period = excluded.period,"
		" capacity = excluded.capacity, max_reserved = excluded.max_reserved,"
		" shards = excluded.shards, start = excluded.start,"
		" storage = excluded.storage, time_zone = excluded.time_zone,"
		" shadow = excluded.shadow, block_for = excluded.block_for,"
		" block_factor = excluded.block_factor, block_max = excluded.block_max,"
		" block_horizon = excluded.block_horizon,"
		" ipv4_prefix = excluded.ipv4_prefix, ipv6_prefix = excluded.ipv6_prefix,"
		" max_debt = excluded.max_debt"
		" WHERE d.kind" EQ "excluded.kind OR NOT (d.kind" EQ
		" ANY ('{concurrency,concurrency lease}'::pg_catalog.text[])"
		" OR excluded.kind" EQ "ANY ('{concurrency,concurrency lease}'::pg_catalog.text[]))",
		18, {TEXTOID, TEXTOID, FLOAT8OID, INTERVALOID, FLOAT8OID, FLOAT8OID,
		INT4OID, TIMESTAMPTZOID, TEXTOID, TEXTOID, BOOLOID, INTERVALOID,
		FLOAT8OID, INTERVALOID, INTERVALOID, INT4OID, INT4OID,
		FLOAT8OID}
	},
	[PLAN_DELETE_DEFINITION] = {
		"DELETE FROM ONLY %s.rl_definitions WHERE name" EQ "$1",
		1, {TEXTOID}
	},
	[PLAN_READ] = {
		"SELECT value, ts, prev FROM ONLY %s.rate_limits WHERE " ROW_MATCH,
		3, {TEXTOID, TEXTOID, INT2OID}
	},
	/* the lock the UPDATE that follows takes: its key columns stay */
	[PLAN_LOCK] = LOCKING_READ("FOR NO KEY UPDATE"),
	[PLAN_LOCK_SKIP] = LOCKING_READ("FOR NO KEY UPDATE SKIP LOCKED"),
	/*
	 * the lock a DELETE takes, and an UPDATE of a table where a unique index
	 * makes value or ts a key column
	 */
	[PLAN_LOCK_KEY] = LOCKING_READ("FOR UPDATE"),
	[PLAN_LOCK_KEY_SKIP] = LOCKING_READ("FOR UPDATE SKIP LOCKED"),
	[PLAN_READ_SHARDS] = {
		"SELECT value, ts, shard, prev FROM ONLY %s.rate_limits"
		" WHERE name" EQ "$1 AND key" EQ "$2",
		2, {TEXTOID, TEXTOID}
	},
	[PLAN_INSERT] = {
		"INSERT INTO %s.rate_limits (name, key, shard, value, ts, prev)"
		" VALUES ($1, $2, $3, $4, $5, $6)"
		" ON CONFLICT (name COLLATE pg_catalog.\"C\" pg_catalog.text_ops,"
		" key COLLATE pg_catalog.\"C\" pg_catalog.text_ops, shard) DO NOTHING",
		6, {TEXTOID, TEXTOID, INT2OID, FLOAT8OID, TIMESTAMPTZOID, FLOAT8OID}
	},
	[PLAN_UPDATE] = {
		"UPDATE ONLY %s.rate_limits SET value = $1, ts = $2, prev = $4"
		" WHERE ctid" EQ "$3",
		4, {FLOAT8OID, TIMESTAMPTZOID, TIDOID, FLOAT8OID}
	},
	[PLAN_DELETE_KEY] = {
		"DELETE FROM ONLY %s.rate_limits WHERE key" EQ "$2 AND (name" EQ "$1"
		" OR (name" GT "($1 OPERATOR(pg_catalog.||) " RL_INLINE_SEPARATOR_SQL ")"
		" AND name OPERATOR(pg_catalog.<) ($1 OPERATOR(pg_catalog.||) E'\\x20')))",
		2, {TEXTOID, TEXTOID}
	},
	[PLAN_DELETE_NAME] = {
		"DELETE FROM ONLY %s.rate_limits WHERE name" EQ "$1",
		1, {TEXTOID}
	},
	[PLAN_DELETE_ROW] = {
		"DELETE FROM ONLY %s.rate_limits WHERE ctid" EQ "$1",
		1, {TIDOID}
	},
	/* columns 1-2 and the last as in PLAN_READ, so result_state reads them */
	[PLAN_SCAN] = {
		"SELECT s.value, s.ts, s.name, s.key, s.shard,"
		" d.kind, d.rate, d.period, d.capacity, d.max_reserved, d.shards,"
		" d.start, d.storage, d.time_zone, " KEY_OVERRIDDEN ", s.prev"
		" FROM ONLY %s.rate_limits s LEFT JOIN ONLY %s.rl_definitions d"
		" ON d.name" EQ "s.name"
		" WHERE d.name IS NOT NULL"
		" OR pg_catalog.strpos(s.name, " RL_INLINE_SEPARATOR_SQL ")" GT "0",
		0, {InvalidOid}
	},
	/* leases: rl_leases exists from version 1.2 on */
	[PLAN_LEASE_HELD] = {
		"SELECT COALESCE(pg_catalog.sum(permits), 0)::pg_catalog.int8"
		" FROM ONLY %s.rl_leases WHERE name" EQ "$1 AND key" EQ "$2"
		" AND released IS NULL AND expires OPERATOR(pg_catalog.>) $3",
		3, {TEXTOID, TEXTOID, TIMESTAMPTZOID}
	},
	[PLAN_LEASE_INSERT] = {
		"INSERT INTO %s.rl_leases (id, name, key, permits, acquired, expires)"
		" VALUES (pg_catalog.gen_random_uuid(), $1, $2, $3, $4, $5) RETURNING id",
		5, {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}
	},
	[PLAN_LEASE_LOOKUP] = {
		"SELECT released IS NULL AND expires OPERATOR(pg_catalog.>) $2"
		" FROM ONLY %s.rl_leases WHERE id" EQ "$1 FOR UPDATE",
		2, {UUIDOID, TIMESTAMPTZOID}
	},
	[PLAN_LEASE_RELEASE] = {
		"UPDATE ONLY %s.rl_leases SET released = $2 WHERE id" EQ "$1",
		2, {UUIDOID, TIMESTAMPTZOID}
	},
	[PLAN_LEASE_DELETE_NAME] = {
		"DELETE FROM ONLY %s.rl_leases WHERE name" EQ "$1"
		" AND (released IS NOT NULL OR expires OPERATOR(pg_catalog.<=) $2)",
		2, {TEXTOID, TIMESTAMPTZOID}
	},
	[PLAN_LEASE_GC] = {
		"DELETE FROM ONLY %s.rl_leases WHERE id" EQ "ANY (ARRAY("
		"SELECT id FROM ONLY %s.rl_leases WHERE expires OPERATOR(pg_catalog.<=) $1"
		" LIMIT $2 FOR UPDATE SKIP LOCKED))",
		2, {TIMESTAMPTZOID, INT8OID}
	},
	[PLAN_DELETE_STORED_KEY] = {
		"DELETE FROM ONLY %s.rate_limits WHERE name" EQ "$1 AND key" EQ "$2",
		2, {TEXTOID, TEXTOID}
	},
};

/* A scan of every state row that has a definition, a batch at a time. */
struct RlScan
{
	Portal		portal;
	SPITupleTable *batch;		/* the rows fetched last */
	uint64		nrows;
	uint64		next;
	int			guc_level;		/* jit off for the scan */
};

#define SCAN_BATCH_ROWS 1000
#define SCAN_FIRST_POLICY_COL 6

static SPIPlanPtr plans[PLAN_COUNT];
static Oid	plans_nspid = InvalidOid;
static char plans_nspname[NAMEDATALEN];	/* the name the plans spell */
static bool plans_storage = true;	/* rl_definitions has storage (1.3) */

/* The run of storage calls in progress (rl_storage_begin). */
static Oid	storage_nspid = InvalidOid;
static bool spi_open = false;

/*
 * Whether schema nspid's rl_definitions has the column storage (1.3): the
 * library also serves databases still at 1.0 to 1.2, whose definitions
 * all keep their state in the table.
 */
static bool
definitions_have_storage(Oid nspid)
{
	Oid			relid = get_relname_relid("rl_definitions", nspid);

	return OidIsValid(relid) && get_attnum(relid, "storage") != InvalidAttrNumber;
}

/* Replace the first occurrence of from in sql with to. */
static void
replace_once(StringInfo sql, const char *from, const char *to)
{
	char	   *at = strstr(sql->data, from);
	StringInfoData out;

	if (at == NULL)
		return;
	initStringInfo(&out);
	appendBinaryStringInfo(&out, sql->data, at - sql->data);
	appendStringInfoString(&out, to);
	appendStringInfoString(&out, at + strlen(from));
	pfree(sql->data);
	*sql = out;
}

/*
 * Prepare and keep plan i, for the schema spelled quoted; without the
 * storage column (1.0 to 1.2, which have no time_zone either, and no
 * rate_limits.prev), every definition reads as storage 'table' with no
 * time zone and is written without them, and every state row as one with
 * no prev.
 */
static void
prepare_plan(int i, const char *quoted, bool storage)
{
	StringInfoData sql;
	SPIPlanPtr	plan;

	initStringInfo(&sql);
	/* at most three schema references; a plan with fewer ignores the rest */
	appendStringInfo(&sql, plan_specs[i].sql, quoted, quoted, quoted);
	if (!storage)
	{
		char	   *overridden = psprintf(OVERRIDDEN, quoted);

		replace_once(&sql, overridden, "false");
		pfree(overridden);
		overridden = psprintf(ACCESS_LISTED, quoted);
		replace_once(&sql, overridden, "false");
		pfree(overridden);
		overridden = psprintf(KEY_OVERRIDDEN, quoted);
		replace_once(&sql, overridden, "false");
		pfree(overridden);
		replace_once(&sql, " storage, time_zone, shadow, block_for, block_factor,"
					 " block_max, block_horizon, ipv4_prefix::pg_catalog.int4,"
					 " ipv6_prefix::pg_catalog.int4, max_debt, false, false",
					 " NULL::pg_catalog.text, NULL::pg_catalog.text,"
					 " NULL::pg_catalog.bool, NULL::pg_catalog.interval,"
					 " NULL::pg_catalog.float8, NULL::pg_catalog.interval,"
					 " NULL::pg_catalog.interval, NULL::pg_catalog.int4,"
					 " NULL::pg_catalog.int4, NULL::pg_catalog.float8, false, false");
		replace_once(&sql, "d.start, d.storage, d.time_zone",
					 "d.start, NULL::pg_catalog.text, NULL::pg_catalog.text");
		replace_once(&sql, " start, storage, time_zone, shadow, block_for,"
					 " block_factor, block_max, block_horizon, ipv4_prefix,"
					 " ipv6_prefix, max_debt)", " start)");
		replace_once(&sql, ", $8, $9, $10, COALESCE($11, false), $12, $13, $14, $15,"
					 " $16, $17, $18)", ", $8)");
		replace_once(&sql, ", storage = excluded.storage, time_zone = excluded.time_zone,"
					 " shadow = excluded.shadow, block_for = excluded.block_for,"
					 " block_factor = excluded.block_factor, block_max = excluded.block_max,"
					 " block_horizon = excluded.block_horizon,"
					 " ipv4_prefix = excluded.ipv4_prefix, ipv6_prefix = excluded.ipv6_prefix,"
					 " max_debt = excluded.max_debt", "");
		/* nor rate_limits.prev: read as NULL, never written */
		replace_once(&sql, ", prev FROM", ", NULL::pg_catalog.float8 FROM");
		replace_once(&sql, ", s.prev FROM", ", NULL::pg_catalog.float8 FROM");
		replace_once(&sql, ", ts, prev) VALUES ($1, $2, $3, $4, $5, $6)",
					 ", ts) VALUES ($1, $2, $3, $4, $5)");
		replace_once(&sql, ", prev = $4 WHERE", " WHERE");
	}
	plan = SPI_prepare(sql.data, plan_specs[i].nargs,
					   (Oid *) plan_specs[i].argtypes);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql.data, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	plans[i] = plan;
	pfree(sql.data);
}

/*
 * Prepare (once per backend and schema) the plans for schema nspid.  The
 * statements spell the schema's name, so a renamed schema (ALTER SCHEMA
 * ... RENAME) gets its plans prepared again.
 */
static void
prepare_plans(Oid nspid)
{
	char	   *nspname;
	const char *quoted;
	bool		storage;

	nspname = get_namespace_name(nspid);
	if (nspname == NULL)
		elog(ERROR, "cache lookup failed for namespace %u", nspid);
	storage = definitions_have_storage(nspid);
	if (plans_nspid == nspid && strcmp(plans_nspname, nspname) == 0 &&
		plans_storage == storage)
		return;
	quoted = quote_identifier(nspname);
	plans_nspid = InvalidOid;	/* until every plan is ready */
	plans_storage = storage;

	for (int i = 0; i < PLAN_COUNT; i++)
	{
		if (plans[i])
		{
			SPI_freeplan(plans[i]);
			plans[i] = NULL;
		}
		if (i < PLAN_CORE_COUNT)
			prepare_plan(i, quoted, storage);
	}
	plans_nspid = nspid;
	strlcpy(plans_nspname, nspname, NAMEDATALEN);
}

/*
 * A plan of the lease statements, prepared on first use: their table is
 * new in 1.2, and the library also serves databases still at 1.1.
 */
static void
ensure_lease_plan(RlPlanId id)
{
	if (plans[id] == NULL)
		prepare_plan(id, quote_identifier(plans_nspname), plans_storage);
}

/*
 * Start a run of storage calls on the tables of schema nspid.  SPI is
 * connected only when a statement is needed: a call the direct path and
 * the definition cache serve runs none.
 */
void
rl_storage_begin(Oid nspid)
{
	storage_nspid = nspid;
	spi_open = false;
}

/*
 * rl_storage_begin for a run that may write (or lock rows): in a read-only
 * transaction, and so on a hot standby, it raises SQLSTATE 25006 as an
 * UPDATE would, whatever the call's outcome, on either path.
 */
void
rl_storage_begin_writing(Oid nspid, const char *cmdname)
{
	PreventCommandIfReadOnly(cmdname);
	rl_storage_begin(nspid);
}

/* Connect SPI, with the plans for the current schema, if not yet. */
static void
ensure_spi(void)
{
	if (spi_open)
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	spi_open = true;
	prepare_plans(storage_nspid);
}

/*
 * Connect to SPI now, if the SQL path may need it: a caller about to run
 * storage calls inside a subtransaction of its own (wait.c) must not have
 * the connection opened, and so closed, inside it.
 */
void
rl_storage_connect(void)
{
	ensure_spi();
}

/* End what rl_storage_begin started. */
void
rl_storage_end(void)
{
	if (!spi_open)
		return;
	spi_open = false;
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

/* The text of a kept plan's statement, for messages. */
static const char *
plan_query(RlPlanId id)
{
	List	   *sources = SPI_plan_get_plan_sources(plans[id]);

	return ((CachedPlanSource *) linitial(sources))->query_string;
}

/*
 * Run a kept plan, with snapshot when valid (else SPI's own), and raise on
 * any result but the expected one.  Each caller copies what it needs out
 * of the result before the next statement, so the previous result is
 * freed first: a long rl_gc runs many statements.
 */
static void
run_plan_snapshot(RlPlanId id, Datum *values, const char *nulls,
				  bool read_only, Snapshot snapshot, int expected)
{
	int			rc;

	ensure_spi();
	if (id >= PLAN_CORE_COUNT)
		ensure_lease_plan(id);
	if (SPI_tuptable != NULL)
	{
		SPI_freetuptable(SPI_tuptable);
		SPI_tuptable = NULL;
	}
	if (snapshot != InvalidSnapshot)
		rc = SPI_execute_snapshot(plans[id], values, nulls, snapshot,
								  InvalidSnapshot, read_only, true, 0);
	else
		rc = SPI_execute_plan(plans[id], values, nulls, read_only, 0);

	/*
	 * A rule on one of the tables turned the statement into another.  A
	 * statement rewritten into nothing depends on no table, so dropping
	 * the rule would not invalidate its plan: prepare every plan anew.
	 */
	if (rc == SPI_OK_REWRITTEN ||
		(rc >= 0 && rc != expected && expected != SPI_OK_SELECT))
	{
		plans_nspid = InvalidOid;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a rule rewrote a statement ratelimit runs on its own tables"),
				 errdetail("The statement \"%s\" came back as %s.",
						   plan_query(id), SPI_result_code_string(rc)),
				 errhint("Drop the INSTEAD rules on rate_limits and rl_definitions.")));
	}
	if (rc != expected)
		elog(ERROR, "SPI_execute_plan failed for plan %d: %s",
			 (int) id, SPI_result_code_string(rc));
}

/* Run a kept plan with SPI's snapshot (see run_plan_snapshot). */
static void
run_plan(RlPlanId id, Datum *values, const char *nulls, bool read_only,
		 int expected)
{
	run_plan_snapshot(id, values, nulls, read_only, InvalidSnapshot, expected);
}

/* Fetch column col of a row of a result; false when it is NULL. */
static bool
table_column(SPITupleTable *table, uint64 row, int col, Datum *value)
{
	bool		isnull;

	*value = SPI_getbinval(table->vals[row], table->tupdesc, col, &isnull);
	return !isnull;
}

/* Fetch column col of a row of the last result; false when it is NULL. */
static bool
result_column(uint64 row, int col, Datum *value)
{
	return table_column(SPI_tuptable, row, col, value);
}

/*
 * Read the two numbers of a result row.  A row someone edited by hand
 * into NaN or infinity would poison every later answer: refuse it.
 */
static void
check_state(const RlState *state, bool complete)
{
	if (!complete)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("rate limit state row has a NULL value or ts")));
	if (isnan(state->value) || isinf(state->value) ||
		TIMESTAMP_NOT_FINITE(state->ts) || isinf(state->prev))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("rate limit state row holds a non-finite value or ts")));
}

/*
 * The numbers of a row of a result, checked: value and ts in columns 1
 * and 2, prev in the last (NaN for NULL).
 */
static void
table_state(SPITupleTable *table, uint64 row, RlState *state)
{
	Datum		value;
	Datum		ts;
	Datum		prev;
	bool		complete;

	complete = table_column(table, row, 1, &value) &&
		table_column(table, row, 2, &ts);
	state->value = complete ? DatumGetFloat8(value) : 0;
	state->ts = complete ? DatumGetTimestampTz(ts) : 0;
	state->prev = table_column(table, row, table->tupdesc->natts, &prev) ?
		DatumGetFloat8(prev) : NAN;
	check_state(state, complete);
}

/* The two numbers of a row of the last result. */
static void
result_state(uint64 row, RlState *state)
{
	table_state(SPI_tuptable, row, state);
}

/* The state and address of the single row a locking read returned. */
static void
result_locked(RlState *state, ItemPointer tid)
{
	Datum		ctid;

	result_state(0, state);
	if (!result_column(0, 3, &ctid))
		elog(ERROR, "locked rate limit row has no ctid");
	ItemPointerCopy((ItemPointer) DatumGetPointer(ctid), tid);
}

/* The table rl_definitions of the schema rl_storage_begin opened. */
Oid
rl_storage_definitions_relid(void)
{
	return get_relname_relid("rl_definitions", storage_nspid);
}

/*
 * Find a definition; false when the name has none.  It is read with a
 * fresh snapshot, not the transaction's, as the catalogs are: the newest
 * committed definition and the transaction's own changes (definitions.c
 * relies on this to cache it).
 */
bool
rl_storage_get_definition(text *name, RlPolicy *policy)
{
	Datum		args[1] = {PointerGetDatum(name)};
	Datum		values[RL_DEFINITION_NATTS];
	bool		nulls[RL_DEFINITION_NATTS];
	Datum		overridden;
	Snapshot	latest = RegisterSnapshot(GetLatestSnapshot());

	run_plan_snapshot(PLAN_GET_DEFINITION, args, NULL, false, latest,
					  SPI_OK_SELECT);
	UnregisterSnapshot(latest);
	if (SPI_processed == 0)
		return false;
	for (int i = 0; i < RL_DEFINITION_NATTS; i++)
		nulls[i] = !result_column(0, i + 1, &values[i]);
	rl_policy_from_values(values, nulls, policy);
	rl_definition_options_from_values(values, nulls, policy);
	policy->overrides = result_column(0, RL_DEFINITION_NATTS + 1, &overridden) &&
		DatumGetBool(overridden);
	policy->access_lists = result_column(0, RL_DEFINITION_NATTS + 2, &overridden) &&
		DatumGetBool(overridden);
	return true;
}

/*
 * Create or replace a definition from checked rl_definitions column values
 * (RL_DEFINITION_NATTS of them);
 * false when it was not replaced because the existing definition is of
 * another form (a rate and a concurrency limit, or permits and leases).
 */
bool
rl_storage_put_definition(text *name, Datum *values, bool *nulls)
{
	Datum		args[RL_DEFINITION_NATTS + 1];
	char		argnulls[RL_DEFINITION_NATTS + 1];

	args[0] = PointerGetDatum(name);
	argnulls[0] = ' ';
	for (int i = 0; i < RL_DEFINITION_NATTS; i++)
	{
		args[i + 1] = values[i];
		argnulls[i + 1] = nulls[i] ? 'n' : ' ';
	}
	run_plan(PLAN_PUT_DEFINITION, args, argnulls, false, SPI_OK_INSERT);
	return SPI_processed == 1;
}

/*
 * Delete a definition, its overrides, list entries and state (its
 * overridden keys' rows too: they are the name's); false when there was none.
 */
bool
rl_storage_delete_definition(text *name)
{
	Datum		args[1] = {PointerGetDatum(name)};

	run_plan(PLAN_DELETE_DEFINITION, args, NULL, false, SPI_OK_DELETE);
	if (SPI_processed == 0)
		return false;
	run_plan(PLAN_DELETE_NAME, args, NULL, false, SPI_OK_DELETE);
	if (plans_storage)
	{
		rl_storage_delete_name_overrides(name);
		rl_storage_delete_name_access(name);
	}
	return true;
}

/*
 * Run one rare statement, planned when it runs (storage_access.c,
 * storage_overrides.c), on tables of the schema of relid: each %s of fmt
 * (three at most) spells that schema.  fresh: with a new snapshot, as definitions are
 * read.  SPI_tuptable holds its rows; returns how many it returned or
 * changed.
 */
uint64
rl_storage_run_once(Oid relid, const char *fmt, int nargs, Oid *types,
					Datum *args, const char *nulls, bool fresh, int expected)
{
	const char *schema =
		quote_identifier(get_namespace_name(get_rel_namespace(relid)));
	char	   *sql = psprintf(fmt, schema, schema, schema);
	SPIPlanPtr	plan;
	Snapshot	latest = InvalidSnapshot;
	int			rc;

	rl_storage_connect();
	plan = SPI_prepare(sql, nargs, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (fresh)
		latest = RegisterSnapshot(GetLatestSnapshot());
	rc = SPI_execute_snapshot(plan, args, nulls, latest, InvalidSnapshot,
							  false, true, 0);
	if (fresh)
		UnregisterSnapshot(latest);
	if (rc != expected)
		elog(ERROR, "SPI_execute_snapshot failed for \"%s\": %s",
			 sql, SPI_result_code_string(rc));
	SPI_freeplan(plan);
	pfree(sql);
	return SPI_processed;
}

/* The table rl_overrides of the schema rl_storage_begin opened. */
Oid
rl_storage_overrides_relid(void)
{
	return get_relname_relid("rl_overrides", storage_nspid);
}

/* The table rl_access of the schema rl_storage_begin opened. */
Oid
rl_storage_access_relid(void)
{
	return get_relname_relid("rl_access", storage_nspid);
}

/* The parameters that address one state row. */
static void
row_args(const RlRowKey *row, Datum *args)
{
	args[0] = PointerGetDatum(row->name);
	args[1] = PointerGetDatum(row->key);
	args[2] = Int16GetDatum(row->shard);
}

/* The state table of the schema rl_storage_begin opened. */
static Oid
state_relid(void)
{
	return get_relname_relid("rate_limits", storage_nspid);
}

/* Read a state row without locking it; false when there is none. */
bool
rl_storage_read(const RlRowKey *row, RlState *state)
{
	Datum		args[3];
	bool		complete = true;

	switch (rl_direct_read(state_relid(), row->name, row->key, row->shard,
						   state, &complete))
	{
		case RL_DIRECT_FOUND:
			check_state(state, complete);
			return true;
		case RL_DIRECT_MISSING:
			return false;
		default:
			break;
	}
	row_args(row, args);
	run_plan(PLAN_READ, args, NULL, false, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	result_state(0, state);
	return true;
}

/* Run a locking read of one row; true with state and tid when it locked. */
static bool
lock_row(RlPlanId id, const RlRowKey *row, RlState *state, ItemPointer tid)
{
	Datum		args[3];

	row_args(row, args);
	run_plan(id, args, NULL, false, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	result_locked(state, tid);
	return true;
}

/*
 * The SQL path's locking read of a state row: FOR UPDATE when key (the
 * DELETE or UPDATE to follow takes that lock), else FOR NO KEY UPDATE;
 * SKIP LOCKED when skip.
 */
static RlPlanId
lock_plan(bool key, bool skip)
{
	if (key)
		return skip ? PLAN_LOCK_KEY_SKIP : PLAN_LOCK_KEY;
	return skip ? PLAN_LOCK_SKIP : PLAN_LOCK;
}

/* Lock a row through the direct path (direct.c), the state checked. */
static RlDirectStatus
direct_lock(const RlRowKey *row, bool wait, bool to_delete, RlState *state,
			ItemPointer tid)
{
	bool		complete = true;
	RlDirectStatus status;

	status = rl_direct_lock(state_relid(), row->name, row->key, row->shard,
							wait, to_delete, state, &complete, tid);
	if (status == RL_DIRECT_LOCKED || status == RL_DIRECT_BUSY)
		check_state(state, complete);
	return status;
}

/*
 * Lock a state row FOR NO KEY UPDATE, the lock its UPDATE takes, and read
 * it; false when there is none.  tid receives the locked version's
 * address for rl_storage_update.  On a table where a unique index makes
 * value or ts a key column (which only the SQL path serves), its UPDATE
 * locks FOR UPDATE, and so does this.
 */
bool
rl_storage_lock(const RlRowKey *row, RlState *state, ItemPointer tid)
{
	bool		key;

	switch (direct_lock(row, true, false, state, tid))
	{
		case RL_DIRECT_LOCKED:
			return true;
		case RL_DIRECT_MISSING:
			return false;
		case RL_DIRECT_UNSUPPORTED:
			break;
		default:
			elog(ERROR, "a waiting lock of a rate limit row came back busy");
			break;
	}
	key = rl_direct_update_locks_key(state_relid());
	if (!rl_stats_tracking())
		return lock_row(lock_plan(key, false), row, state, tid);

	/* a wait is counted and timed only when the row is there and busy */
	if (lock_row(lock_plan(key, true), row, state, tid))
		return true;
	rl_stats_lock_wait_start();
	if (lock_row(lock_plan(key, false), row, state, tid))
	{
		rl_stats_lock_wait_end();
		return true;
	}
	rl_stats_lock_wait_cancel();
	return false;
}

/* What rl_storage_consume passes to the direct path's decide. */
typedef struct ConsumeCall
{
	RlStorageDecide decide;
	void	   *arg;
} ConsumeCall;

static bool
direct_decide(const RlState *state, bool complete, void *arg, RlState *write)
{
	ConsumeCall *call = arg;

	check_state(state, complete);
	return call->decide(state, call->arg, write);
}

/*
 * A consuming call that first decides from the row's state read without a
 * lock (committed state, and the transaction's own changes): decide says
 * whether to write, and what.  DONE: decided, and written when it had to
 * be; a call that writes nothing (a refusal) has locked nothing, assigned
 * no transaction id and written no WAL.  MISSING: no row, decide not
 * called.  BUSY: the decision needs a write, and another transaction
 * holds the row (the direct path only).  LOCK: the decision needs a
 * write, and the write needs the lock.  After either, the caller locks
 * the row (rl_storage_lock) and decides again, or passes over a busy
 * shard; nothing was written and, after BUSY, no transaction id taken.
 *
 * The direct path writes in the same touch when nobody holds the row and
 * it has not changed since it was read (rl_direct_consume), and then
 * answers DONE; otherwise, and on the SQL path, a write always takes the
 * lock first.  A refusal from committed state is sound because a
 * transaction that holds the row can only have lowered it further, or, if
 * it raises it (a refund), the call is one that ran before that
 * transaction committed.
 */
RlTryStatus
rl_storage_consume(const RlRowKey *row, RlStorageDecide decide, void *arg)
{
	ConsumeCall call = {decide, arg};
	RlState		state;
	RlState		write;

	switch (rl_direct_consume(state_relid(), row->name, row->key, row->shard,
							  direct_decide, &call))
	{
		case RL_DIRECT_DONE:
			return RL_TRY_DONE;
		case RL_DIRECT_MISSING:
			return RL_TRY_MISSING;
		case RL_DIRECT_BUSY:
			return RL_TRY_BUSY;
		case RL_DIRECT_CONTENDED:
			return RL_TRY_LOCK;
		default:
			break;
	}
	if (!rl_storage_read(row, &state))
		return RL_TRY_MISSING;
	return decide(&state, arg, &write) ? RL_TRY_LOCK : RL_TRY_DONE;
}

/*
 * Lock a state row without waiting: FOR NO KEY UPDATE SKIP LOCKED, or FOR
 * UPDATE SKIP LOCKED when to_delete (rl_gc, whose DELETE then takes no
 * stronger lock than it holds, so it cannot wait) or when the UPDATE would
 * lock FOR UPDATE (see rl_storage_lock).  When nothing comes back, a plain
 * read tells a row another transaction holds from no row at all.
 */
RlRowStatus
rl_storage_lock_nowait(const RlRowKey *row, bool to_delete, RlState *state,
					   ItemPointer tid)
{
	switch (direct_lock(row, false, to_delete, state, tid))
	{
		case RL_DIRECT_LOCKED:
			return RL_ROW_LOCKED;
		case RL_DIRECT_BUSY:
			return RL_ROW_BUSY;
		case RL_DIRECT_MISSING:
			return RL_ROW_MISSING;
		default:
			break;				/* unsupported: the SQL path */
	}
	if (lock_row(lock_plan(to_delete ||
						   rl_direct_update_locks_key(state_relid()), true),
				 row, state, tid))
		return RL_ROW_LOCKED;
	return rl_storage_read(row, state) ? RL_ROW_BUSY : RL_ROW_MISSING;
}

/* Read every shard of one key without locking; found[i] says which exist. */
void
rl_storage_read_shards(text *name, text *key, int nshards, RlState *states,
					   bool *found)
{
	Datum		args[2] = {PointerGetDatum(name), PointerGetDatum(key)};

	for (int i = 0; i < nshards; i++)
		found[i] = false;
	run_plan(PLAN_READ_SHARDS, args, NULL, false, SPI_OK_SELECT);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		Datum		shard_datum;
		int			shard;

		/* shards past the current count are left over from a redefinition */
		if (!result_column(r, 3, &shard_datum))
			continue;
		shard = DatumGetInt16(shard_datum);
		if (shard < 0 || shard >= nshards)
			continue;
		result_state(r, &states[shard]);
		found[shard] = true;
	}
}

/*
 * Insert a state row for a new key; false when another transaction
 * inserted the same key first (its row can then be locked).  The direct
 * path inserts it as the statement would (speculative insertion, see
 * rl_direct_insert) when it can serve the table.
 */
bool
rl_storage_insert(const RlRowKey *row, const RlState *state)
{
	Datum		args[6];
	char		nulls[6] = "     ";

	switch (rl_direct_insert(state_relid(), row->name, row->key, row->shard,
							 state))
	{
		case RL_DIRECT_INSERTED:
			return true;
		case RL_DIRECT_CONFLICT:
			return false;
		case RL_DIRECT_INSERT_UNSUPPORTED:
			break;
	}
	row_args(row, args);
	args[3] = Float8GetDatum(state->value);
	args[4] = TimestampTzGetDatum(state->ts);
	args[5] = Float8GetDatum(state->prev);
	nulls[5] = isnan(state->prev) ? 'n' : ' ';
	run_plan(PLAN_INSERT, args, nulls, false, SPI_OK_INSERT);
	return SPI_processed == 1;
}

/* Write the new state into the row version rl_storage_lock locked. */
void
rl_storage_update(ItemPointer tid, const RlState *state)
{
	Datum		args[4];
	char		nulls[4] = "   ";

	if (rl_direct_update(state_relid(), tid, state))
		return;
	args[0] = Float8GetDatum(state->value);
	args[1] = TimestampTzGetDatum(state->ts);
	args[2] = PointerGetDatum(tid);
	args[3] = Float8GetDatum(state->prev);
	nulls[3] = isnan(state->prev) ? 'n' : ' ';
	run_plan(PLAN_UPDATE, args, nulls, false, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		elog(ERROR, "locked rate limit row vanished before its update");
}

/*
 * Delete every shard of one key's state, the state of each inline policy
 * used with the name included; returns how many rows went.
 */
uint64
rl_storage_delete(text *name, text *key)
{
	Datum		args[2] = {PointerGetDatum(name), PointerGetDatum(key)};

	run_plan(PLAN_DELETE_KEY, args, NULL, false, SPI_OK_DELETE);
	return SPI_processed;
}

/*
 * Delete every shard of one key's state under one stored name (an inline
 * policy's, from rl_reset with its config); returns how many rows went.
 */
uint64
rl_storage_delete_stored(text *stored, text *key)
{
	Datum		args[2] = {PointerGetDatum(stored), PointerGetDatum(key)};

	run_plan(PLAN_DELETE_STORED_KEY, args, NULL, false, SPI_OK_DELETE);
	return SPI_processed;
}

/* Delete the state row version the caller locked. */
void
rl_storage_delete_row(ItemPointer tid)
{
	Datum		args[1] = {PointerGetDatum(tid)};

	run_plan(PLAN_DELETE_ROW, args, NULL, false, SPI_OK_DELETE);
	if (SPI_processed != 1)
		elog(ERROR, "locked rate limit row vanished before its delete");
}

/*
 * Start a scan of every state row whose name has a definition, with that
 * definition, and of every row of a limit used with an inline config (its
 * stored name holds the policy), reading a fresh snapshot and locking
 * nothing.  Rows come a
 * batch at a time, so memory stays bounded however large the table.
 */
RlScan *
rl_storage_scan_begin(void)
{
	RlScan	   *scan;

	ensure_spi();
	scan = palloc0(sizeof(RlScan));

	/*
	 * A scan of a large table reads it a batch at a time, and its cost
	 * would have the planner compile it with JIT: seconds of compiling and
	 * the LLVM library in the backend's memory for a cheap join.
	 */
	scan->guc_level = NewGUCNestLevel();
	(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	scan->portal = SPI_cursor_open(NULL, plans[PLAN_SCAN], NULL, NULL, false);
	return scan;
}

/*
 * The next row of a scan; false at the end.  What row points to is in the
 * scan's current batch or in the caller's memory context, and stays valid
 * until the next call.
 */
bool
rl_storage_scan_next(RlScan *scan, RlScanRow *row)
{
	SPITupleTable *t;
	Datum		values[RL_POLICY_NATTS];
	bool		nulls[RL_POLICY_NATTS];
	Datum		d;

	if (scan->next >= scan->nrows)
	{
		MemoryContext caller = CurrentMemoryContext;

		if (scan->batch)
			SPI_freetuptable(scan->batch);
		scan->batch = NULL;
		SPI_cursor_fetch(scan->portal, true, SCAN_BATCH_ROWS);
		scan->batch = SPI_tuptable;
		scan->nrows = SPI_processed;
		scan->next = 0;
		/* the batch is the scan's; run_plan must not free it */
		SPI_tuptable = NULL;
		/* SPI left its own context current; the row belongs to the caller */
		MemoryContextSwitchTo(caller);
		if (scan->nrows == 0)
			return false;
	}
	t = scan->batch;
	table_state(t, scan->next, &row->state);
	if (!table_column(t, scan->next, 3, &d))
		elog(ERROR, "rate limit state row has a NULL name");
	row->name = DatumGetTextPP(d);
	if (!table_column(t, scan->next, 4, &d))
		elog(ERROR, "rate limit state row has a NULL key");
	row->key = DatumGetTextPP(d);
	if (!table_column(t, scan->next, 5, &d))
		elog(ERROR, "rate limit state row has a NULL shard");
	row->shard = DatumGetInt16(d);
	for (int i = 0; i < RL_POLICY_NATTS; i++)
		nulls[i] = !table_column(t, scan->next, SCAN_FIRST_POLICY_COL + i,
								 &values[i]);
	row->key_overridden =
		table_column(t, scan->next, SCAN_FIRST_POLICY_COL + RL_POLICY_NATTS,
					 &d) && DatumGetBool(d);
	/* no definition: a limit used with an inline config */
	row->defined = !nulls[RL_POLICY_KIND];
	if (row->defined)
		rl_policy_from_values(values, nulls, &row->policy);
	scan->next++;
	return true;
}

/* End a scan. */
void
rl_storage_scan_end(RlScan *scan)
{
	if (scan->batch)
		SPI_freetuptable(scan->batch);
	SPI_cursor_close(scan->portal);
	AtEOXact_GUC(true, scan->guc_level);
	pfree(scan);
}

/*
 * The permits a key's leases hold at time now: neither released nor
 * expired.  Read with a fresh snapshot, whatever the isolation level: the
 * caller holds the key's lease lock, so every lease taken before it is
 * committed (or gone) and must be counted.
 */
int64
rl_storage_lease_held(text *name, text *key, TimestampTz now)
{
	Datum		args[3] = {PointerGetDatum(name), PointerGetDatum(key),
	TimestampTzGetDatum(now)};
	Snapshot	latest = RegisterSnapshot(GetLatestSnapshot());
	Datum		held;

	run_plan_snapshot(PLAN_LEASE_HELD, args, NULL, false, latest,
					  SPI_OK_SELECT);
	UnregisterSnapshot(latest);
	if (SPI_processed != 1 || !result_column(0, 1, &held))
		elog(ERROR, "could not count the leases of a concurrency limit");
	return DatumGetInt64(held);
}

/* Store a new lease; returns its id (a uuid). */
Datum
rl_storage_lease_insert(text *name, text *key, int32 permits,
						TimestampTz now, TimestampTz expires)
{
	Datum		args[5] = {PointerGetDatum(name), PointerGetDatum(key),
		Int32GetDatum(permits), TimestampTzGetDatum(now),
	TimestampTzGetDatum(expires)};
	Datum		id;
	void	   *copy;

	run_plan(PLAN_LEASE_INSERT, args, NULL, false, SPI_OK_INSERT_RETURNING);
	if (SPI_processed != 1 || !result_column(0, 1, &id))
		elog(ERROR, "could not store a lease");
	/* a uuid is 16 bytes by reference: copy it out of SPI's memory */
	copy = SPI_palloc(UUID_LEN);
	memcpy(copy, DatumGetPointer(id), UUID_LEN);
	return PointerGetDatum(copy);
}

/*
 * Release a lease at time now: RL_LEASE_RELEASED when it was held,
 * RL_LEASE_NOT_HELD when already released or expired (nothing changes),
 * RL_LEASE_UNKNOWN when no such lease is stored.
 */
RlLeaseStatus
rl_storage_lease_release(Datum id, TimestampTz now)
{
	Datum		args[2] = {id, TimestampTzGetDatum(now)};
	Datum		held;
	Snapshot	latest = RegisterSnapshot(GetLatestSnapshot());
	RlLeaseStatus status = RL_LEASE_RELEASED;

	/*
	 * With a fresh snapshot, as rl_lease counts: under REPEATABLE READ a
	 * lease committed after the transaction began is still found.
	 */
	run_plan_snapshot(PLAN_LEASE_LOOKUP, args, NULL, false, latest,
					  SPI_OK_SELECT);
	if (SPI_processed == 0)
		status = RL_LEASE_UNKNOWN;
	else if (!result_column(0, 1, &held) || !DatumGetBool(held))
		status = RL_LEASE_NOT_HELD;
	else
	{
		run_plan_snapshot(PLAN_LEASE_RELEASE, args, NULL, false, latest,
						  SPI_OK_UPDATE);
		if (SPI_processed != 1)
			elog(ERROR, "locked lease vanished before its release");
	}
	UnregisterSnapshot(latest);
	return status;
}

/*
 * Delete the leases of a name that hold nothing at time now, released or
 * expired (rl_undefine); held ones stay, to count against a later
 * definition of the name.
 */
void
rl_storage_lease_delete_name(text *name, TimestampTz now)
{
	Datum		args[2] = {PointerGetDatum(name), TimestampTzGetDatum(now)};

	run_plan(PLAN_LEASE_DELETE_NAME, args, NULL, false, SPI_OK_DELETE);
}

/*
 * Delete up to max_rows leases whose ttl has passed at time now, released
 * or not, skipping any another transaction has locked; returns how many.
 * Nothing when the schema has no rl_leases (a database still at 1.1).
 */
uint64
rl_storage_lease_gc(TimestampTz now, uint64 max_rows)
{
	Datum		args[2] = {TimestampTzGetDatum(now), Int64GetDatum((int64) max_rows)};

	if (!OidIsValid(get_relname_relid("rl_leases", storage_nspid)))
		return 0;
	run_plan(PLAN_LEASE_GC, args, NULL, false, SPI_OK_DELETE);
	return SPI_processed;
}

/*
 * Run a one-off read-only statement of a rare caller (a definition being
 * changed) with a fresh snapshot, on an SPI connection of its own: it may
 * run in a trigger that a storage statement fired, so it leaves the state
 * of rl_storage_begin alone.  The caller has connected SPI.
 */
static void
run_fresh(const char *sql, int nargs, Oid *argtypes, Datum *args)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);
	Snapshot	latest;
	int			rc;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	latest = RegisterSnapshot(GetLatestSnapshot());
	rc = SPI_execute_snapshot(plan, args, NULL, latest, InvalidSnapshot,
							  true, false, 0);
	UnregisterSnapshot(latest);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_snapshot failed for \"%s\": %s",
			 sql, SPI_result_code_string(rc));
}

/*
 * Every memory limit defined in the current schema, read with a fresh
 * snapshot: a List of RlDefinitionRow (name and whole policy) in the
 * caller's memory; NIL where rl_definitions has no storage (before 1.3).
 */
List *
rl_storage_memory_definitions(void)
{
	StringInfoData sql;
	List	   *rows = NIL;
	MemoryContext caller = CurrentMemoryContext;

	ensure_spi();
	if (!plans_storage)
		return NIL;
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT name, kind, rate, period, capacity, max_reserved,"
					 " shards, start, storage, time_zone, shadow, block_for,"
					 " block_factor, block_max, block_horizon,"
					 " ipv4_prefix::pg_catalog.int4, ipv6_prefix::pg_catalog.int4, max_debt, "
					 "EXISTS (SELECT FROM ONLY %s.rl_overrides o"
					 " WHERE o.name" EQ "d.name)"
					 " FROM ONLY %s.rl_definitions d"
					 " WHERE storage" EQ "'memory'",
					 quote_identifier(plans_nspname),
					 quote_identifier(plans_nspname));
	run_fresh(sql.data, 0, NULL, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[RL_DEFINITION_NATTS];
		bool		nulls[RL_DEFINITION_NATTS];
		Datum		name;
		MemoryContext spi;
		RlDefinitionRow *row;

		if (!result_column(i, 1, &name))
			continue;
		for (int c = 0; c < RL_DEFINITION_NATTS; c++)
			nulls[c] = !result_column(i, c + 2, &values[c]);
		spi = MemoryContextSwitchTo(caller);
		row = palloc(sizeof(RlDefinitionRow));
		row->name = DatumGetTextPCopy(name);
		rl_policy_from_values(values, nulls, &row->policy);
		/* with its escalation: an entry whose offences live is not idle */
		rl_definition_options_from_values(values, nulls, &row->policy);
		row->policy.overrides =
			result_column(i, RL_DEFINITION_NATTS + 2, &values[0]) &&
			DatumGetBool(values[0]);
		rows = lappend(rows, row);
		MemoryContextSwitchTo(spi);
	}
	return rows;
}

/*
 * The permits that the leases of a name hold at time now, over all its
 * keys, read with a fresh snapshot; 0 where schema nspid has no rl_leases
 * (a database still at 1.1).
 */
int64
rl_storage_name_leases_held(Oid nspid, text *name, TimestampTz now)
{
	Oid			argtypes[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		args[2] = {PointerGetDatum(name), TimestampTzGetDatum(now)};
	StringInfoData sql;
	Datum		held;
	bool		isnull;
	int64		result;

	if (!OidIsValid(get_relname_relid("rl_leases", nspid)))
		return 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT COALESCE(pg_catalog.sum(permits), 0)::pg_catalog.int8"
					 " FROM ONLY %s.rl_leases WHERE name" EQ "$1"
					 " AND released IS NULL AND expires OPERATOR(pg_catalog.>) $2",
					 quote_identifier(get_namespace_name(nspid)));
	run_fresh(sql.data, 2, argtypes, args);
	held = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
						 &isnull);
	result = isnull ? 0 : DatumGetInt64(held);
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
	return result;
}

/*
 * Every concurrency limit defined in rel (rl_definitions), read with a
 * fresh snapshot: a List of RlDefinitionRow in the caller's memory.
 */
List *
rl_storage_concurrency_definitions(Relation rel)
{
	StringInfoData sql;
	List	   *rows = NIL;
	MemoryContext caller = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT name, kind, capacity, max_reserved FROM ONLY %s.%s"
					 " WHERE kind" EQ "ANY ('{concurrency,concurrency lease}'::pg_catalog.text[])",
					 quote_identifier(get_namespace_name(RelationGetNamespace(rel))),
					 quote_identifier(RelationGetRelationName(rel)));
	run_fresh(sql.data, 0, NULL, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext spi = MemoryContextSwitchTo(caller);
		RlDefinitionRow *row = palloc(sizeof(RlDefinitionRow));
		bool		isnull;
		Datum		d;

		row->name = DatumGetTextPCopy(SPI_getbinval(tuple, desc, 1, &isnull));
		if (!rl_kind_parse(TextDatumGetCString(SPI_getbinval(tuple, desc, 2,
															 &isnull)),
						   &row->policy.kind))
			elog(ERROR, "unknown kind in a concurrency definition");
		row->policy.capacity = DatumGetFloat8(SPI_getbinval(tuple, desc, 3,
															&isnull));
		d = SPI_getbinval(tuple, desc, 4, &isnull);
		row->policy.has_max_reserved = !isnull;
		row->policy.max_reserved = isnull ? 0 : DatumGetFloat8(d);
		rows = lappend(rows, row);
		MemoryContextSwitchTo(spi);
	}
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
	return rows;
}
