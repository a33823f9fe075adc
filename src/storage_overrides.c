/*-------------------------------------------------------------------------
 *
 * storage_overrides.c
 *	  Reading and writing rl_overrides and rl_plans, a key's own policy
 *	  (plans.c), and rl_moves, what a key's last move left to remember,
 *	  through SPI.
 *
 * Rare statements: a key's override is read at a miss of the per-backend
 * cache (definitions.c), and the tables are written by rl_override,
 * rl_plan, rl_assign and their inverses.  So each is planned when it runs,
 * in the schema of the run rl_storage_begin started, spelling that schema
 * and its operators as storage.c does.  Overrides are read like
 * definitions, with a fresh snapshot.
 *
 * A row of rl_overrides carries a key's own rate, period, capacity and
 * max_reserved, or names a plan of rl_plans whose numbers the key takes
 * (rl_overrides_own_or_plan: one or the other).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "calendar.h"
#include "policy.h"
#include "storage.h"

#define EQ " OPERATOR(pg_catalog.=) "

/*
 * Run one statement on rl_overrides or rl_plans (each %s: the schema),
 * with text parameters unless types says otherwise (rl_storage_run_once).
 */
static uint64
run_overrides(const char *fmt, int nargs, Oid *types, Datum *args,
			  const char *nulls, bool fresh, int expected)
{
	Oid			text_types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};

	return rl_storage_run_once(rl_storage_overrides_relid(), fmt, nargs,
							   types ? types : text_types, args, nulls, fresh,
							   expected);
}

/*
 * Lock a name's definition row until the transaction ends: the changes of
 * its keys' plans and overrides then happen one at a time, while calls,
 * which read the row without a lock, are not held up.
 */
static void
lock_definition(text *name)
{
	Datum		args[1] = {PointerGetDatum(name)};

	run_overrides("SELECT FROM ONLY %s.rl_definitions WHERE name" EQ "$1"
				  " FOR NO KEY UPDATE", 1, NULL, args, NULL, false,
				  SPI_OK_SELECT);
}

/* Column col of the first row of the last result; false for NULL. */
static bool
column(int col, Datum *value)
{
	bool		isnull;

	*value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col,
						   &isnull);
	return !isnull;
}

/*
 * The override of (name, key), its own numbers or its plan's, read like a
 * definition with a fresh snapshot: its rate, period, capacity and
 * max_reserved into policy (the definition's, whose other fields stay);
 * false when the key has none.  Only for a name whose definition says it
 * has overrides (so, 1.3 on).
 */
bool
rl_storage_get_override(text *name, text *key, RlPolicy *policy)
{
	Datum		args[2] = {PointerGetDatum(name), PointerGetDatum(key)};
	Datum		d;

	if (run_overrides("SELECT COALESCE(o.rate, p.rate), COALESCE(o.period, p.period),"
					  " COALESCE(o.capacity, p.capacity),"
					  " COALESCE(o.max_reserved, p.max_reserved),"
					  " COALESCE(o.time_zone, p.time_zone)"
					  " FROM ONLY %s.rl_overrides o LEFT JOIN ONLY %s.rl_plans p"
					  " ON p.name" EQ "o.name AND p.plan" EQ "o.plan"
					  " WHERE o.name" EQ "$1 AND o.key" EQ "$2",
					  2, NULL, args, NULL, true, SPI_OK_SELECT) == 0)
		return false;
	if (!column(1, &d))
		elog(ERROR, "rate limit override has a NULL rate");
	policy->rate = DatumGetFloat8(d);
	/* a NULL period is the definition's (a calendar limit's, always) */
	if (column(2, &d))
	{
		policy->period = rl_period_usecs(DatumGetIntervalP(d));
		if (policy->calendar.unit != RL_CALENDAR_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("an override of a calendar limit cannot have a period"),
					 errdetail("The override of key \"%s\" of rate limit \"%s\" has one.",
							   text_to_cstring(key), text_to_cstring(name))));
	}
	if (!column(3, &d))
		elog(ERROR, "rate limit override has a NULL capacity");
	policy->capacity = DatumGetFloat8(d);
	policy->has_max_reserved = column(4, &d);
	policy->max_reserved = policy->has_max_reserved ? DatumGetFloat8(d) : 0;
	/* a zone of its own (a customer's midnight): a calendar limit's only */
	if (column(5, &d))
	{
		if (policy->calendar.unit == RL_CALENDAR_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a key of a limit without a time_zone cannot have one"),
					 errdetail("Key \"%s\" of rate limit \"%s\" has one of its own or of its plan.",
							   text_to_cstring(key), text_to_cstring(name))));
		rl_calendar_init(&policy->calendar, policy->calendar.unit,
						 TextDatumGetCString(d));
	}
	return true;
}

/*
 * Create or replace an override (name, key, four numbers and a time zone,
 * checked), or with plan a plan (name, plan, the numbers and the zone).
 * An override replaces the key's assignment to a plan.
 */
void
rl_storage_put_override(Datum *values, bool *nulls, bool plan)
{
	Oid			types[7] = {TEXTOID, TEXTOID, FLOAT8OID, INTERVALOID, FLOAT8OID,
	FLOAT8OID, TEXTOID};
	char		argnulls[7];

	for (int i = 0; i < 7; i++)
		argnulls[i] = nulls[i] ? 'n' : ' ';
	run_overrides(plan ?
				  "INSERT INTO %s.rl_plans AS p"
				  " (name, plan, rate, period, capacity, max_reserved, time_zone)"
				  " VALUES ($1, $2, $3, $4, $5, $6, $7)"
				  " ON CONFLICT (name, plan) DO UPDATE SET rate = excluded.rate,"
				  " period = excluded.period, capacity = excluded.capacity,"
				  " max_reserved = excluded.max_reserved,"
				  " time_zone = excluded.time_zone" :
				  "INSERT INTO %s.rl_overrides AS o"
				  " (name, key, rate, period, capacity, max_reserved, time_zone)"
				  " VALUES ($1, $2, $3, $4, $5, $6, $7)"
				  " ON CONFLICT (name, key) DO UPDATE SET rate = excluded.rate,"
				  " period = excluded.period, capacity = excluded.capacity,"
				  " max_reserved = excluded.max_reserved, plan = excluded.plan,"
				  " time_zone = excluded.time_zone",
				  7, types, values, argnulls, false, SPI_OK_INSERT);
}

/*
 * Before a plan's time zone becomes zone (NULL: the definition's): how
 * many keys that change would move to other windows, those assigned to
 * the plan with no zone of their own, when the plan exists and its zone
 * differs; 0 otherwise.  The definition's row is locked first, as for a
 * key's move (rl_storage_lock_assignments), so no key is assigned to the
 * plan meanwhile, and the keys are counted with a fresh snapshot, so an
 * assignment committed since a repeatable read transaction began counts.
 */
int64
rl_storage_plan_zone_movers(text *name, text *plan, text *zone)
{
	Datum		args[3] = {PointerGetDatum(name), PointerGetDatum(plan),
	PointerGetDatum(zone)};
	Datum		d;

	lock_definition(name);
	if (run_overrides("SELECT count(o.key) FROM ONLY %s.rl_plans p"
					  " JOIN ONLY %s.rl_definitions d ON d.name" EQ "p.name"
					  " LEFT JOIN ONLY %s.rl_overrides o ON o.name" EQ "p.name"
					  " AND o.plan" EQ "p.plan AND o.time_zone IS NULL"
					  " WHERE p.name" EQ "$1 AND p.plan" EQ "$2"
					  " AND COALESCE(p.time_zone, d.time_zone) IS DISTINCT FROM"
					  " COALESCE($3, d.time_zone)",
					  3, NULL, args, zone ? NULL : "  n", true,
					  SPI_OK_SELECT) == 0 || !column(1, &d))
		return 0;
	return DatumGetInt64(d);
}

/* Delete an override (not an assignment); false when there was none. */
bool
rl_storage_delete_override(text *name, text *key)
{
	Datum		args[2] = {PointerGetDatum(name), PointerGetDatum(key)};

	return run_overrides("DELETE FROM ONLY %s.rl_overrides WHERE name" EQ "$1"
						 " AND key" EQ "$2 AND plan IS NULL",
						 2, NULL, args, NULL, false, SPI_OK_DELETE) > 0;
}

/*
 * Delete every override, assignment and plan of a name, and the records of
 * its keys' moves (rl_undefine).
 */
void
rl_storage_delete_name_overrides(text *name)
{
	Datum		args[1] = {PointerGetDatum(name)};

	/* the assignments first: they refer to the plans */
	run_overrides("DELETE FROM ONLY %s.rl_overrides WHERE name" EQ "$1",
				  1, NULL, args, NULL, false, SPI_OK_DELETE);
	run_overrides("DELETE FROM ONLY %s.rl_plans WHERE name" EQ "$1",
				  1, NULL, args, NULL, false, SPI_OK_DELETE);
	rl_storage_forget_name_moves(name);
}

/*
 * Delete a plan no key is assigned to: false when there was none;
 * *assigned receives how many keys are (the plan then stays).
 */
bool
rl_storage_delete_plan(text *name, text *plan, int64 *assigned)
{
	Datum		args[2] = {PointerGetDatum(name), PointerGetDatum(plan)};
	Datum		count;

	run_overrides("SELECT pg_catalog.count(*) FROM ONLY %s.rl_overrides"
				  " WHERE name" EQ "$1 AND plan" EQ "$2",
				  2, NULL, args, NULL, false, SPI_OK_SELECT);
	*assigned = column(1, &count) ? DatumGetInt64(count) : 0;
	if (*assigned > 0)
		return true;
	return run_overrides("DELETE FROM ONLY %s.rl_plans WHERE name" EQ "$1"
						 " AND plan" EQ "$2",
						 2, NULL, args, NULL, false, SPI_OK_DELETE) > 0;
}

/*
 * Lock a name's definition row until the transaction ends, so that the
 * assignments of its keys change one at a time (rl_assign reads the policy
 * it replaces); calls read the row without a lock, and are not held up.
 * Then what policy key has, read with a fresh snapshot (the lock may have
 * waited for a change committed since the transaction's snapshot).
 */
RlKeyPolicy
rl_storage_lock_assignments(text *name, text *key)
{
	Datum		args[2] = {PointerGetDatum(name), PointerGetDatum(key)};
	Datum		d;

	lock_definition(name);
	if (run_overrides("SELECT plan IS NOT NULL FROM ONLY %s.rl_overrides"
					  " WHERE name" EQ "$1 AND key" EQ "$2",
					  2, NULL, args, NULL, true, SPI_OK_SELECT) == 0)
		return RL_KEY_DEFINITION;
	(void) column(1, &d);
	return DatumGetBool(d) ? RL_KEY_PLAN : RL_KEY_OVERRIDE;
}

/*
 * Assign a key to a plan, with a time zone of its own or none (NULL),
 * replacing its plan or override (false when there is no such plan), or
 * with plan NULL take it off its plan.
 */
bool
rl_storage_assign(text *name, text *key, text *plan, text *zone)
{
	Datum		args[4] = {PointerGetDatum(name), PointerGetDatum(key),
	PointerGetDatum(plan), PointerGetDatum(zone)};

	if (plan == NULL)
		return run_overrides("DELETE FROM ONLY %s.rl_overrides"
							 " WHERE name" EQ "$1 AND key" EQ "$2"
							 " AND plan IS NOT NULL",
							 2, NULL, args, NULL, false, SPI_OK_DELETE) > 0;
	/* the plan must exist; the foreign key keeps it while assigned */
	return run_overrides("INSERT INTO %s.rl_overrides AS o"
						 " (name, key, plan, time_zone)"
						 " SELECT p.name, $2, p.plan, $4 FROM ONLY %s.rl_plans p"
						 " WHERE p.name" EQ "$1 AND p.plan" EQ "$3"
						 " ON CONFLICT (name, key) DO UPDATE SET rate = NULL,"
						 " period = NULL, capacity = NULL, max_reserved = NULL,"
						 " plan = excluded.plan, time_zone = excluded.time_zone",
						 4, NULL, args, zone ? NULL : "   n", false,
						 SPI_OK_INSERT) > 0;
}

/*
 * The record of (name, key)'s last move (rl_moves) into *move: false when
 * it has none.  Read with a fresh snapshot, under the definition's row
 * lock that every move takes first (rl_storage_lock_assignments), so the
 * last move committed is the one read, at any isolation level.
 */
bool
rl_storage_get_move(text *name, text *key, RlMove *move)
{
	Datum		args[2] = {PointerGetDatum(name), PointerGetDatum(key)};
	Datum		d;
	FullTransactionId top;

	if (run_overrides("SELECT moved_at, covered_until, covered_per_us, debt,"
					  " refill_at, near_until, near_per_us, moved_xact"
					  " FROM ONLY %s.rl_moves"
					  " WHERE name" EQ "$1 AND key" EQ "$2",
					  2, NULL, args, NULL, true, SPI_OK_SELECT) == 0)
		return false;
	(void) column(1, &d);
	move->moved_at = DatumGetTimestampTz(d);
	(void) column(2, &d);
	move->covered_until = DatumGetTimestampTz(d);
	(void) column(3, &d);
	move->covered_per_us = DatumGetFloat8(d);
	(void) column(4, &d);
	move->debt = DatumGetFloat8(d);
	move->has_refill_at = column(5, &d);
	move->refill_at = move->has_refill_at ? DatumGetTimestampTz(d) : 0;
	move->has_near = column(6, &d);
	move->near_until = move->has_near ? DatumGetTimestampTz(d) : 0;
	move->near_per_us = 0;
	if (move->has_near && column(7, &d))
		move->near_per_us = DatumGetFloat8(d);
	top = GetTopFullTransactionIdIfAny();
	move->this_xact = column(8, &d) && FullTransactionIdIsValid(top) &&
		FullTransactionIdEquals(DatumGetFullTransactionId(d), top);
	return true;
}

/* Write the record of (name, key)'s last move, replacing the one before. */
void
rl_storage_put_move(text *name, text *key, const RlMove *move)
{
	Oid			types[10] = {TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID,
		FLOAT8OID, FLOAT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, FLOAT8OID,
	XID8OID};
	Datum		args[10] = {PointerGetDatum(name), PointerGetDatum(key),
		TimestampTzGetDatum(move->moved_at),
		TimestampTzGetDatum(move->covered_until),
		Float8GetDatum(move->covered_per_us), Float8GetDatum(move->debt),
		TimestampTzGetDatum(move->refill_at),
		TimestampTzGetDatum(move->near_until),
		Float8GetDatum(move->near_per_us),
	FullTransactionIdGetDatum(GetTopFullTransactionId())};
	char		nulls[11] = "          ";

	if (!move->has_refill_at)
		nulls[6] = 'n';
	if (!move->has_near)
		nulls[7] = nulls[8] = 'n';
	run_overrides("INSERT INTO %s.rl_moves AS m"
				  " (name, key, moved_at, covered_until, covered_per_us, debt,"
				  " refill_at, near_until, near_per_us, moved_xact)"
				  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
				  " ON CONFLICT (name, key) DO UPDATE SET"
				  " moved_at = excluded.moved_at,"
				  " covered_until = excluded.covered_until,"
				  " covered_per_us = excluded.covered_per_us,"
				  " debt = excluded.debt, refill_at = excluded.refill_at,"
				  " near_until = excluded.near_until,"
				  " near_per_us = excluded.near_per_us,"
				  " moved_xact = excluded.moved_xact",
				  10, types, args, nulls, false, SPI_OK_INSERT);
}

/* Whether this schema has rl_moves (not a database still at 1.2). */
static bool
has_moves(void)
{
	return OidIsValid(get_relname_relid("rl_moves",
										get_rel_namespace(rl_storage_overrides_relid())));
}

/*
 * Forget the record of (name, key)'s last move (rl_reset: a fresh key owes
 * nothing for refills it had before).  Nothing where the schema has no
 * rl_moves (a database still at 1.2).
 */
void
rl_storage_forget_move(text *name, text *key)
{
	Datum		args[2] = {PointerGetDatum(name), PointerGetDatum(key)};

	if (!has_moves())
		return;
	run_overrides("DELETE FROM ONLY %s.rl_moves WHERE name" EQ "$1"
				  " AND key" EQ "$2",
				  2, NULL, args, NULL, false, SPI_OK_DELETE);
}

/*
 * Forget the records of the moves of a name's keys (its limit now keeps
 * its state in another store: its keys start afresh).
 */
void
rl_storage_forget_name_moves(text *name)
{
	Datum		args[1] = {PointerGetDatum(name)};

	if (!has_moves())
		return;
	run_overrides("DELETE FROM ONLY %s.rl_moves WHERE name" EQ "$1",
				  1, NULL, args, NULL, false, SPI_OK_DELETE);
}

/*
 * Forget the records of the moves of every memory limit's keys
 * (rl_memory_forget dropped their state).
 */
void
rl_storage_forget_memory_moves(void)
{
	if (!has_moves())
		return;
	run_overrides("DELETE FROM ONLY %s.rl_moves m USING ONLY %s.rl_definitions d"
				  " WHERE d.name" EQ "m.name AND d.storage" EQ "'memory'",
				  0, NULL, NULL, NULL, false, SPI_OK_DELETE);
}

/*
 * Delete up to max_rows records of moves whose covered_until has passed
 * (rl_gc); returns how many went.
 */
uint64
rl_storage_move_gc(TimestampTz now, uint64 max_rows)
{
	Oid			types[2] = {TIMESTAMPTZOID, INT8OID};
	Datum		args[2] = {TimestampTzGetDatum(now), Int64GetDatum((int64) max_rows)};

	if (!has_moves())
		return 0;
	return run_overrides("DELETE FROM ONLY %s.rl_moves WHERE (name, key) IN ("
						 "SELECT name, key FROM ONLY %s.rl_moves"
						 " WHERE covered_until OPERATOR(pg_catalog.<=) $1"
						 " LIMIT $2 FOR UPDATE SKIP LOCKED)",
						 2, types, args, NULL, false, SPI_OK_DELETE);
}
