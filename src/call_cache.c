/*-------------------------------------------------------------------------
 *
 * call_cache.c
 *	  The call-site cache of the extension's SQL functions (fn_extra), and
 *	  the backend's table of functions it is copied from.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "funcapi.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "call_cache.h"

/* The key is every function's second argument (when it has one). */
#define CALL_ARG_KEY	1

/*
 * What fn_extra keeps, looked up once per function for the backend: an
 * FmgrInfo, and so fn_extra, lasts one execution of a statement (of a
 * prepared one too), and looking the function up on each cost more than a
 * memory limit's own work.  What is kept comes from the function's pg_proc
 * row and its result type's attributes, so a change to pg_proc or pg_type,
 * or any relcache invalidation (ALTER TYPE changes a composite type's
 * relation), forgets it all, at the next call: nothing a call in progress
 * uses is freed under it, since every fn_extra has its own copy.
 */
#define KNOWN_FUNCTIONS 64

typedef struct RlKnownFunction
{
	Oid			fn_oid;
	RlCallCache cache;			/* result_desc: the master, in
								 * CacheMemoryContext */
} RlKnownFunction;

static RlKnownFunction known[KNOWN_FUNCTIONS];
static int	nknown = 0;
static bool known_stale = false;
static bool known_callbacks = false;

static void
forget_known_syscache(Datum arg, int cacheid, uint32 hashvalue)
{
	known_stale = true;
}

static void
forget_known_relcache(Datum arg, Oid relid)
{
	known_stale = true;
}

/*
 * The function's schema, key type and result descriptor (blessed; NULL
 * for a void result, or one that only the call expression tells), into
 * *out, allocated in the current memory context.
 */
static void
look_up_function(Oid fn_oid, RlCallCache *out)
{
	HeapTuple	proc;
	Form_pg_proc form;
	TupleDesc	desc;

	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn_oid));
	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", fn_oid);
	form = (Form_pg_proc) GETSTRUCT(proc);
	out->nspid = form->pronamespace;
	out->key_type = form->pronargs > CALL_ARG_KEY ?
		form->proargtypes.values[CALL_ARG_KEY] : InvalidOid;
	ReleaseSysCache(proc);
	out->result_desc = NULL;
	/* a copy of its own, made here */
	if (get_func_result_type(fn_oid, NULL, &desc) == TYPEFUNC_COMPOSITE)
		out->result_desc = BlessTupleDesc(desc);
}

/* The backend's entry for a function, looked up when it has none. */
static const RlCallCache *
known_function(Oid fn_oid)
{
	static RlCallCache scratch;
	MemoryContext old;

	if (!known_callbacks)
	{
		CacheRegisterSyscacheCallback(PROCOID, forget_known_syscache, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, forget_known_syscache, (Datum) 0);
		CacheRegisterRelcacheCallback(forget_known_relcache, (Datum) 0);
		known_callbacks = true;
	}
	if (known_stale)
	{
		for (int i = 0; i < nknown; i++)
			if (known[i].cache.result_desc != NULL)
				FreeTupleDesc(known[i].cache.result_desc);
		nknown = 0;
		known_stale = false;
	}
	for (int i = 0; i < nknown; i++)
		if (known[i].fn_oid == fn_oid)
			return &known[i].cache;

	/* in the caller's memory, with whatever the lookup leaves there */
	look_up_function(fn_oid, &scratch);
	/* an invalidation while it was read: this call's alone */
	if (known_stale || nknown >= KNOWN_FUNCTIONS)
		return &scratch;
	if (scratch.result_desc != NULL)
	{
		old = MemoryContextSwitchTo(CacheMemoryContext);
		scratch.result_desc = CreateTupleDescCopy(scratch.result_desc);
		MemoryContextSwitchTo(old);
	}
	known[nknown].fn_oid = fn_oid;
	known[nknown].cache = scratch;
	return &known[nknown++].cache;
}

/* The call-site cache, built on the first call through this FmgrInfo. */
RlCallCache *
rl_call_cache(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	RlCallCache *cache = flinfo->fn_extra;
	const RlCallCache *k;
	TupleDesc	desc;

	if (cache)
		return cache;
	k = known_function(flinfo->fn_oid);
	cache = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(RlCallCache));
	*cache = *k;
	if (k->result_desc != NULL)
	{
		/* a copy keeps the type and typmod the master was blessed with */
		MemoryContext old = MemoryContextSwitchTo(flinfo->fn_mcxt);

		cache->result_desc = CreateTupleDescCopy(k->result_desc);
		MemoryContextSwitchTo(old);
	}
	else if (get_call_result_type(fcinfo, NULL, &desc) == TYPEFUNC_COMPOSITE)
	{
		MemoryContext old = MemoryContextSwitchTo(flinfo->fn_mcxt);

		cache->result_desc = BlessTupleDesc(CreateTupleDescCopy(desc));
		MemoryContextSwitchTo(old);
	}
	flinfo->fn_extra = cache;
	return cache;
}

