/*-------------------------------------------------------------------------
 *
 * memory_internal.h
 *	  What the files of the memory store share, and nothing else includes:
 *	  the layout of the store in shared memory, a transaction's pending
 *	  changes, and the functions one file of the store calls in another.
 *
 * memory.c        settings, attaching the store, addresses, rl_stats_info
 * memory_table.c  the shared hash: partitions, entries, placement, calls
 * memory_xact.c   pending changes, and what commit and abort make of them
 * memory_names.c  definition changes: epochs, the barrier, dropped names
 * memory_file.c   the state file and the start after a crash
 * memory_gc.c     rl_gc and rl_memory_forget on the store
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_MEMORY_INTERNAL_H
#define RATELIMIT_MEMORY_INTERNAL_H

#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/resowner.h"

#include "memory.h"

#define MEM_PARTITIONS 128
#define MEM_NEVER PG_INT64_MAX

typedef struct MemEntry
{
	int32		next;			/* chain, or free list; -1 for none */
	int32		holders;		/* transactions with a change pending */
	uint8		id[RL_MEMORY_ID_BYTES];
	uint8		name_id[RL_MEMORY_NAME_ID_BYTES];
	Oid			dbid;			/* where its limit is defined (rl_gc) */
	Oid			space;
	RlState		committed;
	double		pending;		/* taken by transactions in progress */
	/*
	 * Committed while a definition change may have made the policy of the
	 * take (or refund) stale: takes less refunds, landed at owed_at (the
	 * latest of those commits) under the policy of whoever reads the entry
	 * (landed), until a call that knows its policy is current folds them
	 * into committed.
	 */
	double		owed;
	TimestampTz owed_at;
	/*
	 * With no holders: droppable from idle_at on, judged in that epoch.
	 * While held (neither is read then): idle_at is the latest time a holder
	 * changed it (a take's call time, a commit), judged a bound on how long
	 * the state less pending, never refilled, takes to be idle (hold_note),
	 * for an immediate shutdown that saves it held.
	 */
	int64		idle_at;
	uint64		judged;
	bool		is_inline;		/* an inline policy: it never changes */
	bool		untouched;		/* committed is still a missing key's */
	bool		block_held;		/* while held: a holder queued a block */
	int16		dbslot;			/* the count of its database (MemShared.dbs) */
} MemEntry;

/*
 * Changes of the memory definitions of the databases of one slot: a
 * change in one database never makes another's idle judgements stale
 * (two databases in one slot only share their freshness).
 */
#define MEM_EPOCH_SLOTS 64

typedef struct MemEpoch
{
	pg_atomic_uint64 epoch;		/* changes of memory definitions */
	pg_atomic_uint32 changing;	/* such changes committing right now */
} MemEpoch;

/*
 * How many entries a database holds, for memory_max_keys_per_database:
 * MEM_DB_SLOTS databases one by one, claimed by a database's first entry
 * and free again when its last goes; when every one is another's, the
 * other databases share the last count.  An entry keeps the index of the
 * count it was added to (dbslot), so a database that moves from the
 * shared count to one of its own never miscounts.
 */
#define MEM_DB_SLOTS 256
#define MEM_DB_SHARED MEM_DB_SLOTS

typedef struct MemDbCount
{
	Oid			dbid;
	int32		used;
} MemDbCount;

/*
 * The store, followed in memory by nbuckets int32 chain heads and
 * max_keys entries.
 */
typedef struct MemShared
{
	int32		max_keys;
	uint32		nbuckets;		/* a power of two, at least MEM_PARTITIONS */
	slock_t		mutex;			/* free list and counters */
	int32		free_head;
	int32		used;
	int64		full_errors;
	TimestampTz empty_since;	/* after a crash, 'empty': 0 otherwise */
	MemEpoch	epochs[MEM_EPOCH_SLOTS];	/* by database (epoch_of) */
	uint64		seed;			/* picks buckets: unknown to callers */
	MemDbCount	dbs[MEM_DB_SLOTS + 1];	/* under mutex; the last shared */
	LWLockPadded locks[MEM_PARTITIONS];
} MemShared;

typedef enum MemAfterCrash
{
	AFTER_CRASH_FULL,
	AFTER_CRASH_EMPTY
} MemAfterCrash;

/* What this backend's transaction has pending in the store. */
typedef enum MemChangeKind
{
	CHANGE_TAKE,
	CHANGE_REFUND,
	CHANGE_BLOCK,
	CHANGE_RESET,
	CHANGE_NAME
} MemChangeKind;

typedef struct MemChange
{
	MemChangeKind kind;
	SubTransactionId subid;
	RlMemoryKey key;			/* CHANGE_NAME: name_id only */
	RlPolicy	policy;
	bool		dropped;		/* CHANGE_NAME: the definition is gone */
	bool		every_name;		/* CHANGE_NAME: every name (TRUNCATE) */
	bool		space_gone;		/* CHANGE_NAME: the extension dropped */
	bool		unblocked_only; /* CHANGE_BLOCK, CHANGE_REFUND: skipped if
								 * then blocked */
	bool		pinned;			/* CHANGE_RESET: its entry pinned */
	int64		origin;
	TimestampTz at;				/* when taken */
	double		amount;
	int64		duration;
	uint64		epoch;
} MemChange;

/* The chain heads, after the store's header. */
static inline int32 *
mem_buckets(MemShared *s)
{
	return (int32 *) ((char *) s + MAXALIGN(sizeof(MemShared)));
}

/* The entries, after the chain heads. */
static inline MemEntry *
mem_entries(MemShared *s)
{
	return (MemEntry *) ((char *) mem_buckets(s) +
						 MAXALIGN(sizeof(int32) * s->nbuckets));
}

/* The epoch slot of a database. */
static inline MemEpoch *
mem_epoch_of(MemShared *s, Oid dbid)
{
	return &s->epochs[murmurhash32((uint32) dbid) % MEM_EPOCH_SLOTS];
}

/* Whether a walk over a partition drops an entry (mem_partition_drop). */
typedef bool (*MemDropTest) (MemShared *s, const MemEntry *e, void *arg);

/* memory.c */
extern MemShared *mem_shared;
extern int	memory_max_keys_per_database;
extern int	memory_after_crash;
extern MemShared *mem_store(void);

/* memory_table.c */
extern Size mem_store_size(int32 max_keys);
extern void mem_store_init(MemShared *s, int32 max_keys, int tranche);
extern uint32 mem_bucket_hash(MemShared *s, const uint8 *id);
extern MemEntry *mem_entry_find(MemShared *s, const uint8 *id, uint32 bucket,
								int32 **link);
extern void mem_entry_remove(MemShared *s, int32 *link);
extern int	mem_db_slot(MemShared *s, Oid dbid);
extern int64 mem_empty_refilled_at(MemShared *s, const RlPolicy *policy);
extern bool mem_droppable(MemShared *s, const MemEntry *e, TimestampTz now);
extern bool mem_idle_under(const MemEntry *e, const RlPolicy *policy,
						   TimestampTz now);
extern uint64 mem_partition_drop(MemShared *s, int partition, MemDropTest drop,
								 void *arg, uint64 max);
extern bool mem_holds(int partition);
extern void mem_forget_held(void);
extern void mem_missing_state(MemShared *s, const RlPolicy *policy,
							  int64 origin, TimestampTz now, RlState *state);
extern RlState mem_landed(const MemEntry *e, const RlPolicy *policy,
						  int64 origin);
extern int64 mem_refill_bound(const RlPolicy *policy, double value);
extern void mem_hold_note(MemEntry *e, const RlPolicy *policy, TimestampTz at,
						  bool first);
extern MemEntry *mem_entry_pin(MemShared *s, const RlMemoryKey *k,
							   const RlPolicy *policy, int64 origin,
							   TimestampTz now, uint64 epoch);

/* memory_xact.c */
extern MemChange *mem_changes;
extern int	mem_nchanges;
extern bool mem_names_changed;
extern MemChange *mem_next_change(void);
extern void memory_xact_callback(XactEvent event, void *arg);
extern void memory_subxact_callback(SubXactEvent event,
									SubTransactionId mySubid,
									SubTransactionId parentSubid, void *arg);
extern void memory_release_callback(ResourceReleasePhase phase,
									bool isCommit, bool isTopLevel,
									void *arg);

/* memory_names.c */
extern TransactionId mem_dropped_relation_xid;
extern void mem_names_init(void);
extern void mem_epoch_barrier(void);
extern void mem_finish_names(void);
extern void mem_names_clear(void);

/* memory_file.c */
extern void mem_start_after_crash(MemShared *s);
extern void mem_state_start(void *ptr);
extern void mem_state_dump(void *ptr);

/* memory_gc.c */
extern void memory_relcache_callback(Datum arg, Oid relid);

#endif							/* RATELIMIT_MEMORY_INTERNAL_H */
