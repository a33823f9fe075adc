/*-------------------------------------------------------------------------
 *
 * memory.c
 *	  The memory store: the state of limits defined with storage 'memory',
 *	  in shared memory, one entry per (database, extension, stored name,
 *	  key).  No row, no transaction id, no WAL, no vacuum: it works in
 *	  READ ONLY transactions and on hot standbys, each server on its own.
 *
 * An entry holds the committed state (value, ts) and what transactions
 * still in progress have taken from it (pending, and how many of them
 * hold the entry).  A call decides on the committed state brought forward
 * to now, less pending: so a grant takes its tokens at once, seen by every
 * session, and two sessions can never both take the last token.  When the
 * taking transaction commits, the take becomes part of the committed state
 * (rl_commit_take, at commit time, which never leaves more tokens than
 * taking at grant time would); when it rolls back, or rolls back to a
 * savepoint, the take just leaves pending: the committed state never saw
 * it, so the rollback returns exactly what the rolled-back work took.
 * A take (or refund) that commits after a definition change of its
 * database is not applied under the policy it was granted under: it is
 * owed, brought forward to its call's time under that policy as the table
 * store's row was, and lands under the policy of whoever reads the entry
 * (landed), until a call that knows its policy is in force folds it in.
 * What gives tokens (a refund, a block's end is not one, a reset, a
 * definition dropped) and blocks happen only at commit, so no session is
 * ever granted tokens that a transaction which later rolls back gave.
 * PREPARE TRANSACTION after any of these is refused.
 *
 * Where it lives:
 * - shared_preload_libraries = 'ratelimit': in the main segment, sized by
 *   ratelimit.memory_max_keys at start.  The postmaster writes every entry
 *   to pg_stat/ratelimit_memory.state when it exits normally (smart, fast
 *   or immediate shutdown; takes of transactions still open, which only an
 *   immediate shutdown leaves, are kept: one may have committed) and reads the
 *   file back at the next start, once its checksum and every entry are
 *   found valid.  A marker file, removed only once the file is durably
 *   written, tells a start after a crash (the postmaster killed, or a
 *   shutdown that failed) from a clean one; a reinitialisation after a
 *   backend crash is one too, and so is a start whose file is not valid,
 *   which restores nothing from it.  After a crash,
 *   ratelimit.memory_after_crash decides: 'full' (the default), every key
 *   starts full; 'empty', every key with no entry counts as emptied at the
 *   restart and refills from there.
 * - Not preloaded, PostgreSQL 17 and later: in a segment of the DSM
 *   registry, made by the first backend that uses a memory limit.  Nothing
 *   is saved at shutdown, so every start is treated as after a crash.
 * - Not preloaded, 15 and 16: unavailable; a memory limit is an error that
 *   names the setting.
 *
 * Entries.  An entry is addressed by a SHA-256 digest of (database,
 * extension, stored name, key): two different limits never share one,
 * whatever keys an attacker chooses.  A bucket array of chains, partitioned
 * by 128 LWLocks, so unrelated keys never contend on one lock.  At most
 * ratelimit.memory_max_keys entries exist.  An entry no transaction holds
 * whose state has refilled completely (idle_at passed) means the same as
 * no entry, and is dropped when room is needed; when none can be dropped,
 * a call on a new key is an error (53400), never an eviction of live state.
 * idle_at is computed under the policy that last wrote the entry; a change
 * to a memory limit's definition sets it to never for every entry of the
 * name, after the change's invalidation is sent (an epoch tells a commit
 * that raced with it), until a call under the new policy writes it.
 *
 * Locking.  A call holds the partitions of its keys exclusively (in
 * ascending order, so calls on several keys cannot deadlock) from reading
 * the state to taking the tokens; nothing in between reads a table or
 * waits for anything else.  Commit and abort take each partition on its
 * own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <sys/stat.h>

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "access/xlog.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "compat.h"
#include "names.h"
#include "memory.h"
#include "sha256.h"

#define MEM_PARTITIONS 128
#define MEM_STATE_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/ratelimit_memory.state"
#define MEM_RUNNING_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/ratelimit_memory.running"
#define MEM_FILE_MAGIC 0x524c4d32	/* "RLM2" */
#define MEM_DSM_NAME "ratelimit_memory"
#define MEM_DSM_SIZE_NAME "ratelimit_memory_size"
#define MEM_TRANCHE_NAME "ratelimit_memory"
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
 * The state file: this header, count entries, then the trailer: the
 * store's empty_since and a CRC-32C of everything before it.
 */
typedef struct MemFileHeader
{
	uint32		magic;
	uint32		pg_major;		/* PG_VERSION_NUM / 100 */
	uint32		entry_size;		/* sizeof(MemEntry) */
	uint32		count;
} MemFileHeader;

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
	int			tranche;
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

typedef enum MemStorage
{
	MEM_NONE,
	MEM_SHMEM,
	MEM_DSM
} MemStorage;

static const char *const storage_names[] = {
	[MEM_NONE] = "unavailable",
	[MEM_SHMEM] = "shared memory",
	[MEM_DSM] = "dsm registry",
};

typedef enum MemAfterCrash
{
	AFTER_CRASH_FULL,
	AFTER_CRASH_EMPTY
} MemAfterCrash;

static const struct config_enum_entry after_crash_options[] = {
	{"full", AFTER_CRASH_FULL, false},
	{"empty", AFTER_CRASH_EMPTY, false},
	{NULL, 0, false}
};

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
	bool		unblocked_only; /* CHANGE_BLOCK: skipped if then blocked */
	bool		pinned;			/* CHANGE_RESET: its entry pinned */
	int64		origin;
	TimestampTz at;				/* when taken */
	double		amount;
	int64		duration;
	uint64		epoch;
} MemChange;

static int	memory_max_keys = 100000;
static int	memory_max_keys_per_database = -1;
static bool memory_inline = false;
static int	memory_after_crash = AFTER_CRASH_FULL;

static MemStorage storage = MEM_NONE;
static MemShared *shared = NULL;
static bool postmaster_started = false;

static MemChange *changes = NULL;
static int	nchanges = 0;
static int	maxchanges = 0;
static bool names_changed = false;
static bool counted_changing = false;	/* this backend raised changing */
static uint64 barrier_epoch = 0;	/* the epoch its pre-commit bump made */
static bool held[MEM_PARTITIONS];
static int	nheld = 0;			/* partitions held, in held_list */
static int	held_list[MEM_PARTITIONS];
static bool callbacks_registered = false;
static Oid	gc_space = InvalidOid;	/* rl_gc's rl_definitions (standby) */
/* the last transaction of this backend that dropped a table */
static TransactionId dropped_relation_xid = InvalidTransactionId;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static int32 *
store_buckets(MemShared *s)
{
	return (int32 *) ((char *) s + MAXALIGN(sizeof(MemShared)));
}

static MemEntry *
store_entries(MemShared *s)
{
	return (MemEntry *) ((char *) store_buckets(s) +
						 MAXALIGN(sizeof(int32) * s->nbuckets));
}

/* The epoch slot of a database. */
static MemEpoch *
epoch_of(MemShared *s, Oid dbid)
{
	return &s->epochs[murmurhash32((uint32) dbid) % MEM_EPOCH_SLOTS];
}

static uint32
buckets_for(int32 max_keys)
{
	uint32		n = MEM_PARTITIONS;

	while (n < (uint32) max_keys)
		n <<= 1;
	return n;
}

/* The bytes of a store of max_keys entries. */
static Size
store_size(int32 max_keys)
{
	Size		size = MAXALIGN(sizeof(MemShared));

	size = add_size(size, MAXALIGN(mul_size(sizeof(int32), buckets_for(max_keys))));
	return add_size(size, mul_size(sizeof(MemEntry), max_keys));
}

/* An empty store; tranche is the LWLock tranche of its partitions. */
static void
store_init(MemShared *s, int32 max_keys, int tranche)
{
	MemEntry   *entries;

	s->tranche = tranche;
	s->max_keys = max_keys;
	s->nbuckets = buckets_for(max_keys);
	SpinLockInit(&s->mutex);
	s->used = 0;
	memset(s->dbs, 0, sizeof(s->dbs));
	s->full_errors = 0;
	s->empty_since = 0;
	for (int i = 0; i < MEM_EPOCH_SLOTS; i++)
	{
		pg_atomic_init_u64(&s->epochs[i].epoch, 0);
		pg_atomic_init_u32(&s->epochs[i].changing, 0);
	}
	if (!pg_strong_random(&s->seed, sizeof(s->seed)))
		s->seed = (uint64) GetCurrentTimestamp() ^ (uint64) MyProcPid;
	for (int i = 0; i < MEM_PARTITIONS; i++)
		LWLockInitialize(&s->locks[i].lock, tranche);
	memset(store_buckets(s), 0xff, sizeof(int32) * s->nbuckets);
	entries = store_entries(s);
	for (int32 i = 0; i < max_keys; i++)
		entries[i].next = i + 1 < max_keys ? i + 1 : -1;
	s->free_head = max_keys > 0 ? 0 : -1;
}

/*
 * The bucket of an id, hashed with the store's secret seed: ids are
 * SHA-256 digests anyone can compute, and without the seed a caller could
 * grind keys into one bucket and make its chain long.
 */
static uint32
bucket_hash(MemShared *s, const uint8 *id)
{
	return (uint32) hash_bytes_extended(id, RL_MEMORY_ID_BYTES, s->seed);
}

/* The entry with this id in its bucket (the partition held); NULL if none. */
static MemEntry *
entry_find(MemShared *s, const uint8 *id, uint32 bucket, int32 **link)
{
	MemEntry   *entries = store_entries(s);
	int32	   *at = &store_buckets(s)[bucket];

	while (*at >= 0)
	{
		MemEntry   *e = &entries[*at];

		if (memcmp(e->id, id, RL_MEMORY_ID_BYTES) == 0)
		{
			if (link)
				*link = at;
			return e;
		}
		at = &e->next;
	}
	return NULL;
}

/* Unlink an entry (its partition held) and put it on the free list. */
static void
entry_remove(MemShared *s, int32 *link)
{
	int32		e = *link;
	MemEntry   *entry = &store_entries(s)[e];

	*link = entry->next;
	SpinLockAcquire(&s->mutex);
	entry->next = s->free_head;
	s->free_head = e;
	s->used--;
	s->dbs[entry->dbslot].used--;
	SpinLockRelease(&s->mutex);
}

/*
 * The index of a database's count (s->mutex held): its own, claimed when
 * it has none and one is free, or else the shared one.  A backend's
 * database never changes, so it remembers where its count was.
 */
static int
db_slot(MemShared *s, Oid dbid)
{
	static int	mine = -1;
	int			slot = -1;

	if (dbid == MyDatabaseId && mine >= 0 && s->dbs[mine].dbid == dbid)
		return mine;
	for (int i = 0; i < MEM_DB_SLOTS; i++)
	{
		if (s->dbs[i].dbid == dbid)
		{
			slot = i;
			break;
		}
		if (slot < 0 && s->dbs[i].used == 0)
			slot = i;
	}
	if (slot < 0)
		return MEM_DB_SHARED;
	s->dbs[slot].dbid = dbid;
	if (dbid == MyDatabaseId)
		mine = slot;
	return slot;
}

/*
 * Whether this database may add an entry under
 * memory_max_keys_per_database (s->mutex held); *slot: its count.
 */
static bool
db_room(MemShared *s, int *slot)
{
	*slot = db_slot(s, MyDatabaseId);
	return memory_max_keys_per_database < 0 ||
		s->dbs[*slot].used < memory_max_keys_per_database;
}

static int64 refill_bound(const RlPolicy *policy, double value);

/*
 * After a crash with memory_after_crash = 'empty', a key with no entry
 * counts as emptied at the restart: an entry means the same as none only
 * once such a key would have refilled too.  The earliest time it does
 * under policy (0 when the store did not start empty).
 */
static int64
empty_refilled_at(MemShared *s, const RlPolicy *policy)
{
	int64		bound;

	if (s->empty_since == 0)
		return 0;
	bound = refill_bound(policy, 0);
	if (bound >= MEM_NEVER - Max(s->empty_since, 0))
		return MEM_NEVER;
	return s->empty_since + bound;
}

/*
 * Whether an entry can be dropped for being idle, on the judgement made
 * when it was last written: an inline policy never changes; a defined one
 * may have since, and then only a judgement of the current epoch counts.
 * On a hot standby a definition change is replayed without a trigger and
 * bumps no epoch, so only rl_gc, judging under the definitions it reads,
 * drops a defined limit's entry there.
 */
static bool
droppable(MemShared *s, const MemEntry *e, TimestampTz now)
{
	if (e->holders > 0)
		return false;
	/* a missing key's state, whatever the policy */
	if (e->untouched)
		return true;
	if (e->idle_at > now || e->owed != 0)
		return false;
	if (e->is_inline)
		return true;
	return e->judged == pg_atomic_read_u64(&epoch_of(s, e->dbid)->epoch) &&
		pg_atomic_read_u32(&epoch_of(s, e->dbid)->changing) == 0 &&
		!RecoveryInProgress();
}

static RlState landed(const MemEntry *e, const RlPolicy *policy, int64 origin);

/*
 * Whether an entry no transaction holds is idle at now under policy, the
 * one in force for its name: judged from its own time as the window
 * phase, which never finds a window start earlier than the real one.
 */
static bool
idle_under(const MemEntry *e, const RlPolicy *policy, TimestampTz now)
{
	int64		idle;

	return e->holders == 0 && empty_refilled_at(shared, policy) <= now &&
		rl_idle_at(policy, e->committed.ts,
				   landed(e, policy, e->committed.ts), now, &idle) &&
		idle <= now;
}

/*
 * A call that makes room: its limit's name and policy, in force in the
 * epoch it read before the policy, so its sweep can judge the entries of
 * that name afresh (those a definition change left unjudged).
 */
typedef struct MemJudge
{
	const RlMemoryKey *key;
	const RlPolicy *policy;
	uint64		epoch;
} MemJudge;

/*
 * Whether the judge can judge e: an entry of its name, whose keys all have
 * the name's policy (no overrides: an entry does not tell whose key it
 * is), with that policy still in force (checked with the partition held:
 * epoch_barrier takes it before a change becomes visible).
 */
static bool
judge_fits(MemShared *s, const MemJudge *judge, const MemEntry *e)
{
	return judge != NULL && !judge->policy->overrides &&
		!e->is_inline && !e->untouched &&
		e->dbid == MyDatabaseId && e->space == judge->key->space &&
		memcmp(e->name_id, judge->key->name_id, RL_MEMORY_NAME_ID_BYTES) == 0 &&
		judge->epoch < RL_MEMORY_EPOCH_UNTRACKED && !RecoveryInProgress() &&
		judge->epoch == pg_atomic_read_u64(&epoch_of(s, e->dbid)->epoch) &&
		pg_atomic_read_u32(&epoch_of(s, e->dbid)->changing) == 0;
}

/* Whether a walk over a partition drops an entry (partition_drop). */
typedef bool (*MemDropTest) (MemShared *s, const MemEntry *e, void *arg);

/*
 * Drop the entries of one partition (held exclusively) that drop says
 * to, at most max of them; returns how many went.
 */
static uint64
partition_drop(MemShared *s, int partition, MemDropTest drop, void *arg,
			   uint64 max)
{
	int32	   *buckets = store_buckets(s);
	MemEntry   *entries = store_entries(s);
	uint64		freed = 0;

	for (uint32 b = partition; b < s->nbuckets && freed < max;
		 b += MEM_PARTITIONS)
	{
		int32	   *at = &buckets[b];

		while (*at >= 0 && freed < max)
		{
			MemEntry   *e = &entries[*at];

			if (drop(s, e, arg))
			{
				entry_remove(s, at);
				freed++;
			}
			else
				at = &e->next;
		}
	}
	return freed;
}

/* What a sweep for room judges by: the time, and the call's judge. */
typedef struct MemSweep
{
	TimestampTz now;
	const MemJudge *judge;
} MemSweep;

static bool
sweep_drops(MemShared *s, const MemEntry *e, void *arg)
{
	const MemSweep *sweep = arg;

	return droppable(s, e, sweep->now) ||
		(judge_fits(s, sweep->judge, e) &&
		 idle_under(e, sweep->judge->policy, sweep->now));
}

/* Drop the droppable entries of one partition (held exclusively). */
static int
partition_sweep(MemShared *s, int partition, TimestampTz now,
				const MemJudge *judge)
{
	MemSweep	sweep = {now, judge};

	return (int) partition_drop(s, partition, sweep_drops, &sweep,
								PG_UINT64_MAX);
}

/*
 * A free entry, dropping idle ones when there is none: every partition
 * this backend holds, and every other one it can take without waiting (so
 * a sweep never waits while holding partitions).  The judge's own name's
 * entries are judged under its policy, so a limit redefined while the
 * store is full makes room for its own new keys.  -1 when none is free.
 */
static int32
entry_alloc(MemShared *s, TimestampTz now, const MemJudge *judge)
{
	int32		e;
	int			slot;

	for (int round = 0; round < 2; round++)
	{
		SpinLockAcquire(&s->mutex);
		e = db_room(s, &slot) ? s->free_head : -1;
		if (e >= 0)
		{
			s->free_head = store_entries(s)[e].next;
			s->used++;
			s->dbs[slot].used++;
			store_entries(s)[e].dbslot = slot;
		}
		SpinLockRelease(&s->mutex);
		if (e >= 0 || round > 0)
			return e;
		for (int p = 0; p < MEM_PARTITIONS; p++)
		{
			if (held[p])
				partition_sweep(s, p, now, judge);
			else if (LWLockConditionalAcquire(&s->locks[p].lock, LW_EXCLUSIVE))
			{
				partition_sweep(s, p, now, judge);
				LWLockRelease(&s->locks[p].lock);
			}
		}
	}
	return -1;
}

/*
 * Write every entry to the state file: the postmaster, exiting normally
 * (code 0).  After a crash, or a shutdown that failed (a PANIC, a child
 * killed), it runs this with code 1 and nothing is written.  Takes of
 * transactions that never ended are kept.  The marker of a running server
 * goes only once the file is durably in place: a shutdown that could not
 * save the store leaves it, and the next start is one after a crash.
 */
static void
memory_shmem_shutdown(int code, Datum arg)
{
	FILE	   *file;
	MemFileHeader header = {
		.magic = MEM_FILE_MAGIC,
		.pg_major = PG_VERSION_NUM / 100,
		.entry_size = sizeof(MemEntry),
	};
	pg_crc32c	crc;
	MemEntry   *entries;
	int32	   *buckets;

	if (code != 0 || shared == NULL)
		return;
	file = AllocateFile(MEM_STATE_FILE ".tmp", PG_BINARY_W);
	if (file == NULL)
		goto error;
	entries = store_entries(shared);
	buckets = store_buckets(shared);
	/* the entries linked (used counts one a killed backend left unlinked) */
	for (uint32 b = 0; b < shared->nbuckets; b++)
		for (int32 i = buckets[b]; i >= 0; i = entries[i].next)
			header.count++;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &header, sizeof(header));
	if (fwrite(&header, sizeof(header), 1, file) != 1)
		goto error;
	for (uint32 b = 0; b < shared->nbuckets; b++)
		for (int32 i = buckets[b]; i >= 0; i = entries[i].next)
		{
			MemEntry	saved = entries[i];

			/* a judgement of the last epoch stays good in the next run's first */
			saved.judged = saved.judged ==
				pg_atomic_read_u64(&epoch_of(shared, saved.dbid)->epoch) ?
				0 : PG_UINT64_MAX;

			/*
			 * What is owed lands with no policy to refill under: taken from
			 * the state as it was at its latest commit, never refilled, and a
			 * refund owed dropped (fail closed); judged in no epoch.
			 */
			if (saved.owed != 0)
			{
				if (saved.owed > 0)
				{
					saved.committed.value -= saved.owed;
					saved.committed.ts = Max(saved.committed.ts, saved.owed_at);
				}
				saved.owed = 0;
				saved.judged = PG_UINT64_MAX;
			}

			/*
			 * Entries still held: only an immediate shutdown leaves them.
			 * Takes of transactions it cut off are kept, taken now: the
			 * store cannot tell one whose commit record is already flushed
			 * (recovery keeps it; it may be waiting for a synchronous
			 * standby) from one recovery aborts, and losing a committed take
			 * would let its tokens be granted twice.  Taken from the state as
			 * it was, never refilled, at the latest of its time, now and the
			 * last take's (a clock ahead of this one, or stepped back): never
			 * more tokens than the real take would leave.  Its idle_at,
			 * computed before those takes (or other commits while it was
			 * held), is replaced by the bound hold_note kept; judged in no
			 * epoch, so a defined limit's entry waits for a call or rl_gc
			 * under the policy then in force.
			 */
			if (saved.holders > 0)
			{
				TimestampTz latest = saved.idle_at;
				int64		bound = (int64) entries[i].judged;

				if (saved.pending > 0 || saved.block_held)
				{
					TimestampTz now = GetCurrentTimestamp();

					saved.committed.value -= saved.pending;
					saved.committed.ts = Max(saved.committed.ts, Max(now, latest));
					saved.untouched = false;
				}

				/*
				 * A block queued by a cut-off transaction is kept too, for
				 * the same reason: nothing until the latest time hold_note
				 * kept, which is at least the block's, and from empty then.
				 */
				if (saved.block_held)
					saved.committed.value = fmin(saved.committed.value, 0);
				saved.idle_at = bound >= MEM_NEVER - Max(saved.committed.ts, 0) ?
					MEM_NEVER : saved.committed.ts + bound;
				saved.judged = PG_UINT64_MAX;
			}
			saved.pending = 0;
			saved.holders = 0;
			saved.block_held = false;
			COMP_CRC32C(crc, &saved, sizeof(MemEntry));
			if (fwrite(&saved, sizeof(MemEntry), 1, file) != 1)
				goto error;
		}

	/*
	 * After a crash with memory_after_crash = 'empty', a key with no entry
	 * counts as emptied at that restart: it still does after this shutdown.
	 */
	COMP_CRC32C(crc, &shared->empty_since, sizeof(shared->empty_since));
	FIN_CRC32C(crc);
	if (fwrite(&shared->empty_since, sizeof(shared->empty_since), 1, file) != 1 ||
		fwrite(&crc, sizeof(crc), 1, file) != 1)
		goto error;
	if (FreeFile(file))
	{
		file = NULL;
		goto error;
	}
	/* it fsyncs the file and the directory, and logs a failure */
	if (durable_rename(MEM_STATE_FILE ".tmp", MEM_STATE_FILE, LOG) != 0)
	{
		unlink(MEM_STATE_FILE ".tmp");
		return;
	}
	unlink(MEM_RUNNING_FILE);
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", MEM_STATE_FILE ".tmp")));
	if (file)
		FreeFile(file);
	unlink(MEM_STATE_FILE ".tmp");
}

/* Put an entry read back from the state file into the store. */
static void
store_restore(MemShared *s, const MemEntry *saved)
{
	uint32		bucket;
	int32		e;
	int			slot = MEM_DB_SHARED;
	MemEntry   *entry;

	bucket = bucket_hash(s, saved->id) & (s->nbuckets - 1);
	if (entry_find(s, saved->id, bucket, NULL) != NULL)
		return;
	SpinLockAcquire(&s->mutex);
	e = s->free_head;
	if (e >= 0)
	{
		slot = db_slot(s, saved->dbid);
		s->free_head = store_entries(s)[e].next;
		s->used++;
		s->dbs[slot].used++;
	}
	SpinLockRelease(&s->mutex);
	if (e < 0)
		return;
	entry = &store_entries(s)[e];
	*entry = *saved;
	entry->dbslot = slot;
	entry->next = store_buckets(s)[bucket];
	store_buckets(s)[bucket] = e;
}

/* Apply ratelimit.memory_after_crash to a store that starts after a crash. */
static void
after_crash(MemShared *s)
{
	if (memory_after_crash == AFTER_CRASH_EMPTY)
		s->empty_since = GetCurrentTimestamp();
}

/*
 * Whether an entry read from the state file holds only values a shutdown
 * writes: finite amounts, nothing pending or owed, times a timestamptz can
 * hold.
 */
static bool
entry_sane(const MemEntry *e)
{
	uint8		flags[3];

	/* read as bytes: a bool holding anything but 0 or 1 is undefined */
	memcpy(&flags[0], &e->is_inline, 1);
	memcpy(&flags[1], &e->untouched, 1);
	memcpy(&flags[2], &e->block_held, 1);
	return isfinite(e->committed.value) &&
		!isinf(e->committed.prev) &&
		e->committed.ts >= RL_MIN_TIME && e->committed.ts < RL_END_TIME &&
		e->pending == 0 && e->holders == 0 && e->owed == 0 &&
		(e->owed_at == 0 ||
		 (e->owed_at >= RL_MIN_TIME && e->owed_at < RL_END_TIME)) &&
		flags[0] <= 1 && flags[1] <= 1 && flags[2] == 0 &&
		(e->judged == 0 || e->judged == PG_UINT64_MAX);
}

/*
 * Check the state file, open at its start, before anything in it is
 * trusted: this build's magic number, major and entry size, as many entries
 * as the header says, each sane, the trailer, a matching checksum, and
 * nothing after it.  NULL when it is valid (then *header and *empty_since
 * are set), otherwise why not, a sentence for errdetail.
 */
static const char *
state_file_problem(FILE *file, MemFileHeader *header, TimestampTz *empty_since)
{
	pg_crc32c	crc;
	pg_crc32c	saved_crc;
	bool		sane = true;

	if (fread(header, sizeof(*header), 1, file) != 1)
		return "It is shorter than its header.";
	if (header->magic != MEM_FILE_MAGIC ||
		header->pg_major != PG_VERSION_NUM / 100 ||
		header->entry_size != sizeof(MemEntry))
		return "It was written by another version of ratelimit or PostgreSQL, or its header is damaged.";
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, header, sizeof(*header));
	for (uint32 i = 0; i < header->count; i++)
	{
		MemEntry	saved;

		if (fread(&saved, sizeof(MemEntry), 1, file) != 1)
			return "It is truncated.";
		COMP_CRC32C(crc, &saved, sizeof(MemEntry));
		sane = sane && entry_sane(&saved);
	}
	if (fread(empty_since, sizeof(*empty_since), 1, file) != 1 ||
		fread(&saved_crc, sizeof(saved_crc), 1, file) != 1)
		return "It is truncated.";
	COMP_CRC32C(crc, empty_since, sizeof(*empty_since));
	FIN_CRC32C(crc);
	if (!EQ_CRC32C(crc, saved_crc))
		return "Its checksum does not match its contents.";
	if (fgetc(file) != EOF)
		return "It has bytes after its end.";
	if (!sane || (*empty_since != 0 &&
				  (*empty_since < RL_MIN_TIME || *empty_since >= RL_END_TIME)))
		return "It holds values a shutdown never writes.";
	return NULL;
}

/*
 * Read back what the last clean shutdown wrote, then remove the file, so
 * that a crash later never brings back state older than the crash.  A file
 * that cannot be read, or is not valid, restores nothing: the start is
 * one after a crash (ratelimit.memory_after_crash decides).  No file is a
 * first start.
 */
static void
memory_load(MemShared *s)
{
	FILE	   *file = AllocateFile(MEM_STATE_FILE, PG_BINARY_R);
	MemFileHeader header;
	const char *problem;
	uint32		lost = 0;
	TimestampTz empty_since;
	TimestampTz now = rl_clock_now();

	if (file == NULL)
	{
		if (errno == ENOENT)
			return;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", MEM_STATE_FILE),
				 errdetail("The memory store starts as after a crash.")));
		unlink(MEM_STATE_FILE);
		after_crash(s);
		return;
	}
	problem = state_file_problem(file, &header, &empty_since);
	if (problem != NULL)
	{
		ereport(LOG,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("ignoring ratelimit memory store file \"%s\"",
						MEM_STATE_FILE),
				 errdetail("%s Nothing is restored from it, and the memory store starts as after a crash.",
						   problem)));
		FreeFile(file);
		unlink(MEM_STATE_FILE);
		after_crash(s);
		return;
	}

	/*
	 * Entries that still mean something first, then the idle ones (which
	 * mean the same as none, as droppable judges them) while there is room:
	 * a store made smaller since loses idle entries before live ones.
	 */
	for (int pass = 0; pass < 2; pass++)
	{
		if (fseek(file, sizeof(header), SEEK_SET) != 0)
			break;
		for (uint32 i = 0; i < header.count; i++)
		{
			MemEntry	saved;
			bool		idle;

			if (fread(&saved, sizeof(MemEntry), 1, file) != 1)
				break;
			idle = saved.untouched ||
				(saved.idle_at <= now && (saved.is_inline || saved.judged == 0));
			if (idle != (pass == 1))
				continue;
			if (s->used < s->max_keys)
				store_restore(s, &saved);
			else if (!idle)
				lost++;
		}
	}
	s->empty_since = empty_since;
	if (lost > 0)
		ereport(LOG,
				(errmsg("%u keys of the ratelimit memory store that were not idle were not restored", lost),
				 errdetail("ratelimit.memory_max_keys is %d.", s->max_keys)));
	FreeFile(file);
	unlink(MEM_STATE_FILE);
}

/* Note that the server runs, so that a start after a crash can tell. */
static void
mark_running(void)
{
	FILE	   *file = AllocateFile(MEM_RUNNING_FILE, PG_BINARY_W);

	if (file == NULL || FreeFile(file) != 0)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", MEM_RUNNING_FILE)));
}

static void
memory_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(store_size(memory_max_keys));
}

/*
 * shmem_startup_hook: the store, made and filled from the state file in
 * the postmaster (at start, and after a backend crash, when it is a
 * restart after a crash), found in other processes.
 */
static void
memory_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("ratelimit memory store",
							 store_size(memory_max_keys), &found);
	if (!found)
		store_init(shared, memory_max_keys,
				   compat_lwlock_new_tranche(MEM_TRANCHE_NAME));
	LWLockRelease(AddinShmemInitLock);
	compat_lwlock_register_tranche(shared->tranche, MEM_TRANCHE_NAME);
	if (!IsUnderPostmaster && !found)
	{
		struct stat st;
		bool		crashed = postmaster_started ||
			stat(MEM_RUNNING_FILE, &st) == 0;

		/* shmem_exit forgets it when shared memory is reinitialised */
		on_shmem_exit(memory_shmem_shutdown, (Datum) 0);
		postmaster_started = true;
		if (crashed)
		{
			unlink(MEM_STATE_FILE);
			after_crash(shared);
		}
		else
			memory_load(shared);
		mark_running();
	}
}

#ifdef COMPAT_HAS_DSM_REGISTRY
static int32 dsm_max_keys;

static void
init_dsm_size(void *ptr)
{
	*(int32 *) ptr = memory_max_keys;
}

static void
init_dsm_store(void *ptr)
{
	store_init(ptr, dsm_max_keys, compat_lwlock_new_tranche(MEM_TRANCHE_NAME));
	/* nothing was saved: every start is one after a crash */
	after_crash(ptr);
}
#endif

static void memory_xact_callback(XactEvent event, void *arg);
static void memory_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									SubTransactionId parentSubid, void *arg);
static void memory_release_callback(ResourceReleasePhase phase, bool isCommit,
									bool isTopLevel, void *arg);
static void memory_relcache_callback(Datum arg, Oid relid);
static void epoch_barrier(void);
static void memory_object_access(ObjectAccessType access, Oid classId,
								 Oid objectId, int subId, void *arg);

static object_access_hook_type prev_object_access_hook = NULL;

/* The store, attached if needed; an error when it is unavailable. */
static MemShared *
store(void)
{
	if (shared == NULL)
	{
#ifdef COMPAT_HAS_DSM_REGISTRY
		if (storage == MEM_DSM)
		{
			bool		found;
			int32	   *size;

			size = compat_get_named_dsm_segment(MEM_DSM_SIZE_NAME,
												sizeof(int32), init_dsm_size,
												&found);
			dsm_max_keys = *size;
			shared = compat_get_named_dsm_segment(MEM_DSM_NAME,
												  store_size(dsm_max_keys),
												  init_dsm_store, &found);
			compat_lwlock_register_tranche(shared->tranche, MEM_TRANCHE_NAME);
		}
#endif
		if (shared == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the ratelimit memory store is not available"),
					 errdetail("On PostgreSQL 15 and 16 it needs the library preloaded."),
					 errhint("Add ratelimit to shared_preload_libraries and restart the server.")));
	}
	if (!callbacks_registered)
	{
		RegisterXactCallback(memory_xact_callback, NULL);
		RegisterSubXactCallback(memory_subxact_callback, NULL);
		RegisterResourceReleaseCallback(memory_release_callback, NULL);
		CacheRegisterRelcacheCallback(memory_relcache_callback, (Datum) 0);
		callbacks_registered = true;
	}
	return shared;
}

/*
 * The context of a setting that sizes shared memory.  Preloaded,
 * PGC_POSTMASTER: the postmaster asked for the memory at start and makes
 * it again at that size after a crash, so a reload must not change the
 * size it reads then.  Not preloaded, PGC_SIGHUP: a library loaded after
 * start may not define a PGC_POSTMASTER setting, and the first user sizes
 * the segment in the DSM registry for good anyway.
 */
GucContext
rl_sizing_context(void)
{
	return process_shared_preload_libraries_in_progress ?
		PGC_POSTMASTER : PGC_SIGHUP;
}

/* Define the settings and find where the store lives; from _PG_init. */
void
rl_memory_init(void)
{
	DefineCustomIntVariable("ratelimit.memory_max_keys",
							"Sets the most keys the memory store holds.",
							"Read when the store is created: at server start when preloaded (a change needs a restart), by the first memory call otherwise.",
							&memory_max_keys,
							100000,
							MEM_PARTITIONS,
							INT_MAX / 2,
							rl_sizing_context(),
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("ratelimit.memory_max_keys_per_database",
							"Sets the most keys of the memory store one database holds.",
							"-1: no bound but the store's own.",
							&memory_max_keys_per_database,
							-1,
							-1,
							INT_MAX / 2,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("ratelimit.inline_memory",
							 "Allows inline configs with storage 'memory'.",
							 "The memory store is shared by every database of the server: only a superuser, or a role granted SET on it, turns it on (for a role with ALTER ROLE ... SET).",
							 &memory_inline,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("ratelimit.memory_after_crash",
							 "Sets how memory limits start after a crash: every key full, or empty.",
							 "Read when the store is created after a crash (or, not preloaded, at its creation).",
							 &memory_after_crash,
							 AFTER_CRASH_FULL,
							 after_crash_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	prev_object_access_hook = object_access_hook;
	object_access_hook = memory_object_access;
	if (process_shared_preload_libraries_in_progress)
	{
		storage = MEM_SHMEM;
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = memory_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = memory_shmem_startup;
	}
#ifdef COMPAT_HAS_DSM_REGISTRY
	else
		storage = MEM_DSM;
#endif
}

/* Feed one length-prefixed field to a digest. */
static void
digest_field(RlSha256 *ctx, const void *data, uint32 len)
{
	rl_sha256_update(ctx, &len, sizeof(len));
	rl_sha256_update(ctx, data, len);
}

/*
 * SHA-256 of (what, database, space, name[, key]), every field prefixed
 * with its length, so that no two different tuples feed the same bytes.
 */
static void
digest(char what, Oid space, text *name, text *key, uint8 *out)
{
	RlSha256	ctx;
	Oid			db = MyDatabaseId;

	rl_sha256_init(&ctx);
	digest_field(&ctx, &what, 1);
	digest_field(&ctx, &db, sizeof(Oid));
	digest_field(&ctx, &space, sizeof(Oid));
	digest_field(&ctx, VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	if (key)
		digest_field(&ctx, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	rl_sha256_final(&ctx, out);
}

/* The id of a stored name, for changes to its definition. */
void
rl_memory_name_id(Oid space, text *name, uint8 *name_id)
{
	uint8		full[RL_SHA256_BYTES];

	digest('n', space, name, NULL, full);
	memcpy(name_id, full, RL_MEMORY_NAME_ID_BYTES);
}

/*
 * The address of (stored name, key) in this database and extension
 * (space: the OID of its rl_definitions, which DROP and CREATE EXTENSION
 * change).  Attaches the store: an error when it is unavailable.
 */
void
rl_memory_key(Oid space, text *name, text *key, RlMemoryKey *k)
{
	MemShared  *s = store();
	uint32		h;

	StaticAssertStmt(RL_MEMORY_ID_BYTES == RL_SHA256_BYTES,
					 "an id is a SHA-256 digest");
	digest('k', space, name, key, k->id);
	rl_memory_name_id(space, name, k->name_id);
	k->space = space;
	k->is_inline = memchr(VARDATA_ANY(name), RL_INLINE_SEPARATOR,
						  VARSIZE_ANY_EXHDR(name)) != NULL;
	h = bucket_hash(s, k->id);
	k->bucket = h & (s->nbuckets - 1);
	k->partition = (int) (k->bucket % MEM_PARTITIONS);
}

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
	if (shared == NULL || RecoveryInProgress() || names_changed ||
		pg_atomic_read_u32(&epoch_of(shared, MyDatabaseId)->changing) != 0)
		return PG_UINT64_MAX;
	return pg_atomic_read_u64(&epoch_of(shared, MyDatabaseId)->epoch);
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
	MemShared  *s = store();

	/* its own uncommitted definitions would be what it reads */
	if (names_changed ||
		pg_atomic_read_u32(&epoch_of(s, MyDatabaseId)->changing) != 0)
		return PG_UINT64_MAX;
	return pg_atomic_read_u64(&epoch_of(s, MyDatabaseId)->epoch);
}

/* Order partitions ascending. */
static int
compare_partitions(const void *a, const void *b)
{
	return *(const int *) a - *(const int *) b;
}

/*
 * Hold the partitions of keys exclusively, in ascending order (so calls
 * on several keys never wait for each other in a cycle).
 */
void
rl_memory_lock(const RlMemoryKey *keys, int n)
{
	MemShared  *s = store();
	int		   *want;
	int			nwant = 0;

	Assert(nheld == 0);
	if (n == 1)
		want = (int *) &keys[0].partition;
	else
	{
		bool		seen[MEM_PARTITIONS] = {0};

		want = palloc(sizeof(int) * Min(n, MEM_PARTITIONS));
		for (int i = 0; i < n; i++)
			if (!seen[keys[i].partition])
			{
				seen[keys[i].partition] = true;
				want[nwant++] = keys[i].partition;
			}
		qsort(want, nwant, sizeof(int), compare_partitions);
	}
	if (n == 1)
		nwant = 1;
	for (int i = 0; i < nwant; i++)
	{
		LWLockAcquire(&s->locks[want[i]].lock, LW_EXCLUSIVE);
		held[want[i]] = true;
		held_list[nheld++] = want[i];
	}
}

/* Let go of every partition this backend holds. */
void
rl_memory_unlock(void)
{
	while (nheld > 0)
	{
		int			p = held_list[--nheld];

		held[p] = false;
		LWLockRelease(&shared->locks[p].lock);
	}
}

/* After an error: LWLockReleaseAll let go of every partition. */
static void
forget_held(void)
{
	while (nheld > 0)
		held[held_list[--nheld]] = false;
}

/*
 * The state of a key with no entry: full, or, after a crash with
 * ratelimit.memory_after_crash = 'empty', emptied at the restart (or now,
 * when the clock reads earlier than the restart: still empty).
 */
static void
missing_state(MemShared *s, const RlPolicy *policy, int64 origin,
			  TimestampTz now, RlState *state)
{
	TimestampTz at = s->empty_since != 0 && s->empty_since < now ?
		s->empty_since : now;

	if (rl_initial_state(policy, origin, at, state) != RL_DECIDED)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("rate limit state would fall outside the timestamp range")));
	if (s->empty_since != 0)
		state->value = 0;
}

/*
 * The committed state with what is owed landed under policy, the policy
 * the reader knows to be in force: at owed_at, the latest commit of what
 * is owed (or the state's own time, when later), so each take lands no
 * earlier than it committed, which never leaves more tokens than landing
 * when it committed; a refund that cannot be decided is dropped.
 */
static RlState
landed(const MemEntry *e, const RlPolicy *policy, int64 origin)
{
	TimestampTz at = Max(e->owed_at, e->committed.ts);
	RlState		out;

	if (e->owed > 0)
		return rl_commit_take(policy, origin, e->committed, at, at, e->owed);
	if (e->owed < 0 &&
		rl_refund_state(policy, origin, &e->committed, at, -e->owed,
						&out) == RL_DECIDED)
		return out;
	return e->committed;
}

/*
 * Whether the policy a change of this transaction (or a call) read is the
 * one in force, its partition held: an inline policy never changes;
 * otherwise no definition change may have committed or be committing
 * since the epoch it read before its policy (epoch_barrier orders the
 * check against a change becoming visible).  On a hot standby a replayed
 * change bumps no epoch, nor does a hand edit while rl_definitions'
 * trigger is disabled: there the policy read counts as in force (or every
 * commit would be owed, and never folded).
 */
static bool
policy_in_force(MemShared *s, const MemEntry *e, uint64 epoch)
{
	return e->is_inline || RecoveryInProgress() ||
		epoch == RL_MEMORY_EPOCH_UNTRACKED ||
		(epoch != PG_UINT64_MAX &&
		 epoch == pg_atomic_read_u64(&epoch_of(s, e->dbid)->epoch) &&
		 pg_atomic_read_u32(&epoch_of(s, e->dbid)->changing) == 0);
}

/* Fold what is owed into the committed state, under the policy in force. */
static void
fold_owed(MemEntry *e, const RlPolicy *policy, int64 origin)
{
	if (e->owed == 0)
		return;
	e->committed = landed(e, policy, origin);
	e->owed = 0;
}

/* Something owed, committed at at, under a policy that may be stale. */
static void
owe(MemEntry *e, double amount, TimestampTz at)
{
	e->owed += amount;
	e->owed_at = Max(e->owed_at, at);
	e->untouched = false;
}

/*
 * A take or refund that commits after a definition change: the committed
 * state first brought forward to the call's time under the policy the call
 * decided under, as the table store wrote the row at the time of the call
 * (a take committed after a rate was raised lands from the time of the
 * take, never refilling at the new rate the time before it), whether or
 * not a change was already committing at the call.  At commit only: a
 * call that rolls back leaves the state as it was, as the table store's
 * rollback does.
 */
static void
catch_up(MemEntry *e, const MemChange *c)
{
	if (e->committed.ts < c->at)
		e->committed = rl_refill(&c->policy, c->origin, e->committed, c->at);
}

/*
 * What a call decides on: the committed state less what is pending.  With
 * nothing pending, the state as a row holds it, which the algebra brings
 * forward to now itself, as it does a row's: so retry_after is computed
 * from the state the retry will read, exact to the microsecond.  Pending
 * tokens do not refill until they commit: brought forward to now first.
 */
static void
current(MemShared *s, MemEntry *e, const RlPolicy *policy, int64 origin,
		TimestampTz now, RlState *state)
{
	if (e == NULL)
	{
		missing_state(s, policy, origin, now, state);
		return;
	}
	*state = landed(e, policy, origin);
	if (e->pending == 0)
		return;
	*state = rl_refill(policy, origin, *state, now);
	state->value -= e->pending;
}

/*
 * The state a call decides on, at now, its partition held by
 * rl_memory_lock: what the algebra then brings forward to now adds
 * nothing.
 */
void
rl_memory_get(const RlMemoryKey *k, const RlPolicy *policy, int64 origin,
			  TimestampTz now, RlState *state)
{
	MemShared  *s = store();

	Assert(held[k->partition]);
	current(s, entry_find(s, k->id, k->bucket, NULL), policy, origin, now,
			state);
}

/* The same, for a call that takes nothing (its own shared lock). */
void
rl_memory_read(const RlMemoryKey *k, const RlPolicy *policy, int64 origin,
			   TimestampTz now, RlState *state)
{
	MemShared  *s = store();
	LWLock	   *lock = &s->locks[k->partition].lock;

	if (held[k->partition])
	{
		rl_memory_get(k, policy, origin, now, state);
		return;
	}
	LWLockAcquire(lock, LW_SHARED);
	current(s, entry_find(s, k->id, k->bucket, NULL), policy, origin, now,
			state);
	LWLockRelease(lock);
}

/* Room for one more change of this transaction, before anything changes. */
static MemChange *
next_change(void)
{
	if (nchanges >= maxchanges)
	{
		int			n = Max(16, maxchanges * 2);

		if (changes == NULL)
			changes = MemoryContextAlloc(TopMemoryContext, sizeof(MemChange) * n);
		else
			changes = repalloc(changes, sizeof(MemChange) * n);
		maxchanges = n;
	}
	memset(&changes[nchanges], 0, sizeof(MemChange));
	return &changes[nchanges];
}

/* Raise the error for a store with no room for a new key. */
static void
raise_full(MemShared *s)
{
	int			slot;
	int32		db_used = -1;

	SpinLockAcquire(&s->mutex);
	s->full_errors++;
	if (!db_room(s, &slot))
		db_used = s->dbs[slot].used;
	SpinLockRelease(&s->mutex);
	if (db_used >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("the ratelimit memory store is full for this database"),
				 errdetail("This database holds %d keys of the memory store, none of them idle; ratelimit.memory_max_keys_per_database is %d.",
						   db_used, memory_max_keys_per_database),
				 errhint("Raise ratelimit.memory_max_keys_per_database, or clear this database's entries with rl_memory_forget().")));
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("the ratelimit memory store is full"),
			 errdetail("It holds %d keys, none of them idle.", s->max_keys),
			 errhint("Raise ratelimit.memory_max_keys and restart the server.")));
}

/*
 * The longest a window of a fixed window lasts: a calendar window's
 * period is nominal (a month counts 30 days, a year 365.25), and a real
 * month has up to 31 days of its zone (refill_bound adds its offset
 * changes).
 */
static double
longest_window(const RlPolicy *policy)
{
	switch (policy->calendar.unit)
	{
		case RL_CALENDAR_NONE:
			break;
		case RL_CALENDAR_DAY:
			return (double) RL_USECS_PER_DAY;
		case RL_CALENDAR_WEEK:
			return 7.0 * RL_USECS_PER_DAY;
		case RL_CALENDAR_MONTH:
			return 31.0 * RL_USECS_PER_DAY;
		case RL_CALENDAR_YEAR:
			return 366.0 * RL_USECS_PER_DAY;
	}
	return (double) policy->period;
}

/*
 * How long a state of this value, counted from its ts and left alone,
 * takes to be idle under policy, at most: a token bucket refills the
 * deficit at its rate; a fixed window needs that many windows, and one
 * more for the phase (ts may be any time in its window), each at its
 * longest; calendar windows span that many days of their zone, and the
 * zone's offset at the end may differ from the one at ts by up to a day
 * or so (daylight saving time, a zone that changed sides of the date
 * line): two days more.  MEM_NEVER when that is not a time.
 */
static int64
refill_bound(const RlPolicy *policy, double value)
{
	double		deficit = policy->capacity - value;
	double		d;

	if (!(policy->rate > 0) || policy->period <= 0)
		return MEM_NEVER;
	if (deficit <= 0)
		deficit = 0;
	if (policy->kind == RL_TOKEN_BUCKET)
		d = ceil(deficit * (double) policy->period / policy->rate);
	else
	{
		d = (ceil(deficit / policy->rate) + 1) * longest_window(policy);
		if (policy->calendar.unit != RL_CALENDAR_NONE)
			d += 2.0 * RL_USECS_PER_DAY;
	}
	if (!(d < (double) (MEM_NEVER / 4)))
		return MEM_NEVER;
	return (int64) d;
}

/*
 * A held entry changed at at under policy (its partition held): what an
 * immediate shutdown that saves it held needs (memory_shmem_shutdown),
 * kept in idle_at and judged, which nothing reads while it is held.
 * first: the entry was not held until now.
 */
static void
hold_note(MemEntry *e, const RlPolicy *policy, TimestampTz at, bool first)
{
	int64		bound = refill_bound(policy, e->committed.value - e->pending);

	if (first)
	{
		e->idle_at = at;
		e->judged = (uint64) bound;
		return;
	}
	e->idle_at = Max(e->idle_at, at);
	e->judged = Max(e->judged, (uint64) bound);
}

/*
 * The entry of a key, made (in the state of a key with none) when there is
 * none; its partition held.  Pinned: one more holder.
 */
static MemEntry *
entry_pin(MemShared *s, const RlMemoryKey *k, const RlPolicy *policy,
		  int64 origin, TimestampTz now, uint64 epoch)
{
	MemEntry   *e = entry_find(s, k->id, k->bucket, NULL);
	MemJudge	judge = {k, policy, epoch};
	RlState		fresh;
	int32		i;

	if (e == NULL)
	{
		missing_state(s, policy, origin, now, &fresh);
		i = entry_alloc(s, now, &judge);
		if (i < 0)
			raise_full(s);
		e = &store_entries(s)[i];
		memcpy(e->id, k->id, RL_MEMORY_ID_BYTES);
		memcpy(e->name_id, k->name_id, RL_MEMORY_NAME_ID_BYTES);
		e->dbid = MyDatabaseId;
		e->space = k->space;
		e->is_inline = k->is_inline;
		e->untouched = true;
		e->block_held = false;
		e->committed = fresh;
		e->pending = 0;
		e->owed = 0;
		e->owed_at = 0;
		e->holders = 0;
		e->idle_at = MEM_NEVER;
		e->judged = 0;
		e->next = store_buckets(s)[k->bucket];
		store_buckets(s)[k->bucket] = i;
	}
	hold_note(e, policy, now, e->holders == 0);
	e->holders++;
	return e;
}

/* Note a change, and pin its key's entry when it has one. */
static void
add_change(MemChangeKind kind, const RlMemoryKey *k, const RlPolicy *policy,
		   int64 origin, TimestampTz now, double amount, int64 duration,
		   uint64 epoch)
{
	MemChange  *c = next_change();

	c->kind = kind;
	c->subid = GetCurrentSubTransactionId();
	c->key = *k;
	if (policy)
		c->policy = *policy;
	c->origin = origin;
	c->at = now;
	c->amount = amount;
	c->duration = duration;
	c->epoch = epoch;
	nchanges++;
}

/*
 * Take count tokens, granted at now on the state rl_memory_get returned
 * (the partition still held): seen by every session at once, final at
 * commit, returned by a rollback.  epoch: rl_memory_epoch before the
 * policy was read.
 */
void
rl_memory_take(const RlMemoryKey *k, const RlPolicy *policy, int64 origin,
			   TimestampTz now, double count, uint64 epoch)
{
	MemShared  *s = store();
	MemEntry   *e;

	Assert(held[k->partition]);
	if (count <= 0)
		return;
	(void) next_change();
	e = entry_pin(s, k, policy, origin, now, epoch);
	if (policy_in_force(s, e, epoch))
		fold_owed(e, policy, origin);
	e->pending += count;
	hold_note(e, policy, now, false);
	add_change(CHANGE_TAKE, k, policy, origin, now, count, 0, epoch);
}

/* Change a key when the transaction commits (refund, block, reset). */
void
rl_memory_at_commit(const RlMemoryKey *k, const RlPolicy *policy,
					int64 origin, RlMemoryLater what, double amount,
					int64 duration, uint64 epoch)
{
	MemShared  *s = store();
	MemChangeKind kind = what == RL_MEMORY_REFUND ? CHANGE_REFUND :
		what == RL_MEMORY_RESET ? CHANGE_RESET : CHANGE_BLOCK;

	(void) next_change();
	/* after an 'empty' crash a key with no entry is not full: pin one */
	if (kind != CHANGE_RESET || s->empty_since != 0)
	{
		MemEntry   *e;
		RlState		blocked;

		/* the entry is there to change at commit, where nothing may fail */
		rl_memory_lock(k, 1);
		if (kind == CHANGE_REFUND &&
			entry_find(s, k->id, k->bucket, NULL) == NULL)
		{
			/* a key with no entry is full: a refund changes nothing */
			rl_memory_unlock();
			return;
		}
		e = entry_pin(s, k, policy, origin, rl_clock_now(), epoch);

		/*
		 * A block: what it would store, for an immediate shutdown that
		 * saves the entry still held (memory_shmem_shutdown).
		 */
		if (kind == CHANGE_BLOCK &&
			rl_block_state(policy, origin, &e->committed, rl_clock_now(),
						   duration, &blocked) == RL_DECIDED)
		{
			e->block_held = true;
			blocked.value = fmin(blocked.value, e->committed.value - e->pending);
			hold_note(e, policy, blocked.ts, false);
			e->judged = Max(e->judged,
							(uint64) refill_bound(policy, blocked.value));
		}
		rl_memory_unlock();
	}
	add_change(kind, k, policy, origin, rl_clock_now(), amount, duration,
			   epoch);
	changes[nchanges - 1].unblocked_only = what == RL_MEMORY_BLOCK_UNBLOCKED;
	changes[nchanges - 1].pinned = kind == CHANGE_RESET && s->empty_since != 0;

}

/*
 * Whether this transaction has a block of the key pending (one that a
 * rollback to a savepoint has not dropped), and since when: block_for
 * does not queue a second one.
 */
bool
rl_memory_block_pending(const RlMemoryKey *k, TimestampTz *at)
{
	for (int i = 0; i < nchanges; i++)
		if (changes[i].kind == CHANGE_BLOCK &&
			memcmp(changes[i].key.id, k->id, RL_MEMORY_ID_BYTES) == 0)
		{
			*at = changes[i].at;
			return true;
		}
	return false;
}

/* The amounts of this transaction's changes of a kind to the key. */
static double
own_amount(const RlMemoryKey *k, MemChangeKind kind)
{
	double		own = 0;

	for (int i = 0; i < nchanges; i++)
		if (changes[i].kind == kind &&
			memcmp(changes[i].key.id, k->id, RL_MEMORY_ID_BYTES) == 0)
			own += changes[i].amount;
	return own;
}

/*
 * What this transaction has taken from the key and not yet committed (a
 * rollback to a savepoint has dropped its takes).
 */
double
rl_memory_own_pending(const RlMemoryKey *k)
{
	return own_amount(k, CHANGE_TAKE);
}

/*
 * What this transaction's refunds of the key will give at commit (a
 * rollback to a savepoint has dropped its refunds).
 */
double
rl_memory_own_refunds(const RlMemoryKey *k)
{
	return own_amount(k, CHANGE_REFUND);
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

	if (storage == MEM_NONE)
		return;
	(void) store();
	c = next_change();
	if (name)
		rl_memory_name_id(space, name, k.name_id);
	k.space = space;
	c->kind = CHANGE_NAME;
	c->subid = GetCurrentSubTransactionId();
	c->key = k;
	c->dropped = dropped;
	c->every_name = name == NULL;
	nchanges++;
	names_changed = true;
}

/*
 * An entry's idle_at once no transaction holds it, under the policy of the
 * change that let go of it, in the epoch that change read before its
 * policy (droppable).
 */
static void
set_idle_at(MemEntry *e, const MemChange *c, TimestampTz now)
{
	int64		at;

	if (e->holders > 0)
	{
		hold_note(e, &c->policy, now, false);
		return;
	}
	e->pending = 0;
	e->block_held = false;
	e->idle_at = rl_idle_at(&c->policy, c->origin, e->committed, now, &at) ?
		Max(at, empty_refilled_at(shared, &c->policy)) : MEM_NEVER;
	/*
	 * On a standby a replayed definition change bumps no epoch, so a
	 * judgement made there would stay fresh after a promotion: never.
	 */
	e->judged = RecoveryInProgress() ? PG_UINT64_MAX : c->epoch;
}

/* Make one change final (commit) or undo it (abort); must not fail. */
static void
finish_change(const MemChange *c, bool commit, TimestampTz now)
{
	MemShared  *s = shared;
	LWLock	   *lock = &s->locks[c->key.partition].lock;
	int32	   *link;
	MemEntry   *e;
	RlState		next;

	if (c->kind == CHANGE_NAME)
		return;					/* memory_release_callback */
	if (c->kind == CHANGE_RESET && !commit && !c->pinned)
		return;
	LWLockAcquire(lock, LW_EXCLUSIVE);
	e = entry_find(s, c->key.id, c->key.bucket, &link);
	if (e == NULL)
	{
		/* a reset's key with no entry; anything else was pinned */
		LWLockRelease(lock);
		return;
	}
	switch (c->kind)
	{
		case CHANGE_TAKE:
			/*
			 * The take enters the committed state before it leaves the
			 * pending amount: a backend killed in between (an immediate
			 * shutdown) leaves it counted twice in the state file, never
			 * lost.
			 */
			if (commit && policy_in_force(s, e, c->epoch))
			{
				fold_owed(e, &c->policy, c->origin);
				e->committed = rl_commit_take(&c->policy, c->origin,
											  e->committed, c->at, now,
											  c->amount);
				e->untouched = false;
			}
			else if (commit)
			{
				catch_up(e, c);
				owe(e, c->amount, now);
			}
			pg_compiler_barrier();
			e->pending -= c->amount;
			e->holders--;
			break;
		case CHANGE_REFUND:
			e->holders--;
			if (!commit)
				break;
			if (!policy_in_force(s, e, c->epoch))
			{
				catch_up(e, c);
				owe(e, -c->amount, now);
				break;
			}
			fold_owed(e, &c->policy, c->origin);
			if (rl_refund_state(&c->policy, c->origin, &e->committed, now,
								c->amount, &next) == RL_DECIDED)
			{
				e->committed = next;
				e->untouched = false;
			}
			break;
		case CHANGE_BLOCK:
			e->holders--;
			if (commit && policy_in_force(s, e, c->epoch))
				fold_owed(e, &c->policy, c->origin);
			if (commit &&
				!(c->unblocked_only &&
				  rl_state_is_blocked(&c->policy, c->origin, e->committed,
									  now)) &&
				rl_block_state(&c->policy, c->origin, &e->committed, c->at,
							   c->duration, &next) == RL_DECIDED)
			{
				e->committed = next;
				e->untouched = false;
			}
			break;
		case CHANGE_RESET:
			if (c->pinned)
			{
				/*
				 * After an 'empty' crash a missing key counts as emptied at
				 * the restart: the key is kept, full (set_idle_at keeps it
				 * until a missing key would be full too).
				 */
				e->holders--;
				if (commit &&
					rl_initial_state(&c->policy, c->origin, now,
									 &next) == RL_DECIDED)
				{
					e->committed = next;
					e->owed = 0;
					e->untouched = false;
				}
				break;
			}
			if (e->holders == 0)
			{
				entry_remove(s, link);
				LWLockRelease(lock);
				return;
			}
			missing_state(s, &c->policy, c->origin, now, &next);
			e->committed = next;
			e->owed = 0;
			e->untouched = true;
			break;
		case CHANGE_NAME:
			break;
	}
	set_idle_at(e, c, now);
	LWLockRelease(lock);
}

/*
 * Before changed definitions become visible: a new epoch, then every
 * partition taken and let go once, so that an rl_gc pass that read the old
 * definitions either finished judging a partition before the change is
 * seen, or finds the new epoch at its next partition and stops (a drop
 * must be idle under the policy in force when it happens).
 */
static void
epoch_barrier(void)
{
	MemShared  *s = shared;

	/* until the bump after the invalidations: no judgement counts */
	pg_atomic_fetch_add_u32(&epoch_of(s, MyDatabaseId)->changing, 1);
	counted_changing = true;
	barrier_epoch = pg_atomic_add_fetch_u64(&epoch_of(s, MyDatabaseId)->epoch, 1);
	for (int p = 0; p < MEM_PARTITIONS; p++)
	{
		LWLockAcquire(&s->locks[p].lock, LW_EXCLUSIVE);
		LWLockRelease(&s->locks[p].lock);
	}
}

/*
 * Changed definitions, after their invalidation is sent: a new epoch, so
 * that every idle judgement made before (and by a commit that raced with
 * the change, its policy read before) no longer counts (droppable); then
 * the entries of dropped names that no transaction holds are removed,
 * every defined limit's of this database and extension after a TRUNCATE.
 */
static void
finish_names(void)
{
	MemShared  *s = shared;
	MemEntry   *entries = store_entries(s);
	int32	   *buckets = store_buckets(s);
	MemEpoch   *slot = epoch_of(s, MyDatabaseId);
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
	for (int i = 0; i < nchanges; i++)
		if (changes[i].kind == CHANGE_NAME)
		{
			if (OidIsValid(space) && space != changes[i].key.space)
				one_space = false;
			space = changes[i].key.space;
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

				for (int i = 0; i < nchanges; i++)
				{
					const MemChange *c = &changes[i];
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
					entry_remove(s, at);
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
		storage != MEM_NONE && extension_trigger(objectId))
	{
		MemChange  *c;

		(void) store();
		c = next_change();
		c->kind = CHANGE_NAME;
		c->subid = GetCurrentSubTransactionId();
		c->key.space = InvalidOid;	/* every install of this database */
		c->every_name = true;
		nchanges++;
		names_changed = true;
	}
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		storage != MEM_NONE)
	{
		char	   *relname = get_rel_name(objectId);

		/*
		 * Any table, whatever its name now (an install's rl_definitions may
		 * have been renamed first): until this transaction ends, rl_gc in it
		 * must not take a space its own uncommitted drop removed from the
		 * catalogs for gone (spaces_gone).
		 */
		dropped_relation_xid = GetTopTransactionId();

		if (relname != NULL && strcmp(relname, "rl_definitions") == 0 &&
			extension_table(objectId))
		{
			MemChange  *c;

			(void) store();		/* the transaction callbacks, registered */
			c = next_change();

			c->kind = CHANGE_NAME;
			c->subid = GetCurrentSubTransactionId();
			c->key.space = objectId;
			c->dropped = true;
			c->every_name = true;
			c->space_gone = true;
			nchanges++;
			names_changed = true;
		}
	}
}

/* Forget this transaction's changes. */
static void
clear_changes(void)
{
	if (counted_changing)
	{
		pg_atomic_fetch_sub_u32(&epoch_of(shared, MyDatabaseId)->changing, 1);
		counted_changing = false;
	}
	barrier_epoch = 0;
	nchanges = 0;
	names_changed = false;
}

static void
memory_xact_callback(XactEvent event, void *arg)
{
	TimestampTz now;

	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (nchanges > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that used a memory rate limit"),
						 errdetail("Memory limits, and changes to how they are defined, are not kept in a prepared transaction.")));
			break;
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			if (names_changed)
				epoch_barrier();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			now = rl_clock_now();
			for (int i = 0; i < nchanges; i++)
				finish_change(&changes[i], true, now);
			if (!names_changed)
				clear_changes();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			forget_held();	/* LWLockReleaseAll let go */
			now = rl_clock_now();
			for (int i = nchanges - 1; i >= 0; i--)
				finish_change(&changes[i], false, now);
			clear_changes();
			break;
		default:
			break;
	}
}

static void
memory_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	TimestampTz now;

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			forget_held();
			now = rl_clock_now();
			while (nchanges > 0 && changes[nchanges - 1].subid == mySubid)
			{
				nchanges--;
				finish_change(&changes[nchanges], false, now);
			}
			names_changed = false;
			for (int i = 0; i < nchanges; i++)
				if (changes[i].kind == CHANGE_NAME)
					names_changed = true;
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			for (int i = nchanges - 1; i >= 0 && changes[i].subid == mySubid; i--)
				changes[i].subid = parentSubid;
			break;
		default:
			break;
	}
}

/* Changed definitions at commit, once their invalidation is sent. */
static void
memory_release_callback(ResourceReleasePhase phase, bool isCommit,
						bool isTopLevel, void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel || !names_changed)
		return;
	if (isCommit)
		finish_names();
	clear_changes();
}

/*
 * Raise the error of an unavailable store (15 and 16 not preloaded) when
 * this server has none, without making it: for rl_define.
 */
void
rl_memory_require(void)
{
	if (storage == MEM_NONE)
		(void) store();
}

/* Attach the store (an error when it is unavailable). */
void
rl_memory_attach(void)
{
	(void) store();
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
	if (shared != NULL)
		pg_atomic_fetch_add_u64(&epoch_of(shared, MyDatabaseId)->epoch, 1);
}

/* Whether this backend has attached the store. */
bool
rl_memory_attached(void)
{
	return shared != NULL;
}

/* Whether this server has a memory store (preloaded, or 17+). */
bool
rl_memory_available(void)
{
	return storage != MEM_NONE;
}

/*
 * rl_gc on the memory store: drop up to max entries no transaction holds
 * whose key is idle.  The entries of this database's and extension's
 * defined limits (space) are judged under their current policies (names:
 * the ids and policies of every memory limit defined there, read after
 * epoch; a fixed window's phase is that of its stored window start), and
 * dropped also when their name is no longer defined and no call of the
 * current epoch wrote them; entries of a dropped database or extension
 * (spaces_gone); every other entry as the sweep judges it (droppable).  The pass stops when the epoch changes, since a definition
 * changed meanwhile; on a standby, where a replayed change fires no
 * trigger, this backend's own invalidations bump it (rl_memory_invalidated).
 */
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
	MemEntry   *entries = store_entries(s);
	int32	   *buckets = store_buckets(s);
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
				 !TransactionIdIsCurrentTransactionId(dropped_relation_xid) &&
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
		return droppable(s, e, gc->now);
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
		return droppable(s, e, gc->now);
	return idle_under(e, policy, gc->now);
}

uint64
rl_memory_gc(Oid space, const RlMemoryName *names, int nnames, uint64 epoch,
			 TimestampTz now, uint64 max)
{
	MemShared  *s = store();
	MemGc		gc = {space, names, nnames, epoch, now, spaces_gone(s)};
	uint64		removed = 0;

	gc_space = space;
	for (int p = 0; p < MEM_PARTITIONS && removed < max; p++)
	{
		CHECK_FOR_INTERRUPTS();
		AcceptInvalidationMessages();
		LWLockAcquire(&s->locks[p].lock, LW_EXCLUSIVE);
		if (epoch != PG_UINT64_MAX &&
			(pg_atomic_read_u64(&epoch_of(s, MyDatabaseId)->epoch) != epoch ||
			 pg_atomic_read_u32(&epoch_of(s, MyDatabaseId)->changing) != 0))
		{
			LWLockRelease(&s->locks[p].lock);
			break;
		}
		removed += partition_drop(s, p, gc_drops, &gc, max - removed);
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
static void
memory_relcache_callback(Datum arg, Oid relid)
{
	if (shared != NULL && RecoveryInProgress() &&
		(relid == InvalidOid || relid == gc_space))
		pg_atomic_fetch_add_u64(&epoch_of(shared, MyDatabaseId)->epoch, 1);
}

/* The memory columns of rl_stats_info. */
void
rl_memory_info(RlMemoryInfo *info)
{
	memset(info, 0, sizeof(*info));
	info->storage = storage_names[storage];
	if (storage == MEM_NONE)
		return;
	(void) store();
	SpinLockAcquire(&shared->mutex);
	info->max_keys = shared->max_keys;
	info->keys = shared->used;
	info->full_errors = shared->full_errors;
	info->empty_since = shared->empty_since;
	SpinLockRelease(&shared->mutex);
}

/*
 * Refuse an inline config with storage 'memory' unless
 * ratelimit.inline_memory is on for the session or the role that called
 * (not the owner a SECURITY DEFINER function runs as) is a superuser: any
 * role can pass one, and the store is shared by every database.
 */
void
rl_memory_check_inline(void)
{
	if (memory_inline || superuser_arg(GetOuterUserId()))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to use an inline config with storage \"memory\""),
			 errdetail("The memory store is shared by every database of the server."),
			 errhint("Define the limit with rl_define(), or have an administrator turn ratelimit.inline_memory on for the role.")));
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
	MemShared  *s = store();
	MemForget	forget = {space, inline_only};
	uint64		removed = 0;

	for (int p = 0; p < MEM_PARTITIONS; p++)
	{
		CHECK_FOR_INTERRUPTS();
		LWLockAcquire(&s->locks[p].lock, LW_EXCLUSIVE);
		removed += partition_drop(s, p, forget_drops, &forget, PG_UINT64_MAX);
		LWLockRelease(&s->locks[p].lock);
	}
	return removed;
}
