/*-------------------------------------------------------------------------
 *
 * memory_table.c
 *	  The memory store's shared hash: its layout, its partitions and their
 *	  locks, finding, adding and removing entries, placement (making room
 *	  by dropping idle entries), and the state a call decides on.
 *
 * An entry is addressed by a SHA-256 digest of (database, extension,
 * stored name, key), hashed into a bucket array of chains with the store's
 * secret seed.  The buckets are partitioned by MEM_PARTITIONS LWLocks:
 * bucket b belongs to partition b % MEM_PARTITIONS.  At most
 * ratelimit.memory_max_keys entries exist (and, per database,
 * ratelimit.memory_max_keys_per_database); a free entry is taken from the
 * free list, and when there is none the idle ones (mem_droppable, or idle
 * under the calling limit's policy) are dropped; when none can be, a call
 * on a new key is an error (53400), never an eviction of live state.
 *
 * Locking.
 * - A partition's LWLock protects its chains and every field of the
 *   entries on them.  Exclusive to change either, shared to read.
 * - The store's spinlock (MemShared.mutex) protects the free list, the
 *   count of entries used, full_errors and the per-database counts.  It is
 *   taken with or without a partition lock, and never held while taking
 *   anything else.
 * - Partitions are taken in ascending order (rl_memory_lock): a call on
 *   several keys takes all of its partitions, at once, before it reads a
 *   state.  A backend holding partitions takes any other one only with
 *   LWLockConditionalAcquire (entry_alloc's sweep), so it never waits in a
 *   cycle.
 * - While a partition is held, nothing reads a table, takes a heavyweight
 *   lock, waits for anything else, or does I/O; an error there leaves the
 *   lock to LWLockReleaseAll, and the abort callback forgets it
 *   (mem_forget_held).
 * - The epochs (MemShared.epochs) are atomics, read under a partition lock
 *   so that a definition change orders against them (memory_names.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xlog.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/timestamp.h"

#include "memory_internal.h"

/* The partitions this backend holds: a flag each, and a list. */
static bool held[MEM_PARTITIONS];
static int	nheld = 0;			/* partitions held, in held_list */
static int	held_list[MEM_PARTITIONS];

static uint32
buckets_for(int32 max_keys)
{
	uint32		n = MEM_PARTITIONS;

	while (n < (uint32) max_keys)
		n <<= 1;
	return n;
}

/* The bytes of a store of max_keys entries. */
Size
mem_store_size(int32 max_keys)
{
	Size		size = MAXALIGN(sizeof(MemShared));

	size = add_size(size, MAXALIGN(mul_size(sizeof(int32), buckets_for(max_keys))));
	return add_size(size, mul_size(sizeof(MemEntry), max_keys));
}

/* An empty store; tranche is the LWLock tranche of its partitions. */
void
mem_store_init(MemShared *s, int32 max_keys, int tranche)
{
	MemEntry   *entries;

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
	memset(mem_buckets(s), 0xff, sizeof(int32) * s->nbuckets);
	entries = mem_entries(s);
	for (int32 i = 0; i < max_keys; i++)
		entries[i].next = i + 1 < max_keys ? i + 1 : -1;
	s->free_head = max_keys > 0 ? 0 : -1;
}

/*
 * The bucket of an id, hashed with the store's secret seed: ids are
 * SHA-256 digests anyone can compute, and without the seed a caller could
 * grind keys into one bucket and make its chain long.
 */
uint32
mem_bucket_hash(MemShared *s, const uint8 *id)
{
	return (uint32) hash_bytes_extended(id, RL_MEMORY_ID_BYTES, s->seed);
}

/* The entry with this id in its bucket (the partition held); NULL if none. */
MemEntry *
mem_entry_find(MemShared *s, const uint8 *id, uint32 bucket, int32 **link)
{
	MemEntry   *entries = mem_entries(s);
	int32	   *at = &mem_buckets(s)[bucket];

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
void
mem_entry_remove(MemShared *s, int32 *link)
{
	int32		e = *link;
	MemEntry   *entry = &mem_entries(s)[e];

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
int
mem_db_slot(MemShared *s, Oid dbid)
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
	*slot = mem_db_slot(s, MyDatabaseId);
	return memory_max_keys_per_database < 0 ||
		s->dbs[*slot].used < memory_max_keys_per_database;
}

/*
 * After a crash with memory_after_crash = 'empty', a key with no entry
 * counts as emptied at the restart: an entry means the same as none only
 * once such a key would have refilled too.  The earliest time it does
 * under policy (0 when the store did not start empty).
 */
int64
mem_empty_refilled_at(MemShared *s, const RlPolicy *policy)
{
	int64		bound;

	if (s->empty_since == 0)
		return 0;
	bound = mem_refill_bound(policy, 0);
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
bool
mem_droppable(MemShared *s, const MemEntry *e, TimestampTz now)
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
	return e->judged == pg_atomic_read_u64(&mem_epoch_of(s, e->dbid)->epoch) &&
		pg_atomic_read_u32(&mem_epoch_of(s, e->dbid)->changing) == 0 &&
		!RecoveryInProgress();
}

/*
 * Whether an entry no transaction holds is idle at now under policy, the
 * one in force for its name: judged from its own time as the window
 * phase, which never finds a window start earlier than the real one.
 */
bool
mem_idle_under(const MemEntry *e, const RlPolicy *policy, TimestampTz now)
{
	int64		idle;

	return e->holders == 0 && mem_empty_refilled_at(mem_shared, policy) <= now &&
		rl_idle_at(policy, e->committed.ts,
				   mem_landed(e, policy, e->committed.ts), now, &idle) &&
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
 * mem_epoch_barrier takes it before a change becomes visible).
 */
static bool
judge_fits(MemShared *s, const MemJudge *judge, const MemEntry *e)
{
	return judge != NULL && !judge->policy->overrides &&
		!e->is_inline && !e->untouched &&
		e->dbid == MyDatabaseId && e->space == judge->key->space &&
		memcmp(e->name_id, judge->key->name_id, RL_MEMORY_NAME_ID_BYTES) == 0 &&
		judge->epoch < RL_MEMORY_EPOCH_UNTRACKED && !RecoveryInProgress() &&
		judge->epoch == pg_atomic_read_u64(&mem_epoch_of(s, e->dbid)->epoch) &&
		pg_atomic_read_u32(&mem_epoch_of(s, e->dbid)->changing) == 0;
}

/*
 * Drop the entries of one partition (held exclusively) that drop says
 * to, at most max of them; returns how many went.
 */
uint64
mem_partition_drop(MemShared *s, int partition, MemDropTest drop, void *arg,
				   uint64 max)
{
	int32	   *buckets = mem_buckets(s);
	MemEntry   *entries = mem_entries(s);
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
				mem_entry_remove(s, at);
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

	return mem_droppable(s, e, sweep->now) ||
		(judge_fits(s, sweep->judge, e) &&
		 mem_idle_under(e, sweep->judge->policy, sweep->now));
}

/* Drop the droppable entries of one partition (held exclusively). */
static int
partition_sweep(MemShared *s, int partition, TimestampTz now,
				const MemJudge *judge)
{
	MemSweep	sweep = {now, judge};

	return (int) mem_partition_drop(s, partition, sweep_drops, &sweep,
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
			s->free_head = mem_entries(s)[e].next;
			s->used++;
			s->dbs[slot].used++;
			mem_entries(s)[e].dbslot = slot;
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
	MemShared  *s = mem_store();
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
		LWLockRelease(&mem_shared->locks[p].lock);
	}
}

/* Whether this backend holds a partition (rl_memory_lock). */
bool
mem_holds(int partition)
{
	return held[partition];
}

/* After an error: LWLockReleaseAll let go of every partition. */
void
mem_forget_held(void)
{
	while (nheld > 0)
		held[held_list[--nheld]] = false;
}

/*
 * The state of a key with no entry: full, or, after a crash with
 * ratelimit.memory_after_crash = 'empty', emptied at the restart (or now,
 * when the clock reads earlier than the restart: still empty).
 */
void
mem_missing_state(MemShared *s, const RlPolicy *policy, int64 origin,
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
RlState
mem_landed(const MemEntry *e, const RlPolicy *policy, int64 origin)
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
		mem_missing_state(s, policy, origin, now, state);
		return;
	}
	*state = mem_landed(e, policy, origin);
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
	MemShared  *s = mem_store();

	Assert(held[k->partition]);
	current(s, mem_entry_find(s, k->id, k->bucket, NULL), policy, origin, now,
			state);
}

/* The same, for a call that takes nothing (its own shared lock). */
void
rl_memory_read(const RlMemoryKey *k, const RlPolicy *policy, int64 origin,
			   TimestampTz now, RlState *state)
{
	MemShared  *s = mem_store();
	LWLock	   *lock = &s->locks[k->partition].lock;

	if (held[k->partition])
	{
		rl_memory_get(k, policy, origin, now, state);
		return;
	}
	LWLockAcquire(lock, LW_SHARED);
	current(s, mem_entry_find(s, k->id, k->bucket, NULL), policy, origin, now,
			state);
	LWLockRelease(lock);
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
 * month has up to 31 days of its zone (mem_refill_bound adds its offset
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
int64
mem_refill_bound(const RlPolicy *policy, double value)
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
 * immediate shutdown that saves it held needs (mem_state_dump),
 * kept in idle_at and judged, which nothing reads while it is held.
 * first: the entry was not held until now.
 */
void
mem_hold_note(MemEntry *e, const RlPolicy *policy, TimestampTz at, bool first)
{
	int64		bound = mem_refill_bound(policy, e->committed.value - e->pending);

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
MemEntry *
mem_entry_pin(MemShared *s, const RlMemoryKey *k, const RlPolicy *policy,
			  int64 origin, TimestampTz now, uint64 epoch)
{
	MemEntry   *e = mem_entry_find(s, k->id, k->bucket, NULL);
	MemJudge	judge = {k, policy, epoch};
	RlState		fresh;
	int32		i;

	if (e == NULL)
	{
		mem_missing_state(s, policy, origin, now, &fresh);
		i = entry_alloc(s, now, &judge);
		if (i < 0)
			raise_full(s);
		e = &mem_entries(s)[i];
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
		e->next = mem_buckets(s)[k->bucket];
		mem_buckets(s)[k->bucket] = i;
	}
	mem_hold_note(e, policy, now, e->holders == 0);
	e->holders++;
	return e;
}
