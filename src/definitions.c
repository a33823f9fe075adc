/*-------------------------------------------------------------------------
 *
 * definitions.c
 *	  Named definitions, cached per backend.
 *
 * Every call needs its name's policy, and definitions change rarely, so a
 * backend keeps what it read (including "no definition", for names used
 * with an inline config) instead of querying rl_definitions on every call.
 *
 * Freshness is PostgreSQL's own, as for the catalogs: every change to
 * rl_definitions queues a relcache invalidation of the table, from one of
 * two triggers that call rl_definitions_changed.  A row trigger
 * (rl_definitions_row_changed, after insert, update and delete) catches
 * every changed row, however it is written: rl_define and rl_undefine, SQL
 * by hand, COPY and pg_restore, and a logical-replication apply worker,
 * which fires row triggers only.  A statement trigger
 * (rl_definitions_changed, after every statement that changes the table)
 * catches TRUNCATE, which has no rows to fire for, including a TRUNCATE an
 * apply worker replays.  Both are ENABLE ALWAYS, so they fire under
 * session_replication_role = replica too, as apply workers run.  The
 * invalidation reaches this backend at its next command (its own changes)
 * or, for other backends, when the changing transaction commits, before it
 * releases its locks; a rollback delivers it too.  While the row trigger
 * does not fire always (disabled, or left plain ENABLE by pg_restore
 * --disable-triggers), nothing is cached: see changes_reach_us.
 *
 * Like the catalogs, definitions are read with a fresh snapshot, never the
 * transaction's: a cached entry then never holds anything older than what
 * was committed when it was read, so it stays right until the next
 * invalidation, whatever the isolation level of the transaction that read
 * it.  Each lookup first accepts pending invalidations, so every call uses
 * the newest committed definition (and its own transaction's changes),
 * also inside a REPEATABLE READ or SERIALIZABLE transaction.  A result
 * whose read overlapped an invalidation serves that call only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "access.h"
#include "definitions.h"
#include "names.h"
#include "memory.h"
#include "storage.h"

static bool last_tracked = false;

/* More names than this in one backend: start over rather than grow. */
#define DEFINITIONS_CACHE_MAX 10000

typedef struct RlDefinitionEntry
{
	char		name[RL_MAX_NAME_BYTES + 1];	/* hash key */
	bool		defined;
	RlPolicy	policy;
} RlDefinitionEntry;

/*
 * Overrides (rl_overrides) are cached the same way, per (name, key) asked
 * for, found or not, and only for names whose definition says they have
 * some: a change to either table forgets both caches.  A key assigned to a
 * plan (rl_plans) is an override that takes the plan's numbers, so a
 * change to rl_plans forgets them too.
 */
#define OVERRIDES_CACHE_MAX 1000
#define OVERRIDE_KEY_BYTES (RL_MAX_NAME_BYTES + 1 + RL_MAX_KEY_BYTES + 1)

typedef struct RlOverrideEntry
{
	char		key[OVERRIDE_KEY_BYTES];	/* hash key: name, U+001F, key */
	bool		found;
	RlPolicy	policy;			/* the definition's, with the override in */
} RlOverrideEntry;

/*
 * Allow and deny lists (rl_access) too, per (name, address) asked for, only
 * for names whose definition says they have entries: every entry whose
 * network holds the address, expired or not, so that expiry is judged at
 * each call's time.  In a context of their own, dropped whole.
 */
#define ACCESS_CACHE_MAX 10000

typedef struct RlAccessCacheEntry
{
	char		key[OVERRIDE_KEY_BYTES];	/* hash key: name, U+001F, address */
	int			n;
	RlAccessEntry *entries;
} RlAccessCacheEntry;

static HTAB *cache = NULL;
/* the entry of the last name looked up: calls name one limit in a row */
static RlDefinitionEntry *last_entry = NULL;
static HTAB *override_cache = NULL;
static HTAB *access_cache = NULL;
static MemoryContext access_cxt = NULL;
static Oid	cache_relid = InvalidOid;	/* rl_definitions, once known */
static Oid	cache_overrides_relid = InvalidOid; /* rl_overrides, once known */
static Oid	cache_plans_relid = InvalidOid; /* rl_plans, once known */
static Oid	cache_access_relid = InvalidOid;	/* rl_access, once known */
static uint64 generation = 0;	/* counts invalidations */
static bool callback_registered = false;

/* Drop every cached definition. */
static void
forget_definitions(void)
{
	if (cache != NULL)
	{
		hash_destroy(cache);
		cache = NULL;
		last_entry = NULL;
	}
	if (override_cache != NULL)
	{
		hash_destroy(override_cache);
		override_cache = NULL;
	}
	if (access_cxt != NULL)
	{
		MemoryContextDelete(access_cxt);
		access_cxt = NULL;
		access_cache = NULL;
	}
	generation++;
}

/*
 * Relcache invalidation callback: forget everything on a change to
 * rl_definitions, rl_overrides, rl_plans or rl_access, or on a cache reset
 * (relid InvalidOid).  Which tables those are gets looked up again too: they may
 * be gone, or new.
 */
static void
invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == cache_relid ||
		relid == cache_overrides_relid || relid == cache_plans_relid ||
		relid == cache_access_relid)
	{
		forget_definitions();
		cache_relid = InvalidOid;
		cache_overrides_relid = InvalidOid;
		cache_plans_relid = InvalidOid;
		cache_access_relid = InvalidOid;
	}
}

/*
 * Learn which tables rl_definitions, rl_overrides, rl_plans and rl_access
 * are, before reading any, so that an invalidation of them that arrives
 * during the read is recognised (invalidate resets them all).
 */
static void
know_tables(void)
{
	if (OidIsValid(cache_relid))
		return;
	cache_relid = rl_storage_definitions_relid();
	cache_overrides_relid = rl_storage_overrides_relid();
	cache_plans_relid = get_relname_relid("rl_plans",
										  get_rel_namespace(cache_relid));
	cache_access_relid = rl_storage_access_relid();
}

/*
 * Whether every change to rl_definitions reaches this backend: the row
 * trigger that sends the invalidation fires on INSERT, UPDATE and DELETE
 * whatever session_replication_role says (ENABLE ALWAYS), as logical
 * replication's apply workers need.  ALTER TABLE ... DISABLE TRIGGER (ALL,
 * USER, or by name), and pg_restore --disable-triggers, which leaves it
 * plain ENABLE afterwards, change that; they also change the table's
 * relcache entry, which invalidates this cache, so the next lookup looks
 * again.  Until the trigger fires always again, nothing is cached: every
 * call reads its definition, slower but never stale.  (TRUNCATE gives the
 * table a new file, an invalidation of its own.)
 */
static bool
changes_reach_us(Oid relid, const char *trigger)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TriggerDesc *triggers = rel->trigdesc;
	bool		always = false;

	for (int i = 0; triggers != NULL && i < triggers->numtriggers; i++)
	{
		Trigger    *t = &triggers->triggers[i];

		if (strcmp(t->tgname, trigger) == 0 &&
			t->tgenabled == TRIGGER_FIRES_ALWAYS &&
			TRIGGER_FOR_ROW(t->tgtype) && TRIGGER_FOR_AFTER(t->tgtype) &&
			TRIGGER_FOR_INSERT(t->tgtype) && TRIGGER_FOR_UPDATE(t->tgtype) &&
			TRIGGER_FOR_DELETE(t->tgtype))
			always = true;
	}
	relation_close(rel, AccessShareLock);
	return always;
}

/*
 * rl_definition_lookup, with the definitions' epoch read before it: the
 * memory store's count of committed definition changes (memory.c), so the
 * policy found is never older than *epoch.  A definition whose changes do
 * not reach every session (rl_definition_tracked) has the epoch
 * RL_MEMORY_EPOCH_UNTRACKED.
 */
bool
rl_definition_lookup_at(text *name, RlPolicy *policy, uint64 *epoch)
{
	bool		found;

	*epoch = rl_memory_epoch();
	found = rl_definition_lookup(name, policy);
	if (found && !rl_definition_tracked())
		*epoch = RL_MEMORY_EPOCH_UNTRACKED;
	return found;
}

/*
 * Whether the definition the last lookup returned is one whose changes
 * reach every session (the row trigger fires always): the memory store
 * trusts an idle judgement made under it only then.
 */
bool
rl_definition_tracked(void)
{
	return last_tracked;
}

/*
 * The OID of rl_definitions (the memory store's space), as know_tables
 * learned it: right until the invalidation of the table that resets it,
 * as the system cache's answer would be.  Looked up when not known, or
 * while no invalidation could reset it (the callback not yet registered).
 */
Oid
rl_definitions_relid(void)
{
	if (callback_registered && OidIsValid(cache_relid))
		return cache_relid;
	return rl_storage_definitions_relid();
}

/* The cache, created on first use. */
static HTAB *
get_cache(void)
{
	HASHCTL		ctl;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(invalidate, (Datum) 0);
		callback_registered = true;
	}
	if (cache == NULL)
	{
		ctl.keysize = RL_MAX_NAME_BYTES + 1;
		ctl.entrysize = sizeof(RlDefinitionEntry);
		ctl.hcxt = CacheMemoryContext;
		cache = hash_create("ratelimit definitions", 64, &ctl,
							HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	return cache;
}

/*
 * The policy of a name (checked by rl_target_init); false when the name
 * has no definition.  Needs rl_storage_begin.
 */
bool
rl_definition_lookup(text *name, RlPolicy *policy)
{
	char		key[RL_MAX_NAME_BYTES + 1];
	int			len = VARSIZE_ANY_EXHDR(name);
	RlDefinitionEntry *entry;
	bool		found;
	bool		defined;
	uint64		seen;
	Oid			relid;
	Oid			overrides_relid;
	Oid			access_relid;

	Assert(len <= RL_MAX_NAME_BYTES);
	AcceptInvalidationMessages();
	/* the last name's entry; its name is NUL-padded, and a name has no NUL */
	entry = last_entry;
	if (entry == NULL || entry->name[len] != '\0' ||
		memcmp(entry->name, VARDATA_ANY(name), len) != 0)
	{
		memset(key, 0, sizeof(key));
		memcpy(key, VARDATA_ANY(name), len);
		entry = hash_search(get_cache(), key, HASH_FIND, &found);
	}
	if (entry != NULL)
	{
		/* cached only while every change reaches us */
		last_tracked = true;
		last_entry = entry;
		*policy = entry->policy;
		return entry->defined;
	}

	/*
	 * Know the table before reading it, so that an invalidation of it that
	 * arrives during the read is recognised; then keep the result only if
	 * none arrived.
	 */
	know_tables();
	relid = cache_relid;		/* an invalidation during the read resets it */
	overrides_relid = cache_overrides_relid;
	access_relid = cache_access_relid;
	seen = generation;
	defined = rl_storage_get_definition(name, policy);
	if (generation != seen)
	{
		/* the table changed meanwhile (perhaps dropped): judge nothing */
		last_tracked = false;
		return defined;
	}
	/*
	 * The definition carries whether the name has overrides and list
	 * entries, read from rl_overrides and rl_access: it is cached only while
	 * the changes to the three tables reach us, or a hand edit of either
	 * made with its triggers off would go unseen behind a cached "none".
	 */
	last_tracked = changes_reach_us(relid, "rl_definitions_row_changed") &&
		(!OidIsValid(overrides_relid) ||
		 changes_reach_us(overrides_relid, "rl_overrides_row_changed")) &&
		(!OidIsValid(access_relid) ||
		 changes_reach_us(access_relid, "rl_access_row_changed"));
	if (!last_tracked)
	{
		rl_memory_untracked_definitions();
		return defined;
	}
	if (hash_get_num_entries(get_cache()) >= DEFINITIONS_CACHE_MAX)
		forget_definitions();
	entry = hash_search(get_cache(), key, HASH_ENTER, &found);
	entry->defined = defined;
	if (defined)
		entry->policy = *policy;
	return defined;
}

/* Whether a row of rl_definitions is a memory limit's. */
static bool
memory_row(HeapTuple tuple, TupleDesc desc)
{
	int			attnum = SPI_fnumber(desc, "storage");
	bool		isnull;
	Datum		d;

	if (tuple == NULL || attnum <= 0)
		return false;
	d = heap_getattr(tuple, attnum, desc, &isnull);
	return !isnull && strcmp(TextDatumGetCString(d), "memory") == 0;
}

/*
 * Whether name (NULL: any name) is defined as a memory limit in the schema
 * of rl_overrides (rel), read with the trigger's snapshot.
 */
static bool
memory_definition(Relation rel, text *name)
{
	char	   *sql;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {PointerGetDatum(name)};
	bool		memory = false;

	sql = psprintf("SELECT FROM ONLY %s.rl_definitions"
				   " WHERE storage OPERATOR(pg_catalog.=) 'memory'%s",
				   quote_identifier(get_namespace_name(RelationGetNamespace(rel))),
				   name ? " AND name OPERATOR(pg_catalog.=) $1" : "");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, name ? 1 : 0, argtypes, args, NULL, true,
							  1) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed for \"%s\"", sql);
	memory = SPI_processed > 0;
	SPI_finish();
	return memory;
}

/*
 * A change to an override of a memory limit's key: the memory store judges
 * the key under its new policy from then on, so at commit the name's
 * entries are no longer dropped for being idle under the policy a call
 * last wrote them with (the entry does not tell whose key it is).
 */
static void
memory_overrides_changed(TriggerData *trigdata)
{
	Relation	rel = trigdata->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			space = get_relname_relid("rl_definitions",
										  RelationGetNamespace(rel));
	HeapTuple	rows[2] = {trigdata->tg_trigtuple, NULL};
	bool		isnull;

	if (!OidIsValid(space))
		return;
	if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
	{
		if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event) &&
			memory_definition(rel, NULL))
			rl_memory_name_changed(space, NULL, false);
		return;
	}
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		rows[1] = trigdata->tg_newtuple;
	for (int i = 0; i < 2 && rows[i] != NULL; i++)
	{
		text	   *name = DatumGetTextPP(heap_getattr(rows[i],
													   SPI_fnumber(desc, "name"),
													   desc, &isnull));

		if (!isnull && memory_definition(rel, name))
			rl_memory_name_changed(space, name, false);
	}
}

/*
 * A change to the definition of a memory limit reaches the memory store
 * at commit (rl_memory_name_changed): the entries of a name whose policy
 * changed are no longer dropped for being idle under the old one.
 */
static void
memory_names_changed(TriggerData *trigdata)
{
	TupleDesc	desc = RelationGetDescr(trigdata->tg_relation);
	Oid			space = RelationGetRelid(trigdata->tg_relation);
	int			name_att = SPI_fnumber(desc, "name");
	HeapTuple	before = NULL;
	HeapTuple	after = NULL;
	text	   *before_name = NULL;
	text	   *after_name = NULL;
	bool		same;
	bool		isnull;

	if (SPI_fnumber(desc, "storage") <= 0)
	{
		memory_overrides_changed(trigdata);
		return;
	}
	if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
	{
		if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
			rl_memory_name_changed(space, NULL, true);
		return;
	}
	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		after = trigdata->tg_trigtuple;
	else if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		before = trigdata->tg_trigtuple;
	else
	{
		before = trigdata->tg_trigtuple;
		after = trigdata->tg_newtuple;
	}
	if (!memory_row(before, desc) && !memory_row(after, desc))
		return;
	if (before)
		before_name = DatumGetTextPP(heap_getattr(before, name_att, desc,
												  &isnull));
	if (after)
		after_name = DatumGetTextPP(heap_getattr(after, name_att, desc,
												 &isnull));
	same = before_name && after_name &&
		rl_text_equal(before_name, after_name);
	/* the old name's entries: gone unless the same name stays in memory */
	if (memory_row(before, desc))
		rl_memory_name_changed(space, before_name,
							   !(same && memory_row(after, desc)));
	if (memory_row(after, desc) && !(same && memory_row(before, desc)))
		rl_memory_name_changed(space, after_name, false);
}

PG_FUNCTION_INFO_V1(rl_definitions_changed);

/*
 * Statement or row trigger on rl_definitions: tell every backend (this one
 * at its next command, the others at commit) to drop its cached
 * definitions.  A statement that changes many rows queues one invalidation:
 * inval.c drops the duplicates.
 */
Datum
rl_definitions_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rl_definitions_changed() must be called as a trigger")));
	CacheInvalidateRelcache(trigdata->tg_relation);
	/* lists (rl_access) change no policy the memory store judges under */
	if (SPI_fnumber(RelationGetDescr(trigdata->tg_relation), "net") <= 0)
		memory_names_changed(trigdata);

	/*
	 * An AFTER trigger's result is ignored; should someone attach this as a
	 * BEFORE row trigger, the row still goes through unchanged.
	 */
	if (TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		return PointerGetDatum(TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
							   trigdata->tg_newtuple : trigdata->tg_trigtuple);
	return PointerGetDatum(NULL);
}

/* The hash key of a (name, key) cache entry: name, U+001F, key, zeros. */
static void
pair_key(char *hkey, text *name, text *key)
{
	int			nlen = VARSIZE_ANY_EXHDR(name);
	int			klen = VARSIZE_ANY_EXHDR(key);

	Assert(nlen <= RL_MAX_NAME_BYTES && klen <= RL_MAX_KEY_BYTES);
	memset(hkey, 0, OVERRIDE_KEY_BYTES);
	memcpy(hkey, VARDATA_ANY(name), nlen);
	hkey[nlen] = RL_INLINE_SEPARATOR;
	memcpy(hkey + nlen + 1, VARDATA_ANY(key), klen);
}

/*
 * The policy of one key of a defined name that has overrides (the policy
 * rl_definition_lookup returned, in policy): its override's rate, period,
 * capacity and max_reserved, or those of the plan it is assigned to,
 * replace the definition's.  False, policy unchanged, when the key has
 * none.  Cached as definitions are, while the changes to the three tables
 * reach every backend.  Needs rl_storage_begin.
 */
bool
rl_override_lookup(text *name, text *key, RlPolicy *policy)
{
	char		hkey[OVERRIDE_KEY_BYTES];
	RlOverrideEntry *entry;
	HASHCTL		ctl;
	bool		found;
	bool		overridden;
	RlPolicy	result = *policy;
	uint64		seen;
	Oid			relid;
	Oid			plans_relid;

	pair_key(hkey, name, key);
	AcceptInvalidationMessages();
	if (override_cache != NULL)
	{
		entry = hash_search(override_cache, hkey, HASH_FIND, &found);
		if (found)
		{
			if (entry->found)
				*policy = entry->policy;
			return entry->found;
		}
	}

	know_tables();
	relid = cache_overrides_relid;
	plans_relid = cache_plans_relid;
	seen = generation;
	overridden = rl_storage_get_override(name, key, &result);
	if (overridden)
		*policy = result;
	if (generation != seen || !OidIsValid(relid) ||
		!changes_reach_us(relid, "rl_overrides_row_changed") ||
		!OidIsValid(plans_relid) ||
		!changes_reach_us(plans_relid, "rl_plans_row_changed") ||
		!last_tracked)
		return overridden;
	if (override_cache == NULL ||
		hash_get_num_entries(override_cache) >= OVERRIDES_CACHE_MAX)
	{
		if (override_cache != NULL)
			hash_destroy(override_cache);
		ctl.keysize = OVERRIDE_KEY_BYTES;
		ctl.entrysize = sizeof(RlOverrideEntry);
		ctl.hcxt = CacheMemoryContext;
		override_cache = hash_create("ratelimit overrides", 64, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(override_cache, hkey, HASH_ENTER, &found);
	entry->found = overridden;
	entry->policy = *policy;
	return overridden;
}


/*
 * The entries of the lists of a defined name that has some (the policy
 * rl_definition_lookup returned says so) whose network holds address, a
 * host address in text form: the most specific first, deny before allow at
 * the same network; returns how many.  Cached as definitions are, while
 * the changes to rl_access reach every backend: a committed rl_deny is
 * seen by the next call of every session.  Needs rl_storage_begin.
 */
int
rl_access_lookup(text *name, text *address, RlAccessEntry **entries)
{
	char		hkey[OVERRIDE_KEY_BYTES];
	RlAccessCacheEntry *entry;
	HASHCTL		ctl;
	bool		found;
	int			n;
	uint64		seen;
	Oid			relid;

	pair_key(hkey, name, address);
	AcceptInvalidationMessages();
	if (access_cache != NULL)
	{
		entry = hash_search(access_cache, hkey, HASH_FIND, &found);
		if (found)
		{
			*entries = entry->entries;
			return entry->n;
		}
	}

	know_tables();
	relid = cache_access_relid;
	seen = generation;
	n = rl_storage_get_access(name, address, CurrentMemoryContext, entries);
	if (generation != seen || !OidIsValid(relid) ||
		!changes_reach_us(relid, "rl_access_row_changed") || !last_tracked)
		return n;
	if (access_cache != NULL &&
		hash_get_num_entries(access_cache) >= ACCESS_CACHE_MAX)
		forget_definitions();
	if (access_cache == NULL)
	{
		access_cxt = AllocSetContextCreate(CacheMemoryContext,
										   "ratelimit access lists",
										   ALLOCSET_SMALL_SIZES);
		ctl.keysize = OVERRIDE_KEY_BYTES;
		ctl.entrysize = sizeof(RlAccessCacheEntry);
		ctl.hcxt = access_cxt;
		access_cache = hash_create("ratelimit access lists", 64, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(access_cache, hkey, HASH_ENTER, &found);
	entry->n = n;
	entry->entries = MemoryContextAlloc(access_cxt,
										sizeof(RlAccessEntry) * Max(n, 1));
	memcpy(entry->entries, *entries, sizeof(RlAccessEntry) * n);
	*entries = entry->entries;
	return n;
}
