/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  The direct path to a state row: found through the primary key,
 *	  locked and updated the way PostgreSQL's catalog code does it, with no
 *	  SQL statement in between.
 *
 * Semantics are those of the SQL path in storage.c, step by step:
 *
 * - Like each SPI statement, a lookup first makes the calling
 *   transaction's earlier changes visible (CommandCounterIncrement) and
 *   then reads with the transaction snapshot: a fresh one per call under
 *   READ COMMITTED, the transaction's under REPEATABLE READ and
 *   SERIALIZABLE.  The index scan and heap fetch take the same predicate
 *   locks a SELECT takes.
 * - The lock is SELECT ... FOR UPDATE's: table_tuple_lock in
 *   LockTupleExclusive mode, waiting or skipping.  Under READ COMMITTED it
 *   follows the update chain and locks the newest version (a row's key
 *   never changes, so that version still matches); under the snapshot
 *   isolation levels a row changed or deleted since the snapshot is
 *   SQLSTATE 40001, exactly as nodeLockRows.c raises it.  A row deleted
 *   under READ COMMITTED is reported missing, as FOR UPDATE returns no row.
 * - The update is simple_heap_update (WAL, HOT, serializable conflict
 *   checks and statistics included) followed, when the new version is not
 *   heap-only, by index entries for every index of the table (from 16 on,
 *   for a heap-only one, entries for its summarizing indexes).
 *
 * The path serves only the table the install script creates: a heap with
 * its primary key and no triggers.  Anything else (another table access
 * method, a trigger someone added), or ratelimit.direct_access = off,
 * leaves every call to the SQL path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_collation_d.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "direct.h"

/* Attribute numbers of rate_limits (name, key, shard, value, ts). */
#define ATT_VALUE	4
#define ATT_TS		5
#define NATTS		5

static bool direct_access = true;

/* Define ratelimit.direct_access; called from _PG_init. */
void
rl_direct_init(void)
{
	DefineCustomBoolVariable("ratelimit.direct_access",
							 "Finds, locks and updates state rows without SQL statements.",
							 "Off sends every call through SQL statements (SPI); answers are the same.",
							 &direct_access,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
}

/* The primary key of a table the direct path can serve, or InvalidOid. */
static Oid
usable_primary_key(Relation rel)
{
	if (!direct_access ||
		rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relam != HEAP_TABLE_AM_OID ||
		rel->trigdesc != NULL ||
		RelationGetDescr(rel)->natts != NATTS)
		return InvalidOid;
	return compat_primary_key_index(rel);
}

/* The two numbers of the row in slot. */
static void
slot_state(TupleTableSlot *slot, RlState *state, bool *complete)
{
	bool		null_value;
	bool		null_ts;
	Datum		value = slot_getattr(slot, ATT_VALUE, &null_value);
	Datum		ts = slot_getattr(slot, ATT_TS, &null_ts);

	*complete = !null_value && !null_ts;
	state->value = null_value ? 0 : DatumGetFloat8(value);
	state->ts = null_ts ? 0 : DatumGetTimestampTz(ts);
}

static void
serialization_failure(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update")));
}

/*
 * Find the row (name, key, shard) of table relid and lock it FOR UPDATE,
 * waiting for another holder when wait, else skipping.  LOCKED fills
 * state and tid; BUSY fills state with the version the snapshot sees.
 * complete is false when the row holds a NULL (the caller refuses it).
 */
RlDirectStatus
rl_direct_lock(Oid relid, text *name, text *key, int16 shard, bool wait,
			   RlState *state, bool *complete, ItemPointer tid)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	Oid			pk = usable_primary_key(rel);
	Relation	index;
	Snapshot	snapshot;
	ScanKeyData keys[3];
	IndexScanDesc scan;
	TupleTableSlot *slot;
	ItemPointerData found_tid;
	TM_FailureData tmfd;
	TM_Result	result;
	RlDirectStatus status;

	if (!OidIsValid(pk))
	{
		table_close(rel, NoLock);
		return RL_DIRECT_UNSUPPORTED;
	}

	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	index = index_open(pk, RowExclusiveLock);

	ScanKeyEntryInitialize(&keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
						   C_COLLATION_OID, F_TEXTEQ, PointerGetDatum(name));
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   C_COLLATION_OID, F_TEXTEQ, PointerGetDatum(key));
	ScanKeyEntryInitialize(&keys[2], 0, 3, BTEqualStrategyNumber, InvalidOid,
						   InvalidOid, F_INT2EQ, Int16GetDatum(shard));

	slot = table_slot_create(rel, NULL);
	scan = compat_index_beginscan(rel, index, snapshot, 3);
	index_rescan(scan, keys, 3, NULL, 0);
	if (!index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		index_endscan(scan);
		status = RL_DIRECT_MISSING;
		goto done;
	}
	index_endscan(scan);

	/* what the snapshot sees: the answer for a row left busy */
	slot_state(slot, state, complete);
	found_tid = slot->tts_tid;
	result = table_tuple_lock(rel, &found_tid, snapshot, slot,
							  GetCurrentCommandId(true), LockTupleExclusive,
							  wait ? LockWaitBlock : LockWaitSkip,
							  IsolationUsesXactSnapshot() ? 0 :
							  TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
							  &tmfd);
	switch (result)
	{
		case TM_Ok:
			slot_state(slot, state, complete);
			*tid = slot->tts_tid;
			status = RL_DIRECT_LOCKED;
			break;
		case TM_WouldBlock:
			status = RL_DIRECT_BUSY;
			break;
		case TM_Updated:
			/* only without FIND_LAST_VERSION: a snapshot isolation level */
			serialization_failure();
			pg_unreachable();
		case TM_Deleted:
			if (IsolationUsesXactSnapshot())
				serialization_failure();
			status = RL_DIRECT_MISSING;
			break;
		default:
			elog(ERROR, "unexpected table_tuple_lock status %u on a rate limit row",
				 (unsigned) result);
			pg_unreachable();
	}

done:
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	return status;
}

/* Index entries for a new row version: all, or the summarizing ones. */
static void
insert_index_entries(Relation rel, HeapTuple tuple, bool only_summarizing)
{
	EState	   *estate = CreateExecutorState();
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	TupleTableSlot *slot;

	InitResultRelInfo(rri, rel, 0, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
	ExecStoreHeapTuple(tuple, slot, false);
	list_free(compat_insert_update_index_tuples(rri, slot, estate,
												 only_summarizing));
	ExecDropSingleTupleTableSlot(slot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
}

/*
 * Write state into the row version locked at tid; false, writing nothing,
 * when the direct path cannot serve the table.
 */
bool
rl_direct_update(Oid relid, ItemPointer tid, const RlState *state)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	HeapTupleData old;
	HeapTuple	new;
	Buffer		buffer;
	Datum		values[NATTS] = {0};
	bool		nulls[NATTS] = {false};
	bool		replace[NATTS] = {false};

	if (!OidIsValid(usable_primary_key(rel)))
	{
		table_close(rel, NoLock);
		return false;
	}
	old.t_self = *tid;
	if (!heap_fetch(rel, SnapshotAny, &old, &buffer, false))
		elog(ERROR, "locked rate limit row vanished before its update");
	values[ATT_VALUE - 1] = Float8GetDatum(state->value);
	values[ATT_TS - 1] = TimestampTzGetDatum(state->ts);
	replace[ATT_VALUE - 1] = replace[ATT_TS - 1] = true;
	new = heap_modify_tuple(&old, RelationGetDescr(rel), values, nulls, replace);
	ReleaseBuffer(buffer);

	switch (compat_simple_heap_update(rel, tid, new))
	{
		case COMPAT_INDEXES_NONE:
			break;
		case COMPAT_INDEXES_ALL:
			insert_index_entries(rel, new, false);
			break;
		case COMPAT_INDEXES_SUMMARIZING:
			insert_index_entries(rel, new, true);
			break;
	}
	heap_freetuple(new);
	table_close(rel, NoLock);
	return true;
}
