/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  The direct path to a state row: found through the primary key, read,
 *	  updated, locked or inserted the way PostgreSQL's executor does it,
 *	  with no SQL statement in between.
 *
 * A consuming call usually touches its row once (rl_direct_consume):
 * read without a lock, decided, and either left alone (a refusal) or
 * written by one heap_update, which is the lock, as UPDATE's is.  Only a
 * row another transaction holds or changed goes through rl_direct_lock
 * and rl_direct_update.  A key with no row is inserted by speculative
 * insertion (rl_direct_insert), as INSERT ... ON CONFLICT DO NOTHING.
 *
 * Semantics are those of the SQL path in storage.c, step by step:
 *
 * - Like each SPI statement, a lookup first makes the calling
 *   transaction's earlier changes visible (CommandCounterIncrement) and
 *   then reads with the transaction snapshot: a fresh one per call under
 *   READ COMMITTED, the transaction's under REPEATABLE READ and
 *   SERIALIZABLE.  The index scan and heap fetch take the same predicate
 *   locks a SELECT takes.  Outside SERIALIZABLE, the lookup starts where
 *   this backend last saw the row (a row hint, see find_by_hint), which
 *   finds the same version without visiting every older one.
 * - The lock is SELECT ... FOR NO KEY UPDATE's, the one heap_update takes
 *   for a version whose key columns stay (rl_gc's, before a delete, is
 *   FOR UPDATE's): table_tuple_lock in LockTupleNoKeyExclusive mode
 *   (LockTupleExclusive), waiting or skipping.  Under READ COMMITTED it
 *   follows the update chain and locks the newest version, which must
 *   still be the same name, key and shard (an edit by hand may have
 *   changed them: then, as EvalPlanQual's recheck finds, there is no
 *   row); under the snapshot
 *   isolation levels a row changed or deleted since the snapshot is
 *   SQLSTATE 40001, exactly as nodeLockRows.c raises it.  A row deleted
 *   under READ COMMITTED is reported missing, as FOR UPDATE returns no row.
 * - The update is heap_update (WAL, HOT, serializable conflict checks and
 *   statistics included) followed, when the new version is not
 *   heap-only, by index entries for every index of the table (from 16 on,
 *   for a heap-only one, entries for its summarizing indexes).
 *
 * The path serves only the table the install script creates, as it was
 * created, in a transaction that may write: see open_usable_primary_key for
 * what sends a call to the SQL path instead.  ratelimit.direct_access =
 * off sends every call there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_am_d.h"
#include "catalog/index.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opfamily_d.h"
#include "catalog/pg_collation_d.h"
#include "catalog/pg_type_d.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "direct.h"
#include "names.h"
#include "stats.h"

/*
 * Attribute numbers of rate_limits (name, key, shard, value, ts, prev).
 * prev is new in 1.3: a table without it (before the upgrade) is served
 * too, every row read with no prev and written without one.  A row
 * written before the column was added has one attribute less than the
 * descriptor, and reads as NULL there, as it does in SQL.
 */
#define ATT_VALUE	4
#define ATT_TS		5
#define ATT_PREV	6
#define NATTS		6

/* Whether the table of desc has the column prev. */
#define HAS_PREV(desc)	((desc)->natts >= ATT_PREV)

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

/* The columns the direct path reads and writes, in order: types and collations. */
static const Oid column_types[NATTS] = {TEXTOID, TEXTOID, INT2OID, FLOAT8OID,
TIMESTAMPTZOID, FLOAT8OID};
static const Oid column_collations[NATTS] = {C_COLLATION_OID, C_COLLATION_OID,
InvalidOid, InvalidOid, InvalidOid, InvalidOid};

/* The operator families of the primary key's columns (name, key, shard). */
static const Oid key_opfamilies[3] = {TEXT_BTREE_FAM_OID, TEXT_BTREE_FAM_OID,
INTEGER_BTREE_FAM_OID};

/*
 * Whether an UPDATE of value and ts takes FOR UPDATE's lock rather than FOR
 * NO KEY UPDATE's: when a unique index (one a foreign key could reference)
 * has either among its columns, they are key columns, and heap_update
 * locks a version whose key columns it changes as FOR UPDATE does.  Never
 * so on the table as installed.
 */
static bool
updates_key_columns(Relation rel)
{
	Bitmapset  *keys = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_KEY);
	bool		result;

	result = bms_is_member(ATT_VALUE - FirstLowInvalidHeapAttributeNumber, keys) ||
		bms_is_member(ATT_TS - FirstLowInvalidHeapAttributeNumber, keys) ||
		bms_is_member(ATT_PREV - FirstLowInvalidHeapAttributeNumber, keys);
	bms_free(keys);
	return result;
}

/*
 * The same for table relid, for the SQL path, which must lock a row as its
 * UPDATE will.
 */
bool
rl_direct_update_locks_key(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	bool		result = updates_key_columns(rel);

	table_close(rel, NoLock);
	return result;
}

/*
 * The primary key of the table, opened, when the direct path may serve the
 * table in this transaction; else NULL, and the call runs the SQL
 * statements.
 *
 * The direct path writes what UPDATE ... SET value, ts would write, and
 * nothing else: it serves a table only when the executor would do nothing
 * more for that UPDATE (or for SELECT ... FOR NO KEY UPDATE).  So anything
 * that makes ExecUpdate, CheckValidResultRel or ExecConstraints act sends
 * the call to SQL, which then does it, or raises what it raises:
 * - a transaction that may not write (read only, a hot standby, parallel
 *   mode);
 * - another relation kind or table access method, a partition;
 * - triggers (including foreign keys and deferrable constraints), rules,
 *   row-level security, CHECK constraints, generated columns;
 * - columns other than the five of the install script, of other types or
 *   collations (ALTER TABLE ... ALTER COLUMN TYPE);
 * - a primary key that is not exactly (name, key, shard) with the default
 *   btree operator classes and the C collation, which the scan keys
 *   address by position;
 * - a unique index that makes value or ts a key column, so that UPDATE
 *   would lock FOR UPDATE rather than FOR NO KEY UPDATE, which is what the
 *   one-touch write and rl_direct_lock hold.
 * Inheritance children are ignored on both paths (the SQL statements say
 * ONLY).  NOT NULL constraints hold, since the direct path writes no NULL
 * but in prev, and is not used when prev has one; unique
 * and exclusion constraints on other indexes are checked when index
 * entries are made; publications are checked before the update
 * (CheckCmdReplicaIdentity), as ExecUpdate checks them.
 */
static Relation
open_usable_primary_key(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			pk;
	Relation	index;
	Form_pg_index ix;

	if (!direct_access ||
		XactReadOnly || RecoveryInProgress() || IsInParallelMode() ||
		rel->rd_rel->relkind != RELKIND_RELATION ||
		rel->rd_rel->relam != HEAP_TABLE_AM_OID ||
		rel->rd_rel->relispartition ||
		rel->rd_rel->relrowsecurity ||
		rel->trigdesc != NULL ||
		rel->rd_rules != NULL ||
		(desc->constr != NULL &&
		 (desc->constr->num_check > 0 || desc->constr->has_generated_stored)) ||
		(desc->natts != NATTS && desc->natts != NATTS - 1) ||
		updates_key_columns(rel))
		return NULL;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != column_types[i] ||
			att->attcollation != column_collations[i] ||
			(i == ATT_PREV - 1 && att->attnotnull))
			return NULL;
	}

	pk = compat_primary_key_index(rel);
	if (!OidIsValid(pk))
		return NULL;
	index = index_open(pk, RowExclusiveLock);
	ix = index->rd_index;
	if (index->rd_rel->relam != BTREE_AM_OID ||
		ix->indnatts != 3 || ix->indnkeyatts != 3 ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
	{
		index_close(index, NoLock);
		return NULL;
	}
	for (int i = 0; i < 3; i++)
	{
		if (ix->indkey.values[i] != i + 1 ||
			index->rd_opfamily[i] != key_opfamilies[i] ||
			index->rd_indcollation[i] != column_collations[i])
		{
			index_close(index, NoLock);
			return NULL;
		}
	}
	return index;
}

/* Whether text datum d holds exactly the bytes of t. */
static bool
text_matches(Datum d, text *t)
{
	return rl_text_equal(DatumGetTextPP(d), t);
}

/*
 * Whether the row in slot is the row (name, key, shard).  The version a
 * lock reached by following the update chain may have been changed by
 * hand since: like the executor's recheck of FOR UPDATE (EvalPlanQual), a
 * version that no longer matches is not the row asked for.
 */
static bool
slot_matches(TupleTableSlot *slot, text *name, text *key, int16 shard)
{
	bool		isnull[3];
	Datum		v_name = slot_getattr(slot, 1, &isnull[0]);
	Datum		v_key = slot_getattr(slot, 2, &isnull[1]);
	Datum		v_shard = slot_getattr(slot, 3, &isnull[2]);

	return !isnull[0] && !isnull[1] && !isnull[2] &&
		DatumGetInt16(v_shard) == shard &&
		text_matches(v_name, name) && text_matches(v_key, key);
}

/*
 * Row hints: where this backend last saw the newest version of each row.
 *
 * While a transaction anywhere holds back the xmin horizon (pg_dump's
 * snapshot, a long report, a standby's hot_standby_feedback), no version of
 * an updated row can be removed, and the primary key leads to the oldest of
 * them: an index scan steps through every version the horizon keeps before
 * it reaches the one the snapshot sees, so a call's cost grows with the
 * updates made since the horizon was taken.  An update chain leads the
 * other way, from each version to the next, and the backend that last read
 * or wrote a row knows where that version was.  So a lookup starts there
 * and follows the chain forward (find_by_hint), and scans the index only
 * when that finds nothing.
 *
 * A hint is a guess, never trusted: it is only where to start looking.  The
 * table is keyed by a hash of (name, key, shard), so two rows can share an
 * entry, and the line pointer it names may since have been pruned, reused
 * by another row's version, or truncated away.  What find_by_hint accepts
 * is checked in full (see there).
 *
 * The table holds the hints of one relation file: another state table (in
 * another schema) or a rewritten one (VACUUM FULL, CLUSTER, TRUNCATE, an
 * ALTER TABLE that rewrites) starts it afresh, and so does reaching its
 * bound (ROW_HINTS_MAX rows, at most 512 kB).
 */
typedef struct RowHint
{
	uint64		hash;			/* of (name, key, shard): row_hash */
	ItemPointerData tid;
	char		status;			/* simplehash's */
} RowHint;

#define SH_PREFIX row_hints
#define SH_ELEMENT_TYPE RowHint
#define SH_KEY_TYPE uint64
#define SH_KEY hash
#define SH_HASH_KEY(tb, key) ((uint32) ((key) ^ ((key) >> 32)))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

#define ROW_HINTS_MAX 16384

static row_hints_hash *row_hints = NULL;
static Oid	row_hints_relid = InvalidOid;
static Oid	row_hints_file = InvalidOid;

/* The hash of the row (name, key, shard): the hint table's key. */
static uint64
row_hash(text *name, text *key, int16 shard)
{
	uint64		h;

	h = hash_bytes_extended((const unsigned char *) VARDATA_ANY(name),
							VARSIZE_ANY_EXHDR(name), (uint16) shard);
	return hash_bytes_extended((const unsigned char *) VARDATA_ANY(key),
							   VARSIZE_ANY_EXHDR(key), h);
}

/* Whether the hint table holds rel's hints, as rel's file is now. */
static bool
row_hints_for(Relation rel)
{
	return row_hints != NULL &&
		row_hints_relid == RelationGetRelid(rel) &&
		row_hints_file == rel->rd_rel->relfilenode;
}

/* The hint for the row of rel with hash, if there is one. */
static bool
hint_get(Relation rel, uint64 hash, ItemPointer tid)
{
	RowHint    *hint;

	if (!row_hints_for(rel))
		return false;
	hint = row_hints_lookup(row_hints, hash);
	if (hint == NULL)
		return false;
	*tid = hint->tid;
	return true;
}

/* Remember that the newest version of the row with hash is at tid. */
static void
hint_set(Relation rel, uint64 hash, ItemPointer tid)
{
	RowHint    *hint;
	bool		found;

	if (row_hints == NULL)
		row_hints = row_hints_create(AllocSetContextCreate(TopMemoryContext,
														   "ratelimit row hints",
														   ALLOCSET_DEFAULT_SIZES),
									 1024, NULL);
	if (!row_hints_for(rel) || row_hints->members >= ROW_HINTS_MAX)
	{
		row_hints_reset(row_hints);
		row_hints_relid = RelationGetRelid(rel);
		row_hints_file = rel->rd_rel->relfilenode;
	}
	hint = row_hints_insert(row_hints, hash, &found);
	hint->tid = *tid;
}

/* The numbers of the row in slot; prev NaN for NULL or no column. */
static void
slot_state(TupleTableSlot *slot, RlState *state, bool *complete)
{
	bool		null_value;
	bool		null_ts;
	bool		null_prev = true;
	Datum		value = slot_getattr(slot, ATT_VALUE, &null_value);
	Datum		ts = slot_getattr(slot, ATT_TS, &null_ts);
	Datum		prev = 0;

	if (HAS_PREV(slot->tts_tupleDescriptor))
		prev = slot_getattr(slot, ATT_PREV, &null_prev);
	*complete = !null_value && !null_ts;
	state->value = null_value ? 0 : DatumGetFloat8(value);
	state->ts = null_ts ? 0 : DatumGetTimestampTz(ts);
	state->prev = null_prev ? NAN : DatumGetFloat8(prev);
}

static void
serialization_failure(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update")));
}

/*
 * Lock the row version at tid in mode, as SELECT ... FOR NO KEY UPDATE
 * (LockTupleNoKeyExclusive) or FOR UPDATE (LockTupleExclusive) locks it:
 * under READ COMMITTED the newest version of its update chain.
 */
static TM_Result
lock_version(Relation rel, ItemPointer tid, Snapshot snapshot,
			 TupleTableSlot *slot, LockTupleMode mode, LockWaitPolicy policy,
			 TM_FailureData *tmfd)
{
	return table_tuple_lock(rel, tid, snapshot, slot,
							GetCurrentCommandId(true), mode, policy,
							IsolationUsesXactSnapshot() ? 0 :
							TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
							tmfd);
}

/*
 * A call's look at one row: the table and its primary key, opened once,
 * the snapshot the row was read with, and a slot holding the version
 * found (its pin keeps the page from being pruned under us).
 */
typedef struct DirectRow
{
	Relation	rel;
	Relation	index;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	uint64		hash;			/* of (name, key, shard): row_hash */
} DirectRow;

/*
 * The tuple at tid in buffer, which the caller has pinned and locked, into
 * *tp; false when tid names no stored tuple there: an offset past the
 * page's last line pointer, or a line pointer that is unused, dead or a
 * HOT redirect.  A hint, and every link of an update chain, is checked so
 * before anything is read there.
 */
static bool
hint_tuple(Relation rel, Buffer buffer, ItemPointer tid, HeapTuple tp)
{
	Page		page = BufferGetPage(buffer);
	OffsetNumber offnum = ItemPointerGetOffsetNumberNoCheck(tid);
	ItemId		lp;

	if (offnum < FirstOffsetNumber || offnum > PageGetMaxOffsetNumber(page))
		return false;
	lp = PageGetItemId(page, offnum);
	if (!ItemIdIsNormal(lp))
		return false;
	tp->t_self = *tid;
	tp->t_tableOid = RelationGetRelid(rel);
	tp->t_data = (HeapTupleHeader) PageGetItem(page, lp);
	tp->t_len = ItemIdGetLength(lp);
	return true;
}

/*
 * Follow the update chain from the version at *tid forward, as
 * heap_get_latest_tid does, to the newest version snapshot sees: its TID
 * into *tid, and its page pinned (not locked) into *found; false, nothing
 * pinned, when the snapshot sees none.
 *
 * *tid is this backend's hint, never trusted, and so is every t_ctid the
 * chain leads through: a link can lead past the end of the table (a
 * rolled-back version VACUUM removed and truncated away, while the version
 * pointing at it kept its link because no one had yet marked its updater
 * aborted; a REPEATABLE READ snapshot taken while the updater ran never
 * does), past the page's last line pointer, or to one that is not a
 * stored tuple.  Each ends the walk before anything is read there
 * (heap_get_latest_tid reads a link's block unchecked).  The table cannot
 * shrink under us: truncation takes an AccessExclusiveLock, and the caller
 * holds RowExclusiveLock, so its size is read once.  After the first link
 * the version must have been written by the previous one's updater (its
 * xmin), as there: else the line pointer was freed and reused, and the
 * chain is broken.
 */
static bool
hint_follow(Relation rel, Snapshot snapshot, ItemPointer tid, Buffer *found)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	ItemPointerData ctid = *tid;
	TransactionId prior_xmax = InvalidTransactionId;

	*found = InvalidBuffer;
	for (;;)
	{
		Buffer		buffer;
		HeapTupleData tp;
		ItemPointerData next;
		bool		visible;
		bool		last;

		if (!ItemPointerIsValid(&ctid) ||
			ItemPointerGetBlockNumberNoCheck(&ctid) >= nblocks)
			break;
		buffer = ReadBuffer(rel, ItemPointerGetBlockNumberNoCheck(&ctid));
		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		if (!hint_tuple(rel, buffer, &ctid, &tp) ||
			(TransactionIdIsValid(prior_xmax) &&
			 !TransactionIdEquals(prior_xmax, HeapTupleHeaderGetXmin(tp.t_data))))
		{
			UnlockReleaseBuffer(buffer);
			break;
		}
		visible = HeapTupleSatisfiesVisibility(&tp, snapshot, buffer);
		/* read under the lock: an updater sets them under an exclusive one */
		last = (tp.t_data->t_infomask & HEAP_XMAX_INVALID) ||
			HeapTupleHeaderIsOnlyLocked(tp.t_data) ||
			HeapTupleHeaderIndicatesMovedPartitions(tp.t_data) ||
			ItemPointerEquals(&tp.t_self, &tp.t_data->t_ctid);
		next = tp.t_data->t_ctid;
		prior_xmax = HeapTupleHeaderGetUpdateXid(tp.t_data);
		if (visible)
		{
			/* keep this page's pin, and only this one */
			*tid = ctid;
			if (BufferIsValid(*found))
				ReleaseBuffer(*found);
			*found = buffer;
			LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
		}
		else
			UnlockReleaseBuffer(buffer);
		ctid = next;
		if (last)
			break;
	}
	return BufferIsValid(*found);
}

/*
 * Find the version of the row (name, key, shard) that d's snapshot sees
 * from this backend's hint, into d->slot; false, the slot empty, when the
 * hint cannot say, and the index must.
 *
 * The hint's update chain is followed forward to the newest version the
 * snapshot sees (hint_follow, which checks every link before it reads
 * there).  That version is accepted only if it holds (name, key, shard).
 * The primary key lets an MVCC snapshot see at most one version of a
 * (name, key, shard), so a visible version that holds them is the one the
 * index scan would have returned; anything else (a hint or a link past the
 * end, at a pruned line pointer, at another row's version or into its
 * chain, at a chain that ends in a deleted version or one the snapshot
 * does not see, such as a version newer than a REPEATABLE READ snapshot)
 * goes to the index scan, which is exactly what ran before hints.  The page
 * of the version found is pruned first, if worth it, as an index fetch
 * prunes each page it steps on, so that HOT updates keep finding room when
 * no horizon is held; pruning keeps every version a snapshot sees, and its
 * line pointer, but may move the tuple within the page, so it is read
 * again after.
 *
 * Not under SERIALIZABLE: the index scan takes the predicate locks SSI
 * needs, on the index page as well as on the version it returns, and a
 * lookup from the hint would take only the latter.
 */
static bool
find_by_hint(DirectRow *d, text *name, text *key, int16 shard)
{
	ItemPointerData tid;
	Buffer		buffer;
	HeapTupleData tp;
	bool		found;

	if (IsolationIsSerializable() || !hint_get(d->rel, d->hash, &tid) ||
		!hint_follow(d->rel, d->snapshot, &tid, &buffer))
		return false;

	/* pruned with our only pin on it: no pointer into the page is held */
	compat_heap_page_prune_opt(d->rel, buffer);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	found = hint_tuple(d->rel, buffer, &tid, &tp) &&
		HeapTupleSatisfiesVisibility(&tp, d->snapshot, buffer);
	if (found)
	{
		/* the slot keeps a pointer to its tuple: its own, as heap_fetch's */
		BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) d->slot;

		bslot->base.tupdata = tp;
		ExecStoreBufferHeapTuple(&bslot->base.tupdata, d->slot, buffer);
	}
	UnlockReleaseBuffer(buffer);
	if (found && !slot_matches(d->slot, name, key, shard))
	{
		ExecClearTuple(d->slot);
		found = false;
	}
	return found;
}

/*
 * Open table relid for a call on (name, key, shard) and find the version
 * of the row the transaction snapshot sees, as a SELECT of that row would
 * (CommandCounterIncrement first, like each SPI statement): from this
 * backend's hint when it leads there (find_by_hint), else through the
 * primary key.  Returns false with nothing open when the direct path
 * cannot serve the table; else true, with *found saying whether the row
 * was there.  direct_row_close closes what it opened.
 */
static bool
direct_row_open(DirectRow *d, Oid relid, text *name, text *key, int16 shard,
				bool *found)
{
	ScanKeyData keys[3];
	IndexScanDesc scan;

	d->rel = table_open(relid, RowExclusiveLock);
	d->index = open_usable_primary_key(d->rel);
	if (d->index == NULL)
	{
		table_close(d->rel, NoLock);
		return false;
	}

	CommandCounterIncrement();
	d->snapshot = RegisterSnapshot(GetTransactionSnapshot());

	ScanKeyEntryInitialize(&keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
						   C_COLLATION_OID, F_TEXTEQ, PointerGetDatum(name));
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   C_COLLATION_OID, F_TEXTEQ, PointerGetDatum(key));
	ScanKeyEntryInitialize(&keys[2], 0, 3, BTEqualStrategyNumber, InvalidOid,
						   InvalidOid, F_INT2EQ, Int16GetDatum(shard));

	d->slot = table_slot_create(d->rel, NULL);
	d->hash = row_hash(name, key, shard);
	*found = find_by_hint(d, name, key, shard);
	if (!*found)
	{
		scan = compat_index_beginscan(d->rel, d->index, d->snapshot, 3);
		index_rescan(scan, keys, 3, NULL, 0);
		*found = index_getnext_slot(scan, ForwardScanDirection, d->slot);
		index_endscan(scan);
	}
	if (*found)
		hint_set(d->rel, d->hash, &d->slot->tts_tid);
	return true;
}

static void
direct_row_close(DirectRow *d)
{
	ExecDropSingleTupleTableSlot(d->slot);
	index_close(d->index, NoLock);
	UnregisterSnapshot(d->snapshot);
	table_close(d->rel, NoLock);
}

/*
 * Find the row (name, key, shard) of table relid and lock it, waiting for
 * another holder when wait, else skipping: FOR NO KEY UPDATE, the lock the
 * UPDATE that follows takes (heap_update of a version whose key columns
 * stay as they are), or FOR UPDATE when to_delete.  LOCKED fills state and
 * tid; BUSY fills state with the version the snapshot sees.  complete is
 * false when the row holds a NULL (the caller refuses it).
 */
RlDirectStatus
rl_direct_lock(Oid relid, text *name, text *key, int16 shard, bool wait,
			   bool to_delete, RlState *state, bool *complete,
			   ItemPointer tid)
{
	LockTupleMode mode = to_delete ? LockTupleExclusive :
		LockTupleNoKeyExclusive;
	DirectRow	d;
	bool		found;
	ItemPointerData found_tid;
	TM_FailureData tmfd;
	TM_Result	result;
	RlDirectStatus status;

	if (!direct_row_open(&d, relid, name, key, shard, &found))
		return RL_DIRECT_UNSUPPORTED;
	if (!found)
	{
		direct_row_close(&d);
		return RL_DIRECT_MISSING;
	}

	/* what the snapshot sees: the answer for a row left busy */
	slot_state(d.slot, state, complete);
	found_tid = d.slot->tts_tid;
	if (wait && rl_stats_tracking())
	{
		/* a wait is counted and timed only when there is one */
		result = lock_version(d.rel, &found_tid, d.snapshot, d.slot, mode,
							  LockWaitSkip, &tmfd);
		if (result == TM_WouldBlock)
		{
			rl_stats_lock_wait_start();
			result = lock_version(d.rel, &found_tid, d.snapshot, d.slot, mode,
								  LockWaitBlock, &tmfd);
			rl_stats_lock_wait_end();
		}
	}
	else
		result = lock_version(d.rel, &found_tid, d.snapshot, d.slot, mode,
							  wait ? LockWaitBlock : LockWaitSkip, &tmfd);
	switch (result)
	{
		case TM_Ok:
			if (!slot_matches(d.slot, name, key, shard))
			{
				/* changed by hand while we waited: as FOR UPDATE, no row */
				status = RL_DIRECT_MISSING;
				break;
			}
			slot_state(d.slot, state, complete);
			*tid = d.slot->tts_tid;
			hint_set(d.rel, d.hash, tid);
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

	direct_row_close(&d);
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

/* The hash of the row a version of rel holds (row_hash). */
static uint64
tuple_hash(Relation rel, HeapTuple tuple)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		isnull;

	return row_hash(DatumGetTextPP(heap_getattr(tuple, 1, desc, &isnull)),
					DatumGetTextPP(heap_getattr(tuple, 2, desc, &isnull)),
					DatumGetInt16(heap_getattr(tuple, 3, desc, &isnull)));
}

/*
 * A copy of old with state in place of its numbers; prev NULL for NaN, as
 * the UPDATE writes it.
 */
static HeapTuple
modified_version(Relation rel, HeapTuple old, const RlState *state)
{
	Datum		values[NATTS] = {0};
	bool		nulls[NATTS] = {false};
	bool		replace[NATTS] = {false};

	values[ATT_VALUE - 1] = Float8GetDatum(state->value);
	values[ATT_TS - 1] = TimestampTzGetDatum(state->ts);
	replace[ATT_VALUE - 1] = replace[ATT_TS - 1] = true;
	if (HAS_PREV(RelationGetDescr(rel)))
	{
		nulls[ATT_PREV - 1] = isnan(state->prev);
		values[ATT_PREV - 1] = nulls[ATT_PREV - 1] ? 0 :
			Float8GetDatum(state->prev);
		replace[ATT_PREV - 1] = true;
	}
	return heap_modify_tuple(old, RelationGetDescr(rel), values, nulls, replace);
}

/*
 * The primary key's entry for a new version of the same row, when it is
 * the table's only index, without the uniqueness check: the version keeps
 * the key of the one it replaces, which this transaction holds locked, so
 * no other row can hold that key, and the check (which visits every
 * version of the key an index entry leads to, all the versions a held
 * snapshot keeps) could only find the row's own.  A concurrent insert of
 * the key still waits for this transaction and then conflicts with this
 * entry, as with the checked one.  False when the table has other indexes,
 * which the executor's path serves.
 */
static bool
insert_primary_key_unchecked(Relation rel, HeapTuple new)
{
	List	   *indexes = RelationGetIndexList(rel);
	Oid			pk = compat_primary_key_index(rel);
	Relation	index;
	IndexInfo  *info;
	Datum		values[3];
	bool		isnull[3];

	if (list_length(indexes) != 1 || !OidIsValid(pk) ||
		linitial_oid(indexes) != pk)
	{
		list_free(indexes);
		return false;
	}
	list_free(indexes);
	for (int i = 0; i < 3; i++)
		values[i] = heap_getattr(new, i + 1, RelationGetDescr(rel), &isnull[i]);
	index = index_open(pk, RowExclusiveLock);
	info = BuildIndexInfo(index);
	index_insert(index, values, isnull, &new->t_self, rel, UNIQUE_CHECK_NO,
				 true, info);
	index_close(index, NoLock);
	return true;
}

/* The index entries heap_update said the new version needs. */
static void
index_new_version(Relation rel, HeapTuple new, CompatIndexUpdate indexes)
{
	switch (indexes)
	{
		case COMPAT_INDEXES_NONE:
			break;
		case COMPAT_INDEXES_ALL:
			if (!insert_primary_key_unchecked(rel, new))
				insert_index_entries(rel, new, false);
			break;
		case COMPAT_INDEXES_SUMMARIZING:
			insert_index_entries(rel, new, true);
			break;
	}
}

/*
 * Write state into the row version locked at tid; false, writing nothing,
 * when the direct path cannot serve the table.
 */
bool
rl_direct_update(Oid relid, ItemPointer tid, const RlState *state)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	Relation	index = open_usable_primary_key(rel);
	HeapTupleData old;
	HeapTuple	new;
	Buffer		buffer;

	if (index == NULL)
	{
		table_close(rel, NoLock);
		return false;
	}
	index_close(index, NoLock);
	/* a command of its own, as the SQL path's UPDATE statement */
	CommandCounterIncrement();
	/* an UPDATE of a published table needs a usable replica identity */
	CheckCmdReplicaIdentity(rel, CMD_UPDATE);
	old.t_self = *tid;
	if (!heap_fetch(rel, SnapshotAny, &old, &buffer, false))
		elog(ERROR, "locked rate limit row vanished before its update");
	new = modified_version(rel, &old, state);
	ReleaseBuffer(buffer);

	index_new_version(rel, new, compat_simple_heap_update(rel, tid, new));
	hint_set(rel, tuple_hash(rel, new), &new->t_self);
	heap_freetuple(new);
	table_close(rel, NoLock);
	return true;
}

/*
 * Read the row (name, key, shard) without locking it, as a plain SELECT
 * reads it.  FOUND fills state (complete is false when it holds a NULL).
 */
RlDirectStatus
rl_direct_read(Oid relid, text *name, text *key, int16 shard, RlState *state,
			   bool *complete)
{
	DirectRow	d;
	bool		found;

	if (!direct_row_open(&d, relid, name, key, shard, &found))
		return RL_DIRECT_UNSUPPORTED;
	if (found)
		slot_state(d.slot, state, complete);
	direct_row_close(&d);
	return found ? RL_DIRECT_FOUND : RL_DIRECT_MISSING;
}

/*
 * Whether a member of multixact multi, other than this transaction and
 * still running, holds the row in a mode that conflicts with the no-key
 * update a call makes: anything stronger than FOR KEY SHARE, the update of
 * a multixact that also holds one included (a transaction that locked the
 * row in a subtransaction, or while another held FOR KEY SHARE, and then
 * wrote it).
 */
static bool
multixact_holds(MultiXactId multi, bool lock_only)
{
	MultiXactMember *members;
	int			n = GetMultiXactIdMembers(multi, &members, false, lock_only);
	bool		busy = false;

	for (int i = 0; i < n && !busy; i++)
		busy = members[i].status != MultiXactStatusForKeyShare &&
			!TransactionIdIsCurrentTransactionId(members[i].xid) &&
			TransactionIdIsInProgress(members[i].xid);
	if (n > 0)
		pfree(members);
	return busy;
}

/*
 * Whether another transaction, still running, holds the version in slot in
 * a mode the call's update would wait for: updated it, or locked it more
 * strongly than FOR KEY SHARE, alone or in a multixact.  Only a hint, read
 * under a share lock on the page: heap_update decides, and waits when it
 * must.  It spares a call that would find the row busy the transaction id
 * heap_update assigns before it looks, and the wait heap_update would
 * make: a busy shard is passed over, as FOR NO KEY UPDATE SKIP LOCKED
 * passes over it on the SQL path.
 */
static bool
held_by_another(TupleTableSlot *slot)
{
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;
	HeapTupleHeader tuple = bslot->base.tuple->t_data;
	uint16		infomask;
	TransactionId xmax;

	LockBuffer(bslot->buffer, BUFFER_LOCK_SHARE);
	infomask = tuple->t_infomask;
	xmax = HeapTupleHeaderGetRawXmax(tuple);
	LockBuffer(bslot->buffer, BUFFER_LOCK_UNLOCK);
	if ((infomask & HEAP_XMAX_INVALID) != 0)
		return false;
	if ((infomask & HEAP_XMAX_IS_MULTI) != 0)
		return !HEAP_LOCKED_UPGRADED(infomask) &&
			multixact_holds(xmax, HEAP_XMAX_IS_LOCKED_ONLY(infomask));
	if (!TransactionIdIsNormal(xmax))
		return false;
	if (HEAP_XMAX_IS_LOCKED_ONLY(infomask) &&
		HEAP_XMAX_IS_KEYSHR_LOCKED(infomask))
		return false;
	return !TransactionIdIsCurrentTransactionId(xmax) &&
		TransactionIdIsInProgress(xmax);
}

/*
 * A call on the row (name, key, shard) in one touch, as UPDATE makes one:
 * read the version the snapshot sees, without a lock, and let decide say
 * from its state whether to write and what; then write that with one
 * heap_update.
 *
 * - decide writes nothing (a refusal, decided from committed state and
 *   the transaction's own changes): DONE, having locked nothing, assigned
 *   no transaction id and written no WAL.
 * - The version read is still the newest and nobody holds it: the update
 *   succeeds, exactly as SELECT ... FOR NO KEY UPDATE and then UPDATE
 *   would have written it, since nothing changed in between, and holds
 *   the same lock; DONE.
 * - Another transaction that is still running holds the row: BUSY,
 *   nothing written, and no transaction id assigned.
 * - heap_update found the row changed or deleted since the snapshot:
 *   CONTENDED, nothing written.
 * heap_update is asked to wait, as UPDATE's is: PostgreSQL supports no
 * caller that asks it not to (an assert-enabled server aborts when such a
 * call meets a held row).  It waits only for a holder the hint could not
 * see: one that locked the row after the hint was read.  This
 * transaction's own lock (SELECT ... FOR UPDATE, or a call that locked
 * and refused) it passes, as UPDATE does, so such a call writes at once.
 * After BUSY or CONTENDED the caller decides again under the lock
 * (rl_direct_lock), which waits, raises 40001 under REPEATABLE READ and
 * SERIALIZABLE, or finds the row gone, as FOR UPDATE does; or, for a shard,
 * passes over a busy one.
 * - No row: MISSING, decide not called.
 */
RlDirectStatus
rl_direct_consume(Oid relid, text *name, text *key, int16 shard,
				  RlDirectDecide decide, void *arg)
{
	DirectRow	d;
	bool		found;
	RlState		state;
	RlState		write;
	bool		complete;
	HeapTuple	new;
	ItemPointerData tid;
	TM_FailureData tmfd;
	CompatIndexUpdate indexes;
	TM_Result	result;

	if (!direct_row_open(&d, relid, name, key, shard, &found))
		return RL_DIRECT_UNSUPPORTED;
	if (!found)
	{
		direct_row_close(&d);
		return RL_DIRECT_MISSING;
	}
	slot_state(d.slot, &state, &complete);
	if (!decide(&state, complete, arg, &write))
	{
		direct_row_close(&d);
		return RL_DIRECT_DONE;
	}

	if (held_by_another(d.slot))
	{
		direct_row_close(&d);
		return RL_DIRECT_BUSY;
	}

	/* an UPDATE of a published table needs a usable replica identity */
	CheckCmdReplicaIdentity(d.rel, CMD_UPDATE);
	new = modified_version(d.rel, ExecFetchSlotHeapTuple(d.slot, false, NULL),
						   &write);
	tid = d.slot->tts_tid;
	result = compat_heap_update(d.rel, &tid, new, true, &tmfd, &indexes);
	if (result == TM_Ok)
	{
		index_new_version(d.rel, new, indexes);
		hint_set(d.rel, d.hash, &new->t_self);
	}
	heap_freetuple(new);
	direct_row_close(&d);
	return result == TM_Ok ? RL_DIRECT_DONE : RL_DIRECT_CONTENDED;
}

/*
 * The arbiter indexes of INSERT ... ON CONFLICT (name COLLATE "C" text_ops,
 * key COLLATE "C" text_ops, shard), as the planner infers them
 * (infer_arbiter_indexes): every valid unique index, not an exclusion
 * constraint, with neither expressions nor a predicate, whose key columns
 * are name, key and shard, in any order, name and key compared as the
 * primary key compares them (C collation, the text_ops family).  The
 * primary key always is one; a second unique index on the same columns is
 * another.  One whose equality is coarser (a case-insensitive collation)
 * is not: it would find a conflict that the primary key, which the call
 * then locks by, does not, and a call would retry for ever; as an ordinary
 * unique index it raises 23505 instead, as the statement does.
 *
 * Unlike the planner, an index of that form that is not valid yet but
 * already takes entries (REINDEX CONCURRENTLY's rate_limits_pkey_ccnew
 * while it is built, the replaced index as _ccold until it is dropped, a
 * failed CREATE UNIQUE INDEX CONCURRENTLY) is an arbiter too.  As an
 * ordinary unique index it would make two calls inserting one new key at
 * once fail with 23505, or wait on each other there (40P01), where the
 * primary key finds the conflict.  As an arbiter it can only find a
 * conflict with a live row of the same (name, key, shard), which the
 * primary key then locks; an entry it misses, being incomplete, the
 * primary key finds.
 */
static List *
arbiter_indexes(ResultRelInfo *rri)
{
	List	   *arbiters = NIL;

	for (int i = 0; i < rri->ri_NumIndices; i++)
	{
		Relation	index = rri->ri_IndexRelationDescs[i];
		Form_pg_index ix = index->rd_index;
		int			columns = 0;
		bool		others = false;

		if (!ix->indisready || !ix->indisunique || ix->indisexclusion ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
			!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
			continue;
		for (int k = 0; k < ix->indnkeyatts; k++)
		{
			AttrNumber	att = ix->indkey.values[k];

			if (att >= 1 && att <= 3)
				columns |= 1 << att;
			else
				others = true;
			if ((att == 1 || att == 2) &&
				(index->rd_indcollation[k] != C_COLLATION_OID ||
				 index->rd_opfamily[k] != TEXT_BTREE_FAM_OID))
				others = true;
		}
		if (!others && columns == ((1 << 1) | (1 << 2) | (1 << 3)))
			arbiters = lappend_oid(arbiters, RelationGetRelid(index));
	}
	return arbiters;
}

/*
 * Under REPEATABLE READ and SERIALIZABLE, a conflicting row that the
 * transaction's snapshot cannot see, and that the transaction did not
 * insert itself, is SQLSTATE 40001, as ExecCheckTIDVisible raises it for
 * DO NOTHING: the call must not go on from a row it cannot read.
 */
static void
check_conflict_visible(Relation rel, ItemPointer tid, Snapshot snapshot)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);

	if (!table_tuple_fetch_row_version(rel, tid, SnapshotAny, slot))
		elog(ERROR, "could not fetch the rate limit row a new key conflicts with");
	if (!table_tuple_satisfies_snapshot(rel, slot, snapshot))
	{
		bool		isnull;
		Datum		xmin = slot_getsysattr(slot, MinTransactionIdAttributeNumber,
										   &isnull);

		if (!TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin)))
			serialization_failure();
	}
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * Insert the row (name, key, shard) of a new key holding state, with the
 * semantics of INSERT ... ON CONFLICT (name, key, shard) DO NOTHING:
 * INSERTED, or CONFLICT when the row exists (another transaction inserted
 * it first and committed), or UNSUPPORTED, inserting nothing, when the
 * direct path cannot serve the table.
 *
 * The protocol is ExecInsert's speculative insertion, step by step:
 * - a pre-check of the arbiter indexes with a dirty snapshot, which waits
 *   for a transaction that inserted or deleted a conflicting row and has
 *   not ended (or for a speculative inserter to confirm or kill its row),
 *   and reports a live conflicting row;
 * - else the speculative insertion lock, the heap tuple inserted with its
 *   token, and index entries for every index, the arbiters reporting a
 *   duplicate instead of raising it (another unique index raises 23505 as
 *   INSERT does);
 * - the tuple confirmed, or killed when an arbiter found a duplicate
 *   inserted after the pre-check; then the lock released, waking anyone
 *   waiting on the token, and after a kill the pre-check again, which now
 *   waits for the other inserter.
 * heap_insert, the index entries and the confirmation or kill make the WAL
 * records, statistics (a killed tuple counts as an insert and a delete) and
 * serializable conflict checks that INSERT makes.  Like the SQL statement,
 * it first makes the transaction's earlier changes visible and takes the
 * snapshot the statement would run with, carried by the executor state as
 * ExecutorStart sets it (from 19 on, the pre-check itself fetches a
 * conflicting row with it under REPEATABLE READ); and under REPEATABLE READ
 * and SERIALIZABLE it checks a conflicting row against that snapshot
 * (check_conflict_visible).
 */
RlDirectInsertStatus
rl_direct_insert(Oid relid, text *name, text *key, int16 shard,
				 const RlState *state)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	Relation	index = open_usable_primary_key(rel);
	Snapshot	snapshot;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	List	   *arbiters;
	MemoryContext caller;
	RlDirectInsertStatus status;

	if (index == NULL)
	{
		table_close(rel, NoLock);
		return RL_DIRECT_INSERT_UNSUPPORTED;
	}
	index_close(index, NoLock);

	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());

	estate = CreateExecutorState();
	estate->es_snapshot = snapshot;
	estate->es_output_cid = GetCurrentCommandId(true);
	caller = MemoryContextSwitchTo(estate->es_query_cxt);
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 0, NULL, 0);
	ExecOpenIndices(rri, true);
	arbiters = arbiter_indexes(rri);

	slot = table_slot_create(rel, NULL);
	ExecClearTuple(slot);
	slot->tts_values[0] = PointerGetDatum(name);
	slot->tts_values[1] = PointerGetDatum(key);
	slot->tts_values[2] = Int16GetDatum(shard);
	slot->tts_values[ATT_VALUE - 1] = Float8GetDatum(state->value);
	slot->tts_values[ATT_TS - 1] = TimestampTzGetDatum(state->ts);
	memset(slot->tts_isnull, false, RelationGetDescr(rel)->natts * sizeof(bool));
	if (HAS_PREV(RelationGetDescr(rel)))
	{
		slot->tts_isnull[ATT_PREV - 1] = isnan(state->prev);
		slot->tts_values[ATT_PREV - 1] = slot->tts_isnull[ATT_PREV - 1] ? 0 :
			Float8GetDatum(state->prev);
	}
	ExecStoreVirtualTuple(slot);
	ExecMaterializeSlot(slot);
	slot->tts_tableOid = RelationGetRelid(rel);

	for (;;)
	{
		ItemPointerData conflict_tid;
		uint32		token;
		bool		spec_conflict = false;

		CHECK_FOR_INTERRUPTS();
		if (!compat_check_index_constraints(rri, slot, estate, &conflict_tid,
											arbiters))
		{
			if (IsolationUsesXactSnapshot())
				check_conflict_visible(rel, &conflict_tid, snapshot);
			status = RL_DIRECT_CONFLICT;
			break;
		}

		token = SpeculativeInsertionLockAcquire(GetCurrentTransactionId());
		table_tuple_insert_speculative(rel, slot, estate->es_output_cid, 0,
									   NULL, token);
		list_free(compat_insert_speculative_index_tuples(rri, slot, estate,
														 arbiters,
														 &spec_conflict));
		table_tuple_complete_speculative(rel, slot, token, !spec_conflict);
		SpeculativeInsertionLockRelease(GetCurrentTransactionId());
		if (!spec_conflict)
		{
			hint_set(rel, row_hash(name, key, shard), &slot->tts_tid);
			status = RL_DIRECT_INSERTED;
			break;
		}
	}

	ExecDropSingleTupleTableSlot(slot);
	ExecCloseIndices(rri);
	MemoryContextSwitchTo(caller);
	FreeExecutorState(estate);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	return status;
}
