/*-------------------------------------------------------------------------
 *
 * definitions.c
 *	  Named definitions, cached per backend.
 *
 * Every call needs its name's policy, and definitions change rarely, so a
 * backend keeps what it read (including "no definition", for names used
 * with an inline config) instead of querying rl_definitions on every call.
 *
 * Freshness is PostgreSQL's own: every change to rl_definitions, whether
 * through rl_define and rl_undefine or by hand, fires a statement trigger
 * that queues a relcache invalidation of the table.  The invalidation is
 * delivered to this backend at its next command (its own changes) or, for
 * other backends, when the changing transaction commits; a rollback
 * delivers it too.  Each lookup first accepts pending invalidations, so a
 * call sees a definition as soon as a fresh snapshot would.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/trigger.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "definitions.h"
#include "limit.h"
#include "storage.h"

/* More names than this in one backend: start over rather than grow. */
#define DEFINITIONS_CACHE_MAX 10000

typedef struct RlDefinitionEntry
{
	char		name[RL_MAX_NAME_BYTES + 1];	/* hash key */
	bool		defined;
	RlPolicy	policy;
} RlDefinitionEntry;

static HTAB *cache = NULL;
static Oid	cache_relid = InvalidOid;	/* rl_definitions, once known */
static bool callback_registered = false;

/* Relcache invalidation callback: forget everything on a change. */
static void
invalidate(Datum arg, Oid relid)
{
	if (cache != NULL && (relid == InvalidOid || relid == cache_relid))
	{
		hash_destroy(cache);
		cache = NULL;
		cache_relid = InvalidOid;	/* the table may be gone, or new */
	}
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

	Assert(len <= RL_MAX_NAME_BYTES);
	memset(key, 0, sizeof(key));
	memcpy(key, VARDATA_ANY(name), len);

	AcceptInvalidationMessages();
	entry = hash_search(get_cache(), key, HASH_FIND, &found);
	if (found)
	{
		*policy = entry->policy;
		return entry->defined;
	}

	/* The query may deliver invalidations: enter the result only after. */
	defined = rl_storage_get_definition(name, policy);
	cache_relid = rl_storage_definitions_relid();
	if (hash_get_num_entries(get_cache()) >= DEFINITIONS_CACHE_MAX)
		invalidate((Datum) 0, InvalidOid);
	entry = hash_search(get_cache(), key, HASH_ENTER, &found);
	entry->defined = defined;
	if (defined)
		entry->policy = *policy;
	return defined;
}

PG_FUNCTION_INFO_V1(rl_definitions_changed);

/*
 * Statement trigger on rl_definitions: tell every backend (this one at its
 * next command, the others at commit) to drop its cached definitions.
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
	return PointerGetDatum(NULL);
}
