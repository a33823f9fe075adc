/*-------------------------------------------------------------------------
 *
 * functions.c
 *	  The SQL-callable functions: arguments in, errors and result rows out.
 *
 * Each function checks its arguments before it touches storage, so bad
 * input changes nothing.  The key may be text, bigint, integer or uuid;
 * one C function serves every overload and stores the key's text form, so
 * 42 and '42' name the same key.  The NULL key (the one limit shared by a
 * name) is stored as '', and so an empty text key is refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "algebra.h"
#include "clock.h"
#include "errors.h"
#include "policy.h"
#include "storage.h"

PG_MODULE_MAGIC;

/* Bounds that keep a (name, key, shard) entry far below btree's limit. */
#define RL_MAX_NAME_BYTES	256
#define RL_MAX_KEY_BYTES	1024

/* Argument positions shared by rl_limit, rl_check, rl_value, rl_reset. */
#define ARG_NAME		0
#define ARG_KEY			1
#define ARG_COUNT		2
#define ARG_RESERVE		3
#define ARG_THROWS		4
#define ARG_CONFIG		5
#define ARG_VALUE_CONFIG 2		/* rl_value(name, key, config) */

/* What a call site looks up once and keeps in fn_extra. */
typedef struct RlCallCache
{
	Oid			nspid;			/* the extension's schema */
	Oid			key_type;		/* declared type of argument 1 */
	TupleDesc	result_desc;	/* blessed, or NULL for void results */
} RlCallCache;

/* The limit a call addresses, in stored form. */
typedef struct RlTarget
{
	text	   *name;
	text	   *key;			/* '' for the NULL key */
	bool		key_is_null;
	RlPolicy	policy;
	int64		origin;			/* a window start (fixed window) */
} RlTarget;

PG_FUNCTION_INFO_V1(rl_define);
PG_FUNCTION_INFO_V1(rl_undefine);
PG_FUNCTION_INFO_V1(rl_token_bucket);
PG_FUNCTION_INFO_V1(rl_fixed_window);
PG_FUNCTION_INFO_V1(rl_limit);
PG_FUNCTION_INFO_V1(rl_check);
PG_FUNCTION_INFO_V1(rl_value);
PG_FUNCTION_INFO_V1(rl_reset);

void		_PG_init(void);

/* Module load: define the settings. */
void
_PG_init(void)
{
	rl_clock_init();
}

/* The call-site cache, built on the first call through this FmgrInfo. */
static RlCallCache *
call_cache(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	RlCallCache *cache = flinfo->fn_extra;
	HeapTuple	proc;
	Form_pg_proc form;
	TupleDesc	desc;

	if (cache)
		return cache;
	cache = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(RlCallCache));

	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(flinfo->fn_oid));
	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", flinfo->fn_oid);
	form = (Form_pg_proc) GETSTRUCT(proc);
	cache->nspid = form->pronamespace;
	cache->key_type = form->pronargs > ARG_KEY ?
		form->proargtypes.values[ARG_KEY] : InvalidOid;
	ReleaseSysCache(proc);

	if (get_call_result_type(fcinfo, NULL, &desc) == TYPEFUNC_COMPOSITE)
	{
		MemoryContext old = MemoryContextSwitchTo(flinfo->fn_mcxt);

		cache->result_desc = BlessTupleDesc(CreateTupleDescCopy(desc));
		MemoryContextSwitchTo(old);
	}
	flinfo->fn_extra = cache;
	return cache;
}

/* Raise the error for a NULL where the argument is required. */
static void
require_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
}

/* The limit name argument, checked. */
static text *
call_name(FunctionCallInfo fcinfo)
{
	text	   *name;
	int			len;

	require_arg(fcinfo, ARG_NAME, "name");
	name = PG_GETARG_TEXT_PP(ARG_NAME);
	len = VARSIZE_ANY_EXHDR(name);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rate limit name must not be empty")));
	if (len > RL_MAX_NAME_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rate limit name is too long"),
				 errdetail("The name is %d bytes; the limit is %d.",
						   len, RL_MAX_NAME_BYTES)));
	return name;
}

/* The key argument in stored text form ('' for NULL), checked. */
static text *
call_key(FunctionCallInfo fcinfo, RlCallCache *cache, bool *is_null)
{
	text	   *key;
	int			len;
	char		buf[MAXINT8LEN + 1];

	*is_null = PG_ARGISNULL(ARG_KEY);
	if (*is_null)
		return cstring_to_text("");

	switch (cache->key_type)
	{
		case TEXTOID:
			key = PG_GETARG_TEXT_PP(ARG_KEY);
			break;
		case INT8OID:
			pg_lltoa(PG_GETARG_INT64(ARG_KEY), buf);
			key = cstring_to_text(buf);
			break;
		case INT4OID:
			pg_ltoa(PG_GETARG_INT32(ARG_KEY), buf);
			key = cstring_to_text(buf);
			break;
		case INT2OID:
			pg_ltoa(PG_GETARG_INT16(ARG_KEY), buf);
			key = cstring_to_text(buf);
			break;
		case UUIDOID:
			key = cstring_to_text(DatumGetCString(
												  DirectFunctionCall1(uuid_out, PG_GETARG_DATUM(ARG_KEY))));
			break;
		default:
			elog(ERROR, "unexpected rate limit key type %u", cache->key_type);
	}

	len = VARSIZE_ANY_EXHDR(key);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rate limit key must not be empty"),
				 errhint("Pass NULL as the key for the limit shared by the whole name.")));
	if (len > RL_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rate limit key is too long"),
				 errdetail("The key is %d bytes; the limit is %d.",
						   len, RL_MAX_KEY_BYTES)));
	return key;
}

/*
 * Find the policy for a call: the stored definition, or the inline config
 * for a name that has none.  Needs rl_storage_begin.
 */
static void
resolve_target(FunctionCallInfo fcinfo, RlCallCache *cache, int config_arg,
			   RlTarget *target)
{
	char	   *name = text_to_cstring(target->name);
	bool		defined;

	defined = rl_storage_get_definition(target->name, &target->policy);
	if (!PG_ARGISNULL(config_arg))
	{
		if (defined)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("rate limit \"%s\" is already defined", name),
					 errdetail("An inline config would apply a second policy to the same state."),
					 errhint("Call it without config, or use another name.")));
		rl_policy_from_composite(PG_GETARG_HEAPTUPLEHEADER(config_arg),
								 &target->policy);
	}
	else if (!defined)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist", name),
				 errhint("Define it with rl_define(), or pass an inline config.")));

	if (target->policy.shards != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("sharded rate limits are not supported yet"),
				 errdetail("Rate limit \"%s\" has %d shards.",
						   name, target->policy.shards)));

	target->origin = rl_window_origin(&target->policy,
									  VARDATA_ANY(target->name),
									  VARSIZE_ANY_EXHDR(target->name),
									  VARDATA_ANY(target->key),
									  VARSIZE_ANY_EXHDR(target->key),
									  target->key_is_null);
	pfree(name);
}

/* Read name and key; the policy comes later, from resolve_target. */
static void
call_target(FunctionCallInfo fcinfo, RlCallCache *cache, RlTarget *target)
{
	target->name = call_name(fcinfo);
	target->key = call_key(fcinfo, cache, &target->key_is_null);
}

/* Decide, turning an answer beyond RL_MAX_WAIT into an error. */
static void
decide(const RlTarget *target, const RlState *state, TimestampTz now,
	   double count, bool reserve, RlDecision *decision)
{
	if (rl_decide(&target->policy, target->origin, state, now, count, reserve,
				  decision) != RL_DECIDED)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("rate limit wait exceeds 1000 years"),
				 errdetail("The count is too large for the rate of the limit.")));
}

/*
 * The consuming path: lock the row (creating it if need be), decide at a
 * time read after the lock, and write only a granted decision.
 */
static void
consume(const RlTarget *target, double count, bool reserve,
		RlDecision *decision)
{
	RlRowKey	row = {target->name, target->key, 0};

	for (int attempt = 0;; attempt++)
	{
		RlState		state;
		ItemPointerData tid;

		if (rl_storage_lock(&row, &state, &tid))
		{
			decide(target, &state, rl_clock_now(), count, reserve, decision);
			if (decision->ok)
				rl_storage_update(&tid, &decision->state);
			return;
		}
		decide(target, NULL, rl_clock_now(), count, reserve, decision);
		if (!decision->ok || rl_storage_insert(&row, &decision->state))
			return;

		/*
		 * Another transaction created the row between our lock attempt and
		 * our insert, and committed; lock its row instead.  Only a stream of
		 * concurrent rl_reset calls can make this repeat.
		 */
		if (attempt >= 100)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not lock rate limit state after %d attempts",
							attempt + 1)));
	}
}

/* The rl_result row for a decision. */
static Datum
result_datum(RlCallCache *cache, const RlDecision *decision)
{
	Datum		values[4];
	bool		nulls[4] = {false, !decision->has_retry, false, false};

	values[0] = BoolGetDatum(decision->ok);
	values[1] = decision->has_retry ?
		IntervalPGetDatum(rl_usecs_to_interval(decision->retry_after)) : 0;
	values[2] = Float8GetDatum(decision->remaining);
	values[3] = IntervalPGetDatum(rl_usecs_to_interval(decision->reset_after));
	return HeapTupleGetDatum(heap_form_tuple(cache->result_desc, values, nulls));
}

/* rl_limit and rl_check: decide a call, consuming or not. */
static Datum
limit_or_check(FunctionCallInfo fcinfo, bool consuming)
{
	RlCallCache *cache = call_cache(fcinfo);
	RlTarget	target;
	RlDecision	decision;
	double		count;
	bool		reserve;
	bool		throws;
	const char *problem;

	call_target(fcinfo, cache, &target);
	require_arg(fcinfo, ARG_COUNT, "count");
	require_arg(fcinfo, ARG_RESERVE, "reserve");
	require_arg(fcinfo, ARG_THROWS, "throws");
	count = PG_GETARG_FLOAT8(ARG_COUNT);
	reserve = PG_GETARG_BOOL(ARG_RESERVE);
	throws = PG_GETARG_BOOL(ARG_THROWS);

	rl_storage_begin(cache->nspid);
	resolve_target(fcinfo, cache, ARG_CONFIG, &target);
	problem = rl_count_problem(&target.policy, count, reserve);
	if (problem)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem),
				 reserve && target.policy.has_max_reserved ?
				 errdetail("The count is %g; the capacity is %g and max_reserved is %g.",
						   count, target.policy.capacity,
						   target.policy.max_reserved) :
				 errdetail("The count is %g; the capacity is %g.",
						   count, target.policy.capacity)));

	if (consuming)
		consume(&target, count, reserve, &decision);
	else
	{
		RlRowKey	row = {target.name, target.key, 0};
		RlState		state;
		bool		found = rl_storage_read(&row, &state);

		decide(&target, found ? &state : NULL, rl_clock_now(), count, reserve,
			   &decision);
	}
	rl_storage_end();

	if (!decision.ok && throws)
		rl_raise_exceeded(target.name, target.key_is_null ? NULL : target.key,
						  count, decision.remaining, decision.retry_after);
	PG_RETURN_DATUM(result_datum(cache, &decision));
}

/* rl_limit(name, key, count, reserve, throws, config): consume tokens. */
Datum
rl_limit(PG_FUNCTION_ARGS)
{
	return limit_or_check(fcinfo, true);
}

/* rl_check(...): rl_limit's answer, consuming and locking nothing. */
Datum
rl_check(PG_FUNCTION_ARGS)
{
	return limit_or_check(fcinfo, false);
}

/* rl_value(name, key, config): the state brought forward to now. */
Datum
rl_value(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = call_cache(fcinfo);
	RlTarget	target;
	RlRowKey	row;
	RlState		state;
	bool		found;
	TimestampTz now;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	call_target(fcinfo, cache, &target);
	rl_storage_begin(cache->nspid);
	resolve_target(fcinfo, cache, ARG_VALUE_CONFIG, &target);
	row.name = target.name;
	row.key = target.key;
	row.shard = 0;
	found = rl_storage_read(&row, &state);
	rl_storage_end();

	now = rl_clock_now();
	state = found ? rl_refill(&target.policy, target.origin, state, now) :
		rl_initial_state(&target.policy, target.origin, now);
	values[0] = Float8GetDatum(state.value);
	values[1] = TimestampTzGetDatum(state.ts);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(cache->result_desc,
													  values, nulls)));
}

/* rl_reset(name, key): forget one key's state, all shards. */
Datum
rl_reset(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = call_cache(fcinfo);
	RlTarget	target;

	call_target(fcinfo, cache, &target);
	rl_storage_begin(cache->nspid);
	rl_storage_delete(target.name, target.key);
	rl_storage_end();
	PG_RETURN_VOID();
}

/* rl_define(name, kind, rate, period, ...): create or replace. */
Datum
rl_define(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = call_cache(fcinfo);
	text	   *name = call_name(fcinfo);
	Datum		values[RL_POLICY_NATTS];
	bool		nulls[RL_POLICY_NATTS];
	RlPolicy	policy;

	for (int i = 0; i < RL_POLICY_NATTS; i++)
	{
		nulls[i] = PG_ARGISNULL(i + 1);
		values[i] = nulls[i] ? (Datum) 0 : PG_GETARG_DATUM(i + 1);
	}
	rl_policy_fill_defaults(values, nulls);
	rl_policy_from_values(values, nulls, &policy);

	rl_storage_begin(cache->nspid);
	rl_storage_put_definition(name, values, nulls);
	rl_storage_end();
	PG_RETURN_VOID();
}

/* rl_undefine(name): drop a definition and its state. */
Datum
rl_undefine(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = call_cache(fcinfo);
	text	   *name = call_name(fcinfo);
	bool		found;

	rl_storage_begin(cache->nspid);
	found = rl_storage_delete_definition(name);
	rl_storage_end();
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist",
						text_to_cstring(name))));
	PG_RETURN_VOID();
}

/*
 * An rl_policy value from a constructor's arguments: args[0..4] are rate,
 * period, capacity, max_reserved, shards; start is args[5] when present.
 */
static Datum
policy_datum(FunctionCallInfo fcinfo, RlKind kind)
{
	RlCallCache *cache = call_cache(fcinfo);
	Datum		values[RL_POLICY_NATTS];
	bool		nulls[RL_POLICY_NATTS];
	RlPolicy	policy;

	values[RL_POLICY_KIND] = CStringGetTextDatum(rl_kind_name(kind));
	nulls[RL_POLICY_KIND] = false;
	for (int col = RL_POLICY_RATE; col <= RL_POLICY_START; col++)
	{
		int			argno = col - RL_POLICY_RATE;

		nulls[col] = argno >= PG_NARGS() || PG_ARGISNULL(argno);
		values[col] = nulls[col] ? (Datum) 0 : PG_GETARG_DATUM(argno);
	}
	rl_policy_fill_defaults(values, nulls);
	rl_policy_from_values(values, nulls, &policy);
	return HeapTupleGetDatum(heap_form_tuple(cache->result_desc, values, nulls));
}

/* rl_token_bucket(rate, period, capacity, max_reserved, shards). */
Datum
rl_token_bucket(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(policy_datum(fcinfo, RL_TOKEN_BUCKET));
}

/* rl_fixed_window(rate, period, capacity, max_reserved, shards, start). */
Datum
rl_fixed_window(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(policy_datum(fcinfo, RL_FIXED_WINDOW));
}
