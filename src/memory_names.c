/*-------------------------------------------------------------------------
 *
 * memory_names.c
 *	  Definition changes and the memory store: the per-database epochs a
 *	  call reads before its policy, what a change of a memory limit's
 *	  definition (or a dropped rl_definitions, or a trigger enabled or
 *	  disabled) records, the barrier before such a change becomes visible,
 *	  and what it does to the store once it has.
 *
 * An idle judgement (an entry's idle_at) is made under a policy, in the
 * epoch read before that policy: it counts only while its database's epoch
 * has not moved and no change is committing (changing).  A change of a
 * memory limit's definition is noted from rl_definitions' row trigger
 * (rl_memory_name_changed) or the object access hook; before it becomes
 * visible (pre-commit) it raises changing, bumps the epoch and takes every
 * partition once (mem_epoch_barrier); once its invalidation is sent (the
 * resource-release callback) it bumps the epoch again, drops the entries
 * of dropped names no transaction holds, and lowers changing
 * (mem_finish_names, mem_names_clear).
 *
 * Locking.
 * - The epochs are atomics: no lock to read or bump them.  A judgement is
 *   checked against them with the entry's partition held, and the barrier
 *   takes every partition after its bump, so a call or an rl_gc pass that
 *   read the old definitions either finished with a partition before the
 *   change is seen, or finds the new epoch there.
 * - The barrier and mem_finish_names take each partition exclusively, one
 *   at a time, in ascending order, holding nothing else; mem_finish_names
 *   runs after commit and must not fail.
 * - The object access hook and the catalog lookups it makes run with no
 *   partition held.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "memory_internal.h"
#include "shmem.h"

static bool counted_changing = false;	/* this backend raised changing */
static uint64 barrier_epoch = 0;	/* the epoch its pre-commit bump made */
/* the last transaction of this backend that dropped a table */
TransactionId mem_dropped_relation_xid = InvalidTransactionId;

static object_access_hook_type prev_object_access_hook = NULL;

/*
 * The epoch a call reads before its policy, for the idle judgement of what
 * it writes: UINT64_MAX, a judgement that never counts, when the store is
 * not attached yet, when this transaction changed a definition (its calls
 * see that change before it commits, or ever does), while a definition
 * change is committing (its policy
 * may be the old one while the epoch is already the new), and during
 * recovery (a replayed change bumps nothing, and a promotion would make
 * the judgement look fresh).
 */
uint64
rl_memory_epoch(void)
{
	if (mem_shared == NULL || RecoveryInProgress() || mem_names_changed ||
		pg_atomic_read_u32(&mem_epoch_of(mem_shared, MyDatabaseId)->changing) != 0)
		return PG_UINT64_MAX;
	return pg_atomic_read_u64(&mem_epoch_of(mem_shared, MyDatabaseId)->epoch);
}

/*
 * The epoch rl_gc reads before the definitions it judges under:
 * UINT64_MAX in a transaction that changed a definition, and while a
 * definition change is committing (rl_memory_gc then
 * judges no defined limit's entry).  In recovery the real one, which this
 * backend's own invalidations bump (memory_relcache_callback).
 */
uint64
rl_memory_gc_epoch(void)
{
	MemShared  *s = mem_store();

	/* its own uncommitted definitions would be what it reads */
	if (mem_names_changed ||
		pg_atomic_read_u32(&mem_epoch_of(s, MyDatabaseId)->changing) != 0)
		return PG_UINT64_MAX;
	return pg_atomic_read_u64(&mem_epoch_of(s, MyDatabaseId)->epoch);
}

/*
 * A memory limit's definition changed (dropped: it is gone, or no longer
 * a memory limit), from the row trigger on rl_definitions, so hand edits
 * count too; name NULL for every name (TRUNCATE).  At commit every entry
 * of the name is dropped (when the definition is gone and no transaction
 * holds it) or kept, never dropped for being idle, until a call under the
 * new policy writes it.
 */
void
rl_memory_name_changed(Oid space, text *name, bool dropped)
{
	RlMemoryKey k = {{0}};
	MemChange  *c;

	if (rl_shmem_storage() == RL_SHMEM_NONE)
		return;
	(void) mem_store();
	c = mem_next_change();
	if (name)
		rl_memory_name_id(space, name, k.name_id);
	k.space = space;
	c->kind = CHANGE_NAME;
	c->subid = GetCurrentSubTransactionId();
	c->key = k;
	c->dropped = dropped;
	c->every_name = name == NULL;
	mem_nchanges++;
	mem_names_changed = true;
}

/*
 * Before changed definitions become visible: a new epoch, then every
 * partition taken and let go once, so that an rl_gc pass that read the old
 * definitions either finished judging a partition before the change is
 * seen, or finds the new epoch at its next partition and stops (a drop
 * must be idle under the policy in force when it happens).
 */
void
mem_epoch_barrier(void)
{
	MemShared  *s = mem_shared;

	/* until the bump after the invalidations: no judgement counts */
	pg_atomic_fetch_add_u32(&mem_epoch_of(s, MyDatabaseId)->changing, 1);
	counted_changing = true;
	barrier_epoch = pg_atomic_add_fetch_u64(&mem_epoch_of(s, MyDatabaseId)->epoch, 1);
	for (int p = 0; p < MEM_PARTITIONS; p++)
	{
		LWLockAcquire(&s->locks[p].lock, LW_EXCLUSIVE);
		LWLockRelease(&s->locks[p].lock);
	}
}

/*
 * Changed definitions, after their invalidation is sent: a new epoch, so
 * that every idle judgement made before (and by a commit that raced with
 * the change, its policy read before) no longer counts (mem_droppable); then
 * the entries of dropped names that no transaction holds are removed,
 * every defined limit's of this database and extension after a TRUNCATE.
 */
void
mem_finish_names(void)
{
	MemShared  *s = mem_shared;
	MemEntry   *entries = mem_entries(s);
	int32	   *buckets = mem_buckets(s);
	MemEpoch   *slot = mem_epoch_of(s, MyDatabaseId);
	uint64		expected = barrier_epoch;
	bool		refresh;
	Oid			space = InvalidOid;
	bool		one_space = true;

	/*
	 * The judgements of names this transaction did not change stay good:
	 * made in the epoch before its pre-commit bump (none are made while it
	 * commits), under policies no other change touched, as long as nothing
	 * else bumped the epoch since and no other change is committing.  They
	 * move to the new epoch, so that a change to one limit does not leave
	 * every other limit's idle keys (in its database and install) for rl_gc
	 * to judge again.
	 */
	for (int i = 0; i < mem_nchanges; i++)
		if (mem_changes[i].kind == CHANGE_NAME)
		{
			if (OidIsValid(space) && space != mem_changes[i].key.space)
				one_space = false;
			space = mem_changes[i].key.space;
		}
	refresh = expected != 0 && one_space &&
		pg_atomic_read_u32(&slot->changing) == 1 &&
		pg_atomic_compare_exchange_u64(&slot->epoch, &expected, expected + 1);
	if (!refresh)
		pg_atomic_fetch_add_u64(&slot->epoch, 1);
	for (int p = 0; p < MEM_PARTITIONS; p++)
	{
		LWLockAcquire(&s->locks[p].lock, LW_EXCLUSIVE);
		for (uint32 b = p; b < s->nbuckets; b += MEM_PARTITIONS)
		{
			int32	   *at = &buckets[b];

			while (*at >= 0)
			{
				MemEntry   *e = &entries[*at];
				bool		named = false;
				bool		gone = false;

				for (int i = 0; i < mem_nchanges; i++)
				{
					const MemChange *c = &mem_changes[i];
					bool		match;

					if (c->kind != CHANGE_NAME)
						continue;
					if (c->every_name)
						match = e->dbid == MyDatabaseId &&
							(e->space == c->key.space ||
							 !OidIsValid(c->key.space)) &&
							(c->space_gone || !e->is_inline);
					else
						match = !e->is_inline &&
							memcmp(c->key.name_id, e->name_id,
								   RL_MEMORY_NAME_ID_BYTES) == 0;
					if (!match)
						continue;
					named = true;

					/*
					 * The last change of the name decides: a definition
					 * deleted and inserted again (DELETE and INSERT, TRUNCATE
					 * and COPY) in one transaction never went for anyone
					 * else, and its keys' state stays, as a table limit's
					 * rows do.
					 */
					if (c->dropped)
						gone = true;
					else if (!c->every_name)
						gone = false;
				}
				gone = gone && e->holders == 0;
				if (gone)
				{
					mem_entry_remove(s, at);
					continue;
				}
				/*
				 * Only in this database and install, whose definitions
				 * change only through its trigger (a hand edit elsewhere,
				 * its trigger disabled, bumps no epoch there until a lookup
				 * notices).
				 */
				if (refresh && !named && e->holders == 0 &&
					e->judged == barrier_epoch - 1 &&
					e->dbid == MyDatabaseId && e->space == space)
					e->judged = barrier_epoch + 1;
				at = &e->next;
			}
		}
		LWLockRelease(&s->locks[p].lock);
	}
	barrier_epoch = 0;
}

/*
 * Whether a table is one of an install of this extension (a member of it):
 * only its rl_definitions owns memory entries, and only its tables'
 * triggers decide whether definition changes reach the store.
 */
static bool
extension_table(Oid relid)
{
	Oid			ext = getExtensionOfObject(RelationRelationId, relid);
	char	   *name;

	if (!OidIsValid(ext))
		return false;
	name = get_extension_name(ext);
	return name != NULL && strcmp(name, "ratelimit") == 0;
}

/*
 * Whether a trigger is on a table of an install of this extension; true
 * when the trigger cannot be found, to be safe.
 */
static bool
extension_trigger(Oid trigger)
{
	Relation	rel;
	ScanKeyData skey;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		result = true;

	if (!OidIsValid(get_extension_oid("ratelimit", true)))
		return false;
	rel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyInit(&skey, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(trigger));
	scan = systable_beginscan(rel, TriggerOidIndexId, true, NULL, 1, &skey);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		result = extension_table(((Form_pg_trigger) GETSTRUCT(tuple))->tgrelid);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * object_access_hook: the extension's rl_definitions dropped (DROP
 * EXTENSION, or the table by hand once ALTER EXTENSION ... DROP TABLE took
 * it out of the extension, which this hook then no longer tells from any
 * other table): at commit, every entry of that database and extension that
 * no transaction holds goes, inline ones too, since no call can reach them
 * again.  A table of that name elsewhere owns no entry: dropping it drops
 * none, and records nothing, so the transaction can still be prepared.
 */
static void
memory_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					 int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	/*
	 * A trigger enabled or disabled in this database (ALTER TABLE ... ENABLE
	 * or DISABLE TRIGGER, pg_restore --disable-triggers): definitions may
	 * have changed by hand meanwhile without firing anything, so at commit
	 * no judgement of this database's defined limits counts any more.  Only
	 * the extension's own tables' triggers matter: another table's record
	 * nothing (nor does any trigger in a database without the extension).
	 */
	if (access == OAT_POST_ALTER && classId == TriggerRelationId &&
		rl_shmem_storage() != RL_SHMEM_NONE && extension_trigger(objectId))
	{
		MemChange  *c;

		(void) mem_store();
		c = mem_next_change();
		c->kind = CHANGE_NAME;
		c->subid = GetCurrentSubTransactionId();
		c->key.space = InvalidOid;	/* every install of this database */
		c->every_name = true;
		mem_nchanges++;
		mem_names_changed = true;
	}
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		rl_shmem_storage() != RL_SHMEM_NONE)
	{
		char	   *relname = get_rel_name(objectId);

		/*
		 * Any table, whatever its name now (an install's rl_definitions may
		 * have been renamed first): until this transaction ends, rl_gc in it
		 * must not take a space its own uncommitted drop removed from the
		 * catalogs for gone (spaces_gone).
		 */
		mem_dropped_relation_xid = GetTopTransactionId();

		if (relname != NULL && strcmp(relname, "rl_definitions") == 0 &&
			extension_table(objectId))
		{
			MemChange  *c;

			(void) mem_store();		/* the transaction callbacks, registered */
			c = mem_next_change();

			c->kind = CHANGE_NAME;
			c->subid = GetCurrentSubTransactionId();
			c->key.space = objectId;
			c->dropped = true;
			c->every_name = true;
			c->space_gone = true;
			mem_nchanges++;
			mem_names_changed = true;
		}
	}
}

/*
 * A lookup found rl_definitions' row trigger not firing always (disabled,
 * or left plain ENABLE by pg_restore): changes by hand then bump no epoch,
 * so every idle judgement made so far stops counting now (before the call
 * that found it can sweep), and those made meanwhile never count
 * (rl_target_resolve).
 */
void
rl_memory_untracked_definitions(void)
{
	if (mem_shared != NULL)
		pg_atomic_fetch_add_u64(&mem_epoch_of(mem_shared, MyDatabaseId)->epoch, 1);
}

/* Install the object access hook; from rl_memory_init. */
void
mem_names_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = memory_object_access;
}

/* A transaction's definition changes are over: lower changing. */
void
mem_names_clear(void)
{
	if (counted_changing)
	{
		pg_atomic_fetch_sub_u32(&mem_epoch_of(mem_shared, MyDatabaseId)->changing, 1);
		counted_changing = false;
	}
	barrier_epoch = 0;
}
