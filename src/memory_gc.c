/*-------------------------------------------------------------------------
 *
 * memory_gc.c
 *	  Removing entries from the memory store on request: rl_gc's pass over
 *	  it (idle entries, under the policies in force; entries of dropped
 *	  databases and extensions) and rl_memory_forget's; and, on a hot
 *	  standby, the relcache callback that stops an rl_gc pass when a
 *	  replayed definition change shows.
 *
 * Locking.
 * - A pass takes one partition at a time, exclusively, in ascending
 *   order, and holds nothing else; between partitions it checks for
 *   interrupts and accepts invalidation messages, so it stops at the next
 *   partition once the epoch moved (a definition changed meanwhile).
 * - spaces_gone reads every partition first, shared, one at a time, and
 *   looks up the catalogs only after it let go of them: no catalog access
 *   with a partition held.
 * - The store's spinlock is taken only by mem_entry_remove, under the
 *   partition.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/inval.h"
#include "utils/syscache.h"

#include "memory_internal.h"

static Oid	gc_space = InvalidOid;	/* rl_gc's rl_definitions (standby) */

/* A (database, extension) that entries of defined limits belong to. */
typedef struct MemSpace
{
	Oid			dbid;
	Oid			space;
	bool		gone;			/* the database or the extension was dropped */
} MemSpace;

/*
 * The (database, extension) pairs of entries rl_gc cannot judge where it
 * runs, and whether each still exists: a database dropped, or in this
 * database an extension dropped (its rl_definitions with it), leaves
 * entries no call will ever write again.  Another database's are judged
 * by rl_gc there.  A transaction that dropped a table itself sees its own
 * uncommitted drop in the catalogs: an extension it dropped (and created
 * again, to call rl_gc) is not gone until it commits, and a rollback
 * brings it back with its state, so in such a transaction no space of
 * this database counts as gone.
 */
static List *
spaces_gone(MemShared *s)
{
	MemEntry   *entries = mem_entries(s);
	int32	   *buckets = mem_buckets(s);
	List	   *spaces = NIL;
	ListCell   *lc;

	for (int p = 0; p < MEM_PARTITIONS; p++)
	{
		LWLockAcquire(&s->locks[p].lock, LW_SHARED);
		for (uint32 b = p; b < s->nbuckets; b += MEM_PARTITIONS)
			for (int32 i = buckets[b]; i >= 0; i = entries[i].next)
			{
				MemEntry   *e = &entries[i];
				bool		known = false;

				if (e->is_inline)
					continue;
				foreach(lc, spaces)
				{
					MemSpace   *m = lfirst(lc);

					if (m->dbid == e->dbid && m->space == e->space)
						known = true;
				}
				if (!known && list_length(spaces) < 1000)
				{
					MemSpace   *m = palloc(sizeof(MemSpace));

					m->dbid = e->dbid;
					m->space = e->space;
					m->gone = false;
					spaces = lappend(spaces, m);
				}
			}
		LWLockRelease(&s->locks[p].lock);
	}
	foreach(lc, spaces)
	{
		MemSpace   *m = lfirst(lc);

		if (!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(m->dbid)))
			m->gone = true;
		else if (m->dbid == MyDatabaseId &&
				 !TransactionIdIsCurrentTransactionId(mem_dropped_relation_xid) &&
				 !SearchSysCacheExists1(RELOID, ObjectIdGetDatum(m->space)))
			m->gone = true;
	}
	return spaces;
}

/* Whether an entry belongs to a dropped database or extension. */
static bool
in_gone_space(const MemEntry *e, List *spaces)
{
	ListCell   *lc;

	foreach(lc, spaces)
	{
		MemSpace   *m = lfirst(lc);

		if (m->dbid == e->dbid && m->space == e->space)
			return m->gone;
	}
	return false;
}

/* What rl_memory_gc judges by (gc_drops). */
typedef struct MemGc
{
	Oid			space;
	const RlMemoryName *names;
	int			nnames;
	uint64		epoch;
	TimestampTz now;
	List	   *spaces;			/* spaces_gone */
} MemGc;

static bool
gc_drops(MemShared *s, const MemEntry *e, void *arg)
{
	const MemGc *gc = arg;
	const RlPolicy *policy = NULL;

	if (e->holders > 0)
		return false;
	if (!e->is_inline && in_gone_space(e, gc->spaces))
		return true;
	if (e->is_inline || e->untouched ||
		e->dbid != MyDatabaseId || e->space != gc->space ||
		gc->epoch == PG_UINT64_MAX)
		return mem_droppable(s, e, gc->now);
	for (int i = 0; i < gc->nnames && policy == NULL; i++)
		if (memcmp(gc->names[i].name_id, e->name_id,
				   RL_MEMORY_NAME_ID_BYTES) == 0)
			policy = &gc->names[i].policy;
	if (policy == NULL)
		return e->judged != gc->epoch;

	/*
	 * Some keys have overrides, and the entry does not tell whose key it
	 * is: only the judgement of a call under the key's own policy counts.
	 */
	if (policy->overrides)
		return mem_droppable(s, e, gc->now);
	return mem_idle_under(e, policy, gc->now);
}

/*
 * rl_gc on the memory store: drop up to max entries no transaction holds
 * whose key is idle.  The entries of this database's and extension's
 * defined limits (space) are judged under their current policies (names:
 * the ids and policies of every memory limit defined there, read after
 * epoch; a fixed window's phase is that of its stored window start), and
 * dropped also when their name is no longer defined and no call of the
 * current epoch wrote them; entries of a dropped database or extension
 * (spaces_gone); every other entry as the sweep judges it
 * (mem_droppable).  The pass stops when the epoch changes, since a
 * definition changed meanwhile; on a standby, where a replayed change
 * fires no trigger, this backend's own invalidations bump it
 * (memory_relcache_callback).
 */
uint64
rl_memory_gc(Oid space, const RlMemoryName *names, int nnames, uint64 epoch,
			 TimestampTz now, uint64 max)
{
	MemShared  *s = mem_store();
	MemGc		gc = {space, names, nnames, epoch, now, spaces_gone(s)};
	uint64		removed = 0;

	gc_space = space;
	for (int p = 0; p < MEM_PARTITIONS && removed < max; p++)
	{
		CHECK_FOR_INTERRUPTS();
		AcceptInvalidationMessages();
		LWLockAcquire(&s->locks[p].lock, LW_EXCLUSIVE);
		if (epoch != PG_UINT64_MAX &&
			(pg_atomic_read_u64(&mem_epoch_of(s, MyDatabaseId)->epoch) != epoch ||
			 pg_atomic_read_u32(&mem_epoch_of(s, MyDatabaseId)->changing) != 0))
		{
			LWLockRelease(&s->locks[p].lock);
			break;
		}
		removed += mem_partition_drop(s, p, gc_drops, &gc, max - removed);
		LWLockRelease(&s->locks[p].lock);
	}
	return removed;
}

/*
 * Relcache callback: rl_definitions of the space rl_gc judges in was
 * invalidated in this backend.  On a hot standby that is how a replayed
 * definition change shows (no trigger fires there): a new epoch, so that
 * rl_gc stops judging under what it read before.
 */
void
memory_relcache_callback(Datum arg, Oid relid)
{
	if (mem_shared != NULL && RecoveryInProgress() &&
		(relid == InvalidOid || relid == gc_space))
		pg_atomic_fetch_add_u64(&mem_epoch_of(mem_shared, MyDatabaseId)->epoch, 1);
}

/*
 * rl_memory_forget's work: drop the entries of this database's and extension's
 * (space) memory limits that no transaction holds, at once (a rollback
 * does not bring them back): only those of inline configs when
 * inline_only.  Returns how many.
 */
typedef struct MemForget
{
	Oid			space;
	bool		inline_only;
} MemForget;

static bool
forget_drops(MemShared *s, const MemEntry *e, void *arg)
{
	const MemForget *forget = arg;

	return e->holders == 0 && e->dbid == MyDatabaseId &&
		e->space == forget->space && (e->is_inline || !forget->inline_only);
}

uint64
rl_memory_drop_entries(Oid space, bool inline_only)
{
	MemShared  *s = mem_store();
	MemForget	forget = {space, inline_only};
	uint64		removed = 0;

	for (int p = 0; p < MEM_PARTITIONS; p++)
	{
		CHECK_FOR_INTERRUPTS();
		LWLockAcquire(&s->locks[p].lock, LW_EXCLUSIVE);
		removed += mem_partition_drop(s, p, forget_drops, &forget, PG_UINT64_MAX);
		LWLockRelease(&s->locks[p].lock);
	}
	return removed;
}
