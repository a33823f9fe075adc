/*-------------------------------------------------------------------------
 *
 * held.c
 *	  Which shards of which (name, key) the current transaction holds.
 *
 * A sharded call prefers shards its transaction already holds (they are
 * never busy for it), and a transaction that holds a shard of a key never
 * waits for another shard of that key (limit.c): two transactions that
 * each hold one could otherwise wait for each other.  Row locks leave no
 * trace a backend could look up by key, so every shard a call locks,
 * writes or creates is noted here with the transaction id that took it:
 * the innermost subtransaction's.  A note counts only while that id is
 * still the transaction's own (TransactionIdIsCurrentTransactionId): a
 * subtransaction rolled back released its row locks, and its id stops
 * counting with them, while one committed into its parent keeps counting
 * as the parent's locks do.  The notes live in TopTransactionContext and
 * are forgotten when the transaction ends.
 *
 * Only the calls of this extension are noted: a row the application
 * locked itself (SELECT ... FOR UPDATE) is not known here.
 *
 * An unsharded call's row is not noted (copying its name and key would
 * cost every call): it only marks its (name, key) in a small set of the
 * transaction (rl_held_mark), a 64-bit hash of the pair with the id of
 * the subtransaction that took the row, counted as above; this tells a
 * waiting call (wait.c) whether its transaction holds the row.  Two pairs
 * share a hash once in 2^64: a false "holds" only keeps that call from
 * waiting; the set is never wrong the other way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "compat.h"

#include "held.h"
#include "names.h"

/* A (name, key); the key '' is the NULL key. */
typedef struct HeldKey
{
	text	   *name;
	text	   *key;
} HeldKey;

/* One shard held, and by which of the transaction's ids. */
typedef struct HeldShard
{
	int16		shard;
	TransactionId xid;
} HeldShard;

typedef struct HeldEntry
{
	HeldKey		key;			/* copies in TopTransactionContext */
	int			n;
	int			size;
	HeldShard  *shards;
} HeldEntry;

static HTAB *held = NULL;

/*
 * The marks of unsharded rows: an open-addressed table of (hash, xid), at
 * most half full, in TopTransactionContext, forgotten when the transaction
 * ends (held_xact_callback).  A hash of 0 is an empty slot.
 */
typedef struct HeldMark
{
	uint64		hash;
	TransactionId xid;
} HeldMark;

static HeldMark *marks = NULL;
static uint32 marks_size = 0;	/* a power of two */
static uint32 marks_used = 0;
static bool callback_registered = false;

static uint32
held_key_hash(const void *key, Size keysize)
{
	const HeldKey *k = key;

	return hash_combine(hash_bytes((const unsigned char *) VARDATA_ANY(k->name),
								   VARSIZE_ANY_EXHDR(k->name)),
						hash_bytes((const unsigned char *) VARDATA_ANY(k->key),
								   VARSIZE_ANY_EXHDR(k->key)));
}

static int
held_key_match(const void *key1, const void *key2, Size keysize)
{
	const HeldKey *a = key1;
	const HeldKey *b = key2;

	return rl_text_equal(a->name, b->name) && rl_text_equal(a->key, b->key) ? 0 : 1;
}

/* The transaction ended: its notes and marks went with TopTransactionContext. */
static void
held_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			held = NULL;
			marks = NULL;
			marks_size = 0;
			marks_used = 0;
			break;
		default:
			break;
	}
}

/* Forget the notes and marks when the transaction ends. */
static void
held_callback(void)
{
	if (callback_registered)
		return;
	RegisterXactCallback(held_xact_callback, NULL);
	callback_registered = true;
}

/* The entry of (name, key), created when create; NULL when none. */
static HeldEntry *
held_entry(text *name, text *key, bool create)
{
	HeldKey		k = {name, key};
	HeldEntry  *entry;
	bool		found;

	if (held == NULL)
	{
		HASHCTL		ctl;

		if (!create)
			return NULL;
		held_callback();
		ctl.keysize = sizeof(HeldKey);
		ctl.entrysize = sizeof(HeldEntry);
		ctl.hash = held_key_hash;
		ctl.match = held_key_match;
		ctl.hcxt = TopTransactionContext;
		held = hash_create("ratelimit held shards", 16, &ctl,
						   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE |
						   HASH_CONTEXT);
	}
	entry = hash_search(held, &k, create ? HASH_ENTER : HASH_FIND, &found);
	if (entry != NULL && !found)
	{
		entry->key.name = MemoryContextAlloc(TopTransactionContext,
											 VARSIZE_ANY(name));
		memcpy(entry->key.name, name, VARSIZE_ANY(name));
		entry->key.key = MemoryContextAlloc(TopTransactionContext,
											VARSIZE_ANY(key));
		memcpy(entry->key.key, key, VARSIZE_ANY(key));
		entry->n = 0;
		entry->size = 0;
		entry->shards = NULL;
	}
	return entry;
}

/*
 * Note that the transaction now holds this shard: just locked, written or
 * created by it.  A note that still counts is kept (it is the outermost
 * subtransaction's, whose lock outlives this one's); one that no longer
 * counts is taken over.
 */
void
rl_held_note(text *name, text *key, int16 shard)
{
	HeldEntry  *entry = held_entry(name, key, true);
	TransactionId xid = GetCurrentTransactionId();

	for (int i = 0; i < entry->n; i++)
	{
		if (entry->shards[i].shard != shard)
			continue;
		if (!TransactionIdIsCurrentTransactionId(entry->shards[i].xid))
			entry->shards[i].xid = xid;
		return;
	}
	if (entry->n == entry->size)
	{
		int			size = entry->size == 0 ? 4 : entry->size * 2;

		entry->shards = entry->shards == NULL ?
			MemoryContextAlloc(TopTransactionContext, sizeof(HeldShard) * size) :
			repalloc(entry->shards, sizeof(HeldShard) * size);
		entry->size = size;
	}
	entry->shards[entry->n].shard = shard;
	entry->shards[entry->n].xid = xid;
	entry->n++;
}

/*
 * The shards of (name, key) the transaction holds, up to max of them, in
 * the order they were first taken; returns how many were stored.
 */
int
rl_held_shards(text *name, text *key, int16 *shards, int max)
{
	HeldEntry  *entry = held_entry(name, key, false);
	int			n = 0;

	if (entry == NULL)
		return 0;
	for (int i = 0; i < entry->n && n < max; i++)
		if (TransactionIdIsCurrentTransactionId(entry->shards[i].xid))
			shards[n++] = entry->shards[i].shard;
	return n;
}

/*
 * The highest shard of (name, key) below nshards the transaction holds, or
 * -1.  A shard at or past nshards (held before a redefinition lowered the
 * count) is a row no call of the limit uses any more: it must not keep the
 * call from creating, or taking, the shards that are.
 */
int
rl_held_highest(text *name, text *key, int nshards)
{
	HeldEntry  *entry = held_entry(name, key, false);
	int			highest = -1;

	if (entry == NULL)
		return -1;
	for (int i = 0; i < entry->n; i++)
		if (entry->shards[i].shard > highest &&
			entry->shards[i].shard < nshards &&
			TransactionIdIsCurrentTransactionId(entry->shards[i].xid))
			highest = entry->shards[i].shard;
	return highest;
}

/* The hash of (name, key), never 0. */
static uint64
mark_hash(text *name, text *key)
{
	uint64		h = hash_bytes_extended((const unsigned char *) VARDATA_ANY(name),
										VARSIZE_ANY_EXHDR(name), 0);

	h = hash_bytes_extended((const unsigned char *) VARDATA_ANY(key),
							VARSIZE_ANY_EXHDR(key), h);
	return h == 0 ? 1 : h;
}

/* The slot of hash: its mark, or the empty slot where it would go. */
static HeldMark *
mark_slot(uint64 hash)
{
	uint32		i = (uint32) hash & (marks_size - 1);

	while (marks[i].hash != 0 && marks[i].hash != hash)
		i = (i + 1) & (marks_size - 1);
	return &marks[i];
}

/* Room for one more mark. */
static void
marks_reserve(void)
{
	HeldMark   *old = marks;
	uint32		old_size = marks_size;

	if (marks != NULL && (marks_used + 1) * 2 <= marks_size)
		return;
	held_callback();
	marks_size = old == NULL ? 16 : old_size * 2;
	marks = MemoryContextAllocZero(TopTransactionContext,
								   sizeof(HeldMark) * marks_size);
	for (uint32 i = 0; i < old_size; i++)
		if (old[i].hash != 0)
			*mark_slot(old[i].hash) = old[i];
	if (old != NULL)
		pfree(old);
}

/*
 * An unsharded call locked or wrote (name, key)'s row.  A mark that still
 * counts is kept (an outer subtransaction's lock outlives this one's).  The
 * row was taken in this subtransaction, which then has an id, unless an
 * outer one already held it unmarked (a lock this extension did not note):
 * the top transaction's id then stands for it.
 */
void
rl_held_mark(text *name, text *key)
{
	TransactionId xid;
	uint64		hash;
	HeldMark   *mark;

	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return;					/* nothing locked after all */
	marks_reserve();
	hash = mark_hash(name, key);
	mark = mark_slot(hash);
	if (mark->hash != 0 && TransactionIdIsCurrentTransactionId(mark->xid))
		return;
	xid = GetCurrentTransactionIdIfAny();
	if (!TransactionIdIsValid(xid))
		xid = GetTopTransactionId();
	if (mark->hash == 0)
	{
		mark->hash = hash;
		marks_used++;
	}
	mark->xid = xid;
}

/*
 * Whether the transaction may hold a row of (name, key): a shard noted, or
 * an unsharded row marked, by a subtransaction not rolled back.
 */
bool
rl_held_maybe(text *name, text *key)
{
	int16		shard;
	HeldMark   *mark;

	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return false;
	if (rl_held_shards(name, key, &shard, 1) > 0)
		return true;
	if (marks == NULL)
		return false;
	mark = mark_slot(mark_hash(name, key));
	return mark->hash != 0 && TransactionIdIsCurrentTransactionId(mark->xid);
}
