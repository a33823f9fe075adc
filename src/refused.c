/*-------------------------------------------------------------------------
 *
 * refused.c
 *	  Who is refused: per (database, limit name), the keys refused and
 *	  blocked most over the last two windows, read through the view
 *	  rl_refused.
 *
 * Each name keeps a space-saving sketch (Metwally, Agrawal and El Abbadi,
 * 2005) of ratelimit.refused_top_k counters.  An event (a refusal, or a
 * block that starts) of a key that has a counter adds to it; of a key that
 * has none, takes a free counter, or else the counter with the smallest
 * count, whose count the newcomer inherits as its error: it may have had
 * that many events before it was counted.  A counter's count is its
 * refusals + blocks + error.  A key counted since its first event has
 * error 0 and exact counts; a key with no counter had at most the
 * smallest count, and none at all while no counter was ever taken over.
 *
 * "Recent" is two generations of sketches: the current window of
 * ratelimit.refused_window and the one before.  When a call sees that the
 * clock has moved into the next window, the current generation becomes
 * the previous one and a new one starts empty; a jump of more than one
 * window empties both.  The view sums a key over both generations (a key
 * absent from one adds that generation's bound to its error) and shows
 * the top_k largest counts per name, so a key that stopped offending drops
 * out after at most two windows.  A clock that goes back (a pinned
 * ratelimit.now_override) keeps counting in the current window; one ahead
 * of the real clock turns the windows no further than the real clock.
 *
 * At most ratelimit.refused_max_names names per generation, of all
 * databases together: refusals of a further name are not counted here
 * until a window turns (rl_stats still counts them); the server log says
 * so once per window.  The view shows the names of the reader's database
 * only: keys are that database's data, in its encoding.
 *
 * Only a refused call, or a block that starts, comes here (limit.c's
 * count_answer and rl_check_call): a granted call costs nothing, not even
 * a lock.  Where the sketches live follows the statistics (shmem.c):
 * preloaded, the main segment (not kept over a restart); not preloaded,
 * 17 and later, the DSM registry; 15 and 16 not preloaded, nowhere.
 *
 * Locking.  One LWLock guards both generations.  A refusal takes it
 * exclusively to find its name and key and count.  rl_refused_rows takes
 * it exclusively to turn the window, then shared once per name of its
 * database, to copy that name's counters in both generations (at most
 * 2 * top_k), and ranks them without it.  Nothing else is waited for under
 * it: no allocation, no I/O, no other lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "clock.h"
#include "memory.h"
#include "names.h"
#include "refused.h"
#include "shmem.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(rl_refused_rows);

#define REFUSED_DSM_NAME "ratelimit_refused"
#define REFUSED_DSM_SIZE_NAME "ratelimit_refused_size"
#define REFUSED_TRANCHE_NAME "ratelimit_refused"

/* The bytes of a key kept for the view; a longer key is shown cut. */
#define REFUSED_KEY_BYTES 128

/* One counter of a sketch: a key and what was counted of it. */
typedef struct RefusedKey
{
	uint32		hash;			/* of the whole key */
	int32		len;			/* the whole key's bytes; -1: the NULL key */
	int64		refusals;
	int64		blocks;
	int64		error;			/* events it may have had before since */
	TimestampTz since;			/* when it took this counter */
	char		key[REFUSED_KEY_BYTES]; /* its first bytes */
} RefusedKey;

/* One name's sketch in one generation, followed by top_k counters. */
typedef struct RefusedName
{
	Oid			dbid;
	uint32		hash;
	int32		name_len;
	int32		nkeys;			/* counters in use */
	bool		evicted;		/* a counter was ever taken over */
	char		name[RL_MAX_NAME_BYTES];
} RefusedName;

/* One window's sketches, followed by max_names names. */
typedef struct RefusedGen
{
	int32		used;			/* names 0 .. used - 1 are in use */
	bool		full_logged;	/* the log said a name found it full */
} RefusedGen;

/* The area: the lock, then two generations. */
typedef struct RefusedShared
{
	LWLock		lock;
	int32		top_k;
	int32		max_names;
	Size		name_bytes;		/* of a name with its counters */
	Size		gen_bytes;		/* of a generation with its names */
	int32		cur;			/* the current generation: 0 or 1 */
	bool		started;		/* cur_window is set */
	int64		window;			/* the window's length (microseconds) */
	int64		cur_window;		/* the current window's number */
} RefusedShared;

static int	refused_top_k = 32;
static int	refused_max_names = 100;
static int	refused_window = 3600;

/*
 * What sizes the area, both settings in one number (shmem.c keeps one per
 * area): max_names * SHAPE_BASE + top_k.
 */
#define SHAPE_BASE 1024
static int	refused_shape = 100 * SHAPE_BASE + 32;

static RefusedShared *shared = NULL;

/* The bytes of one name's sketch of top_k counters. */
static Size
name_bytes_for(int32 top_k)
{
	return MAXALIGN(add_size(MAXALIGN(sizeof(RefusedName)),
							 mul_size(sizeof(RefusedKey), top_k)));
}

/* The bytes of one generation of max_names sketches. */
static Size
gen_bytes_for(int32 top_k, int32 max_names)
{
	return add_size(MAXALIGN(sizeof(RefusedGen)),
					mul_size(name_bytes_for(top_k), max_names));
}

/* The bytes of the area: two generations. */
static Size
area_size(int32 shape)
{
	return add_size(MAXALIGN(sizeof(RefusedShared)),
					mul_size(gen_bytes_for(shape % SHAPE_BASE,
										   shape / SHAPE_BASE), 2));
}

/* Generation i of the two at base. */
static RefusedGen *
gen_at(char *base, RefusedShared *s, int i)
{
	return (RefusedGen *) (base + i * s->gen_bytes);
}

/* The first generation of the area. */
static char *
gens_of(RefusedShared *s)
{
	return (char *) s + MAXALIGN(sizeof(RefusedShared));
}

/* Name i of generation g. */
static RefusedName *
name_at(RefusedShared *s, RefusedGen *g, int32 i)
{
	return (RefusedName *) ((char *) g + MAXALIGN(sizeof(RefusedGen)) +
							i * s->name_bytes);
}

/* The counters of a name. */
static RefusedKey *
keys_of(RefusedName *n)
{
	return (RefusedKey *) ((char *) n + MAXALIGN(sizeof(RefusedName)));
}

/* An empty area of the shape area_size was given. */
static void
area_init(void *ptr, int32 shape, int tranche, bool in_dsm)
{
	RefusedShared *s = ptr;

	LWLockInitialize(&s->lock, tranche);
	s->top_k = shape % SHAPE_BASE;
	s->max_names = shape / SHAPE_BASE;
	s->name_bytes = name_bytes_for(s->top_k);
	s->gen_bytes = gen_bytes_for(s->top_k, s->max_names);
	s->cur = 0;
	s->started = false;
	gen_at(gens_of(s), s, 0)->used = 0;
	gen_at(gens_of(s), s, 1)->used = 0;
}

/*
 * Sized by ratelimit.refused_max_names and ratelimit.refused_top_k, read
 * when it is made (preloaded: at server start).  Nothing is dumped: what
 * is recent before a restart is not after it.
 */
static RlShmemArea refused_area = {
	.name = "ratelimit refusals",
	.dsm_name = REFUSED_DSM_NAME,
	.dsm_size_name = REFUSED_DSM_SIZE_NAME,
	.tranche_name = REFUSED_TRANCHE_NAME,
	.size_setting = &refused_shape,
	.size = area_size,
	.init = area_init,
	.attached = (void **) &shared,
};

/* Both settings that size the area, in refused_shape. */
static void
assign_top_k(int newval, void *extra)
{
	refused_shape = refused_max_names * SHAPE_BASE + newval;
}

static void
assign_max_names(int newval, void *extra)
{
	refused_shape = newval * SHAPE_BASE + refused_top_k;
}

/* Define the settings and register the area; from rl_stats_init. */
void
rl_refused_init(void)
{
	DefineCustomIntVariable("ratelimit.refused_top_k",
							"Sets how many keys per limit name rl_refused keeps.",
							"Read when its table is created (preloaded: at server start, a change needs a restart).",
							&refused_top_k,
							32,
							1,
							1000,
							rl_sizing_context(),
							0,
							NULL, assign_top_k, NULL);
	DefineCustomIntVariable("ratelimit.refused_max_names",
							"Sets the most limit names rl_refused tracks per window.",
							"Read when its table is created (preloaded: at server start, a change needs a restart); refusals of further names are not counted there until the window turns.",
							&refused_max_names,
							100,
							1,
							10000,
							rl_sizing_context(),
							0,
							NULL, assign_max_names, NULL);
	DefineCustomIntVariable("ratelimit.refused_window",
							"Sets the length of each of the two windows rl_refused sums.",
							"A change starts both windows afresh.",
							&refused_window,
							3600,
							1,
							7 * 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	rl_shmem_register(&refused_area);
}

/* The sketches, attached if needed; NULL when there are none. */
static RefusedShared *
refused_table(void)
{
	return rl_shmem_attach(&refused_area);
}

/* Attach the sketches ahead of a call (stats.c); false when none. */
bool
rl_refused_attach(void)
{
	return refused_table() != NULL;
}

/* Empty generation i (the lock held exclusively). */
static void
gen_clear(RefusedShared *s, int i)
{
	RefusedGen *g = gen_at(gens_of(s), s, i);

	g->used = 0;
	g->full_logged = false;
}

/*
 * The clock the windows turn by: the limiter's, but no later than the real
 * clock.  A session whose ratelimit.now_override is in the future would
 * otherwise move the windows there, and every other session's refusals
 * would count in that window until the real clock reached it; read, it
 * would empty both.  Read before the lock is taken.
 */
static TimestampTz
window_clock(TimestampTz now)
{
	return Min(now, GetCurrentTimestamp());
}

/*
 * Move to the window now (a window_clock) falls in (the lock held
 * exclusively): the next window makes the current generation the previous
 * one; a later one, or a new window length, empties both; an earlier one
 * changes nothing.
 */
static void
turn_window(RefusedShared *s, TimestampTz now)
{
	int64		window = (int64) refused_window * USECS_PER_SEC;
	int64		w = now >= 0 ? now / window : -((-now - 1) / window) - 1;

	if (s->started && s->window == window && w <= s->cur_window)
		return;
	if (s->started && s->window == window && w == s->cur_window + 1)
	{
		s->cur ^= 1;
		gen_clear(s, s->cur);
	}
	else
	{
		gen_clear(s, 0);
		gen_clear(s, 1);
	}
	s->started = true;
	s->window = window;
	s->cur_window = w;
}

/* The hash a name is found by in its generation. */
static uint32
name_hash(Oid dbid, const char *name, int len)
{
	return hash_combine(hash_bytes_uint32(dbid),
						hash_bytes((const unsigned char *) name, len));
}

/* The sketch of (dbid, name) in generation g, or NULL. */
static RefusedName *
find_name(RefusedShared *s, RefusedGen *g, Oid dbid, const char *name,
		  int len, uint32 hash)
{
	for (int32 i = 0; i < g->used; i++)
	{
		RefusedName *n = name_at(s, g, i);

		if (n->hash == hash && n->dbid == dbid && n->name_len == len &&
			memcmp(n->name, name, len) == 0)
			return n;
	}
	return NULL;
}

/* Whether counter k holds key (len -1: the NULL key). */
static bool
key_matches(const RefusedKey *k, const char *key, int len, uint32 hash)
{
	return k->hash == hash && k->len == len &&
		memcmp(k->key, key, Min(Max(len, 0), REFUSED_KEY_BYTES)) == 0;
}

/* A counter's count: what ranks it. */
static int64
key_count(const RefusedKey *k)
{
	return k->refusals + k->blocks + k->error;
}

/* The counter of key in n, taking a free one or the smallest. */
static RefusedKey *
count_key(RefusedShared *s, RefusedName *n, const char *key, int len,
		  uint32 hash, TimestampTz now)
{
	RefusedKey *keys = keys_of(n);
	RefusedKey *k;
	int32		smallest = 0;

	for (int32 i = 0; i < n->nkeys; i++)
	{
		if (key_matches(&keys[i], key, len, hash))
			return &keys[i];
		if (key_count(&keys[i]) < key_count(&keys[smallest]))
			smallest = i;
	}
	if (n->nkeys < s->top_k)
	{
		k = &keys[n->nkeys++];
		k->error = 0;
	}
	else
	{
		k = &keys[smallest];
		k->error = key_count(k);
		n->evicted = true;
	}
	k->hash = hash;
	k->len = len;
	k->refusals = 0;
	k->blocks = 0;
	k->since = now;
	memcpy(k->key, key, Min(Max(len, 0), REFUSED_KEY_BYTES));
	return k;
}

/*
 * Count a refused call (refusals 1) or a block that started (blocks 1), or
 * both, of one key of a limit; key_is_null: the NULL key.  Does nothing
 * when there are no sketches.
 */
void
rl_refused_record(text *name, text *key, bool key_is_null, int refusals,
				  int blocks)
{
	RefusedShared *s = refused_table();
	const char *data = VARDATA_ANY(name);
	int			len = VARSIZE_ANY_EXHDR(name);
	const char *kdata = key_is_null ? "" : VARDATA_ANY(key);
	int			klen = key_is_null ? -1 : VARSIZE_ANY_EXHDR(key);
	uint32		hash;
	uint32		khash;
	TimestampTz now;
	TimestampTz turn_at;
	RefusedGen *g;
	RefusedName *n;
	bool		log_full = false;

	if (s == NULL || len <= 0 || len > RL_MAX_NAME_BYTES)
		return;
	hash = name_hash(MyDatabaseId, data, len);
	khash = hash_bytes((const unsigned char *) kdata, Max(klen, 0));
	now = rl_clock_now();
	turn_at = window_clock(now);

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	turn_window(s, turn_at);
	g = gen_at(gens_of(s), s, s->cur);
	n = find_name(s, g, MyDatabaseId, data, len, hash);
	if (n == NULL && g->used < s->max_names)
	{
		n = name_at(s, g, g->used++);
		n->dbid = MyDatabaseId;
		n->hash = hash;
		n->name_len = len;
		n->nkeys = 0;
		n->evicted = false;
		memcpy(n->name, data, len);
	}
	if (n != NULL)
	{
		RefusedKey *k = count_key(s, n, kdata, klen, khash, now);

		k->refusals += refusals;
		k->blocks += blocks;
	}
	else if (!g->full_logged)
		log_full = g->full_logged = true;
	LWLockRelease(&s->lock);

	if (log_full)
		ereport(LOG,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rl_refused is full: refusals of limit \"%.*s\" are not counted there until its window turns",
						len, data),
				 errdetail("It tracks at most %d limit names per window (ratelimit.refused_max_names).",
						   s->max_names)));
}

/*
 * Forget the counts of one name in this database (name not NULL), or of
 * every name.
 */
void
rl_refused_reset(text *name)
{
	RefusedShared *s = refused_table();

	if (s == NULL)
		return;
	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	if (name == NULL)
		s->started = false;
	else
	{
		const char *data = VARDATA_ANY(name);
		int			len = VARSIZE_ANY_EXHDR(name);
		uint32		hash = name_hash(MyDatabaseId, data, len);

		for (int i = 0; i < 2; i++)
		{
			RefusedName *n = find_name(s, gen_at(gens_of(s), s, i),
									   MyDatabaseId, data, len, hash);

			if (n != NULL)
			{
				n->nkeys = 0;
				n->evicted = false;
			}
		}
	}
	LWLockRelease(&s->lock);
}

/* One key of one name over both generations, as the view shows it. */
typedef struct RefusedRow
{
	const RefusedKey *key;		/* its bytes */
	int64		refusals;
	int64		blocks;
	int64		error;
	TimestampTz since;
} RefusedRow;

/* Bytewise order of two keys, the NULL key first. */
static int
compare_keys(const RefusedKey *x, const RefusedKey *y)
{
	int			c;

	if (x->len < 0 || y->len < 0)
		return (y->len < 0) - (x->len < 0);
	c = memcmp(x->key, y->key, Min(Min(x->len, y->len), REFUSED_KEY_BYTES));
	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* qsort order of rows: the largest count first, then by key. */
static int
compare_rows(const void *a, const void *b)
{
	const RefusedRow *x = a;
	const RefusedRow *y = b;
	int64		cx = x->refusals + x->blocks + x->error;
	int64		cy = y->refusals + y->blocks + y->error;

	if (cx != cy)
		return cx > cy ? -1 : 1;
	return compare_keys(x->key, y->key);
}

/*
 * What a key absent from a name's sketch may have had: the smallest count
 * once a counter was taken over, else nothing.  n NULL: the name was not
 * refused in that window, or found the table full (not bounded here).
 */
static int64
absent_bound(const RefusedName *n)
{
	const RefusedKey *keys;
	int64		smallest;

	if (n == NULL || !n->evicted)
		return 0;
	keys = keys_of((RefusedName *) n);
	smallest = key_count(&keys[0]);
	for (int32 i = 1; i < n->nkeys; i++)
		smallest = Min(smallest, key_count(&keys[i]));
	return smallest;
}

/* The counter of the key of row in n, or NULL. */
static const RefusedKey *
find_key(const RefusedName *n, const RefusedKey *key)
{
	const RefusedKey *keys;

	if (n == NULL)
		return NULL;
	keys = keys_of((RefusedName *) n);
	for (int32 i = 0; i < n->nkeys; i++)
		if (keys[i].hash == key->hash && keys[i].len == key->len &&
			memcmp(keys[i].key, key->key,
				   Min(Max(key->len, 0), REFUSED_KEY_BYTES)) == 0)
			return &keys[i];
	return NULL;
}

/*
 * Add the rows of sketch n (other: the same name in the other generation,
 * or NULL) to rows: every key of n, summed with other's counter of it when
 * both_ways, and only the keys other lacks otherwise.
 */
static int
add_rows(RefusedRow *rows, int nrows, const RefusedName *n,
		 const RefusedName *other, bool both_ways)
{
	const RefusedKey *keys;
	int64		other_bound = absent_bound(other);

	if (n == NULL)
		return nrows;
	keys = keys_of((RefusedName *) n);
	for (int32 i = 0; i < n->nkeys; i++)
	{
		const RefusedKey *o = find_key(other, &keys[i]);
		RefusedRow *row;

		if (o != NULL && !both_ways)
			continue;
		row = &rows[nrows++];
		row->key = &keys[i];
		row->refusals = keys[i].refusals + (o ? o->refusals : 0);
		row->blocks = keys[i].blocks + (o ? o->blocks : 0);
		row->error = keys[i].error + (o ? o->error : other_bound);
		row->since = o ? Min(o->since, keys[i].since) : keys[i].since;
	}
	return nrows;
}

/* Put the top_k rows of one name into the result. */
static void
put_rows(ReturnSetInfo *rsinfo, const RefusedName *n, RefusedRow *rows,
		 int nrows, int top_k)
{
	qsort(rows, nrows, sizeof(RefusedRow), compare_rows);
	for (int i = 0; i < Min(nrows, top_k); i++)
	{
		const RefusedKey *k = rows[i].key;
		Datum		values[7];
		bool		nulls[7] = {false};

		values[0] = ObjectIdGetDatum(n->dbid);
		values[1] = PointerGetDatum(cstring_to_text_with_len(n->name,
															 n->name_len));
		nulls[2] = k->len < 0;
		if (k->len >= 0)
		{
			int			kept = Min(k->len, REFUSED_KEY_BYTES);

			/* a cut key ends before a character it would split */
			kept = pg_mbcliplen(k->key, kept, kept);
			values[2] = PointerGetDatum(cstring_to_text_with_len(k->key, kept));
		}
		values[3] = Int64GetDatum(rows[i].refusals);
		values[4] = Int64GetDatum(rows[i].blocks);
		values[5] = Int64GetDatum(rows[i].error);
		values[6] = TimestampTzGetDatum(rows[i].since);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * Copy the next name of this database at or after *next in the current
 * generation (prev false), or in the previous one and not in the current
 * (prev true), with its sketch in the other generation, into copies (0:
 * the current generation's, 1: the previous one's; NULL when the name has
 * none there).  Takes the lock shared, for one name: a refusal waits for
 * at most one name's copy.  False when no name is left, or when the
 * window the reader turned to (turned_to) has turned since.
 */
static bool
copy_next_name(RefusedShared *s, bool prev, int32 *next, int64 turned_to,
			   RefusedName *bufs[2], RefusedName *copies[2])
{
	bool		found = false;

	LWLockAcquire(&s->lock, LW_SHARED);
	if (s->started && s->cur_window == turned_to)
	{
		RefusedGen *g = gen_at(gens_of(s), s, s->cur ^ prev);
		RefusedGen *other = gen_at(gens_of(s), s, s->cur ^ !prev);

		while (!found && *next < g->used)
		{
			RefusedName *n = name_at(s, g, (*next)++);
			RefusedName *o;

			if (n->dbid != MyDatabaseId)
				continue;
			o = find_name(s, other, n->dbid, n->name, n->name_len, n->hash);
			if (prev && o != NULL)
				continue;		/* listed with the current generation's */
			found = true;
			copies[prev] = bufs[prev];
			copies[!prev] = o != NULL ? bufs[!prev] : NULL;
			memcpy(copies[prev], n, MAXALIGN(sizeof(RefusedName)) +
				   n->nkeys * sizeof(RefusedKey));
			if (o != NULL)
				memcpy(copies[!prev], o, MAXALIGN(sizeof(RefusedName)) +
					   o->nkeys * sizeof(RefusedKey));
		}
	}
	LWLockRelease(&s->lock);
	return found;
}

/*
 * rl_refused_rows(): per name of this database, the top_k keys over both
 * windows, largest count first.  Keys are a database's data, in its
 * encoding: another database's are not shown.
 */
Datum
rl_refused_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RefusedShared *s = refused_table();
	RefusedName *bufs[2];
	RefusedName *copies[2];
	RefusedRow *rows;
	TimestampTz turn_at;
	int64		turned_to;

	InitMaterializedSRF(fcinfo, 0);
	if (s == NULL)
	{
		rl_stats_notice_unavailable();
		return (Datum) 0;
	}
	/* the shape is fixed when the area is made */
	bufs[0] = palloc(s->name_bytes);
	bufs[1] = palloc(s->name_bytes);
	rows = palloc(sizeof(RefusedRow) * 2 * s->top_k);
	turn_at = window_clock(rl_clock_now());

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	turn_window(s, turn_at);
	turned_to = s->cur_window;
	LWLockRelease(&s->lock);

	/* the names refused in the current window, then the others */
	for (int prev = 0; prev < 2; prev++)
	{
		int32		next = 0;

		while (copy_next_name(s, prev, &next, turned_to, bufs, copies))
		{
			int			nrows = add_rows(rows, 0, copies[0], copies[1], true);

			nrows = add_rows(rows, nrows, copies[1], copies[0], false);
			put_rows(rsinfo, copies[prev], rows, nrows, s->top_k);
		}
	}
	return (Datum) 0;
}
