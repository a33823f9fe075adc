/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every PG_VERSION_NUM guard of the extension, and nowhere else.
 *
 * One source tree builds against PostgreSQL 15 to 19.  Every call whose
 * signature or contract changed between those majors goes through a
 * wrapper here, so the rest of the code reads the same on every major.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_COMPAT_H
#define RATELIMIT_COMPAT_H

#include "postgres.h"

/* the varlena macros left postgres.h for varatt.h in 16 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#include "utils/datetime.h"
#include "utils/guc.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "executor/executor.h"
#include "storage/bufmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/relcache.h"

/*
 * 13 and 14 are not supported: 14 reaches its end of life in November 2026,
 * and neither has pg_prng or MarkGUCPrefixReserved.
 */
#if PG_VERSION_NUM < 150000
#error "ratelimit requires PostgreSQL 15 or later (this is an older major)"
#endif

/*
 * A function that never returns: pg_noreturn, written before the
 * declaration, replaced the trailing pg_attribute_noreturn() in 18.
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn _Noreturn
#endif

/*
 * Memory a GUC check hook hands to the GUC machinery as "extra": from 16 on
 * it is freed with guc_free, so it must come from guc_malloc; before, from
 * malloc.  NULL when out of memory (the hook then refuses the value).
 */
static inline void *
compat_guc_malloc(size_t size)
{
#if PG_VERSION_NUM >= 160000
	return guc_malloc(LOG, size);
#else
	return malloc(size);
#endif
}

/*
 * Whether this backend holds a lock in exactly this mode (a stronger one
 * does not count); the orstronger argument arrived in 17.
 */
static inline bool
compat_lock_held_by_me(const LOCKTAG *tag, LOCKMODE mode)
{
#if PG_VERSION_NUM >= 170000
	return LockHeldByMe(tag, mode, false);
#else
	return LockHeldByMe(tag, mode);
#endif
}

/* The table's primary key index; deferrable_ok arrived in 18. */
static inline Oid
compat_primary_key_index(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, false);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

/*
 * An index scan with nkeys keys and no ordering; 18 added an
 * instrumentation argument, 19 a flags argument.
 */
static inline IndexScanDesc
compat_index_beginscan(Relation heap, Relation index, Snapshot snapshot,
					   int nkeys)
{
#if PG_VERSION_NUM >= 190000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, 0, SO_NONE);
#elif PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, 0);
#else
	return index_beginscan(heap, index, snapshot, nkeys, 0);
#endif
}

/*
 * Prune a heap page the caller has pinned (and holds no pointer into), if
 * it is worth it, as an index fetch does when it steps onto a page.  19
 * added a visibility-map buffer (for a relation the statement only reads,
 * which this is not) and that flag.
 */
static inline void
compat_heap_page_prune_opt(Relation rel, Buffer buffer)
{
#if PG_VERSION_NUM >= 190000
	Buffer		vmbuffer = InvalidBuffer;

	heap_page_prune_opt(rel, buffer, &vmbuffer, false);
	if (BufferIsValid(vmbuffer))
		ReleaseBuffer(vmbuffer);
#else
	heap_page_prune_opt(rel, buffer);
#endif
}

/* Which index entries a new row version needs. */
typedef enum CompatIndexUpdate
{
	COMPAT_INDEXES_NONE,		/* heap-only: none */
	COMPAT_INDEXES_ALL,			/* every index */
	COMPAT_INDEXES_SUMMARIZING	/* heap-only, but summarizing indexes (16+) */
} CompatIndexUpdate;

/*
 * simple_heap_update, saying which index entries the new version needs.
 * Before 16 that follows from HOT alone; from 16 on the heap says so
 * (TU_UpdateIndexes), since a HOT update still feeds summarizing indexes.
 */
static inline CompatIndexUpdate
compat_simple_heap_update(Relation rel, ItemPointer otid, HeapTuple tup)
{
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes update_indexes;

	simple_heap_update(rel, otid, tup, &update_indexes);
	switch (update_indexes)
	{
		case TU_None:
			return COMPAT_INDEXES_NONE;
		case TU_Summarizing:
			return COMPAT_INDEXES_SUMMARIZING;
		case TU_All:
			break;
	}
	return COMPAT_INDEXES_ALL;
#else
	simple_heap_update(rel, otid, tup);
	return HeapTupleIsHeapOnly(tup) ? COMPAT_INDEXES_NONE : COMPAT_INDEXES_ALL;
#endif
}

/*
 * heap_update of the version at otid, waiting for a concurrent holder or
 * not, saying which index entries the new version needs (as
 * compat_simple_heap_update).  19 added an options word (no option here).
 */
static inline TM_Result
compat_heap_update(Relation rel, ItemPointer otid, HeapTuple tup, bool wait,
				   TM_FailureData *tmfd, CompatIndexUpdate *indexes)
{
	CommandId	cid = GetCurrentCommandId(true);
	LockTupleMode lockmode;
	TM_Result	result;
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes update_indexes;

#if PG_VERSION_NUM >= 190000
	result = heap_update(rel, otid, tup, cid, 0, InvalidSnapshot, wait, tmfd,
						 &lockmode, &update_indexes);
#else
	result = heap_update(rel, otid, tup, cid, InvalidSnapshot, wait, tmfd,
						 &lockmode, &update_indexes);
#endif
	*indexes = update_indexes == TU_None ? COMPAT_INDEXES_NONE :
		update_indexes == TU_Summarizing ? COMPAT_INDEXES_SUMMARIZING :
		COMPAT_INDEXES_ALL;
#else
	result = heap_update(rel, otid, tup, cid, InvalidSnapshot, wait, tmfd,
						 &lockmode);
	*indexes = HeapTupleIsHeapOnly(tup) ? COMPAT_INDEXES_NONE :
		COMPAT_INDEXES_ALL;
#endif
	return result;
}

/*
 * Index entries for a row version an UPDATE wrote, as ExecUpdate makes
 * them: onlySummarizing arrived in 16, a flags word replaced the booleans
 * in 19.
 */
static inline List *
compat_insert_update_index_tuples(ResultRelInfo *rri, TupleTableSlot *slot,
								  EState *estate, bool only_summarizing)
{
#if PG_VERSION_NUM >= 190000
	return ExecInsertIndexTuples(rri, estate,
								 EIIT_IS_UPDATE |
								 (only_summarizing ? EIIT_ONLY_SUMMARIZING : 0),
								 slot, NIL, NULL);
#elif PG_VERSION_NUM >= 160000
	return ExecInsertIndexTuples(rri, slot, estate, true, false, NULL, NIL,
								 only_summarizing);
#else
	Assert(!only_summarizing);
	return ExecInsertIndexTuples(rri, slot, estate, true, false, NULL, NIL);
#endif
}

/*
 * The pre-check of a speculative insertion (INSERT ... ON CONFLICT): false,
 * with the conflicting row's address in conflict_tid, when a committed or
 * confirmed row conflicts on an arbiter index, after waiting for any
 * transaction still deciding about one.  18 added the row to leave out of
 * the check (none here: nothing is inserted yet).
 */
static inline bool
compat_check_index_constraints(ResultRelInfo *rri, TupleTableSlot *slot,
							   EState *estate, ItemPointer conflict_tid,
							   List *arbiters)
{
#if PG_VERSION_NUM >= 180000
	ItemPointerData none;

	ItemPointerSetInvalid(&none);
	return ExecCheckIndexConstraints(rri, slot, estate, conflict_tid, &none,
									 arbiters);
#else
	return ExecCheckIndexConstraints(rri, slot, estate, conflict_tid,
									 arbiters);
#endif
}

/*
 * Index entries for a row inserted speculatively, as ExecInsert makes them:
 * a duplicate in an arbiter index sets *spec_conflict instead of raising
 * (noDupErr); any other unique index raises as usual.  onlySummarizing
 * arrived in 16, a flags word replaced the booleans in 19.
 */
static inline List *
compat_insert_speculative_index_tuples(ResultRelInfo *rri,
									   TupleTableSlot *slot, EState *estate,
									   List *arbiters, bool *spec_conflict)
{
#if PG_VERSION_NUM >= 190000
	return ExecInsertIndexTuples(rri, estate, EIIT_NO_DUPE_ERROR, slot,
								 arbiters, spec_conflict);
#elif PG_VERSION_NUM >= 160000
	return ExecInsertIndexTuples(rri, slot, estate, false, true,
								 spec_conflict, arbiters, false);
#else
	return ExecInsertIndexTuples(rri, slot, estate, false, true,
								 spec_conflict, arbiters);
#endif
}

/* DecodeDateTime gained an error-detail argument in PostgreSQL 16. */
static inline int
compat_decode_datetime(char **field, int *ftype, int nf, int *dtype,
					   struct pg_tm *tm, fsec_t *fsec, int *tzp)
{
#if PG_VERSION_NUM >= 160000
	DateTimeErrorExtra extra;

	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp, &extra);
#else
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp);
#endif
}

/*
 * Named segments of the DSM registry (17+), for shared memory without
 * shared_preload_libraries.  In 19 the initialisation callback takes an
 * argument.  COMPAT_HAS_DSM_REGISTRY says whether the registry exists.
 */
#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#define COMPAT_HAS_DSM_REGISTRY 1

#if PG_VERSION_NUM >= 190000
typedef struct CompatDsmInit
{
	void		(*init) (void *ptr);
} CompatDsmInit;

static inline void
compat_dsm_init_trampoline(void *ptr, void *arg)
{
	((CompatDsmInit *) arg)->init(ptr);
}
#endif

static inline void *
compat_get_named_dsm_segment(const char *name, size_t size,
							 void (*init) (void *ptr), bool *found)
{
#if PG_VERSION_NUM >= 190000
	CompatDsmInit arg = {init};

	return GetNamedDSMSegment(name, size, compat_dsm_init_trampoline, found,
							  &arg);
#else
	return GetNamedDSMSegment(name, size, init, found);
#endif
}
#endif

/*
 * A tranche of LWLocks for a table in shared memory: 19 names it when it
 * is made, in shared memory; before, each process registers the name.
 */
#include "storage/lwlock.h"

static inline int
compat_lwlock_new_tranche(const char *name)
{
#if PG_VERSION_NUM >= 190000
	return LWLockNewTrancheId(name);
#else
	int			id = LWLockNewTrancheId();

	LWLockRegisterTranche(id, name);
	return id;
#endif
}

static inline void
compat_lwlock_register_tranche(int id, const char *name)
{
#if PG_VERSION_NUM < 190000
	LWLockRegisterTranche(id, name);
#endif
}

/* This backend's local transaction id; PGPROC keeps it in vxid from 17. */
static inline LocalTransactionId
compat_my_lxid(void)
{
#if PG_VERSION_NUM >= 170000
	return MyProc->vxid.lxid;
#else
	return MyProc->lxid;
#endif
}

#endif							/* RATELIMIT_COMPAT_H */
