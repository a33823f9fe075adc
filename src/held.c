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
 * An unsharded call's row is not noted (that would cost every call a hash
 * table): it only marks its (name, key) in a small Bloom filter of the
 * transaction (rl_held_mark), which tells a waiting call (wait.c) whether
 * its transaction may hold the row.  A false "may" only keeps that call
 * from waiting; the filter is never wrong the other way.
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

static bool
text_equal(text *a, text *b)
{
	int			la = VARSIZE_ANY_EXHDR(a);

	return la == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), la) == 0;
}

static int
held_key_match(const void *key1, const void *key2, Size keysize)
{
	const HeldKey *a = key1;
	const HeldKey *b = key2;

	return text_equal(a->name, b->name) && text_equal(a->key, b->key) ? 0 : 1;
}

/* The transaction ended: its notes went with TopTransactionContext. */
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
			break;
		default:
			break;
	}
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
		if (!callback_registered)
		{
			RegisterXactCallback(held_xact_callback, NULL);
			callback_registered = true;
		}
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

/*
 * The Bloom filter of unsharded rows: 1024 bits, two of them per (name,
 * key), for the top transaction id it was filled in.  A transaction that
 * locked or wrote a row has an id, so one without holds no row.  Bits are
 * never cleared within a transaction, even when a subtransaction rolls
 * back: a "may" too many.
 */
#define HELD_BLOOM_WORDS 16
static TransactionId bloom_xid = InvalidTransactionId;
static uint64 bloom[HELD_BLOOM_WORDS];

/* The two bits of (name, key). */
static void
bloom_bits(text *name, text *key, uint32 *a, uint32 *b)
{
	uint64		h = hash_bytes_extended((const unsigned char *) VARDATA_ANY(name),
										VARSIZE_ANY_EXHDR(name), 0);

	h = hash_bytes_extended((const unsigned char *) VARDATA_ANY(key),
							VARSIZE_ANY_EXHDR(key), h);
	*a = (uint32) h % (HELD_BLOOM_WORDS * 64);
	*b = (uint32) (h >> 32) % (HELD_BLOOM_WORDS * 64);
}

/* An unsharded call locked or wrote (name, key)'s row. */
void
rl_held_mark(text *name, text *key)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	uint32		a,
				b;

	if (!TransactionIdIsValid(xid))
		return;					/* nothing locked after all */
	if (xid != bloom_xid)
	{
		memset(bloom, 0, sizeof(bloom));
		bloom_xid = xid;
	}
	bloom_bits(name, key, &a, &b);
	bloom[a / 64] |= UINT64CONST(1) << (a % 64);
	bloom[b / 64] |= UINT64CONST(1) << (b % 64);
}

/*
 * Whether the transaction may hold a row of (name, key): a shard noted, or
 * an unsharded row marked.
 */
bool
rl_held_maybe(text *name, text *key)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	int16		shard;
	uint32		a,
				b;

	if (!TransactionIdIsValid(xid))
		return false;
	if (rl_held_shards(name, key, &shard, 1) > 0)
		return true;
	if (xid != bloom_xid)
		return false;
	bloom_bits(name, key, &a, &b);
	return (bloom[a / 64] & (UINT64CONST(1) << (a % 64))) != 0 &&
		(bloom[b / 64] & (UINT64CONST(1) << (b % 64))) != 0;
}

