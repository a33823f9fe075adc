/*-------------------------------------------------------------------------
 *
 * call_cache.h
 *	  What a call site of the extension's SQL functions looks up once: the
 *	  function's schema, key type and result descriptor.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_CALL_CACHE_H
#define RATELIMIT_CALL_CACHE_H

#include "fmgr.h"
#include "access/tupdesc.h"

/* What a call site looks up once and keeps in fn_extra. */
typedef struct RlCallCache
{
	Oid			nspid;			/* the extension's schema */
	Oid			key_type;		/* declared type of argument 1 */
	TupleDesc	result_desc;	/* blessed, or NULL for void results */
} RlCallCache;

extern RlCallCache *rl_call_cache(FunctionCallInfo fcinfo);

#endif							/* RATELIMIT_CALL_CACHE_H */
