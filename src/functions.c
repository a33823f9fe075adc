/*-------------------------------------------------------------------------
 *
 * functions.c
 *	  The SQL-callable functions: arguments in, errors and result rows out.
 *
 * Each function checks its arguments before it touches storage, so bad
 * input changes nothing.  The key may be text, bigint, integer, smallint,
 * uuid or inet; one C function serves every overload and stores the key's
 * text form, so 42 and '42' name the same key (an inet's, access.c).  The NULL key (the one limit
 * shared by a name) is stored as '', and so an empty text key is refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "access.h"
#include "algebra.h"
#include "calendar.h"
#include "call_cache.h"
#include "clock.h"
#include "compat.h"
#include "concurrency.h"
#include "definitions.h"
#include "direct.h"
#include "errors.h"
#include "fields.h"
#include "functions.h"
#include "gc.h"
#include "limit.h"
#include "memory.h"
#include "policy.h"
#include "stats.h"
#include "storage.h"
#include "wait.h"

PG_MODULE_MAGIC;

/* Argument positions shared by rl_limit, rl_check, rl_value, rl_reset. */
#define ARG_NAME		0
#define ARG_KEY			1
#define ARG_COUNT		2
#define ARG_RESERVE		3
#define ARG_THROWS		4
#define ARG_CONFIG		5
#define ARG_JITTER		6
#define ARG_LIMIT_WAIT	7		/* rl_limit only, from 1.3 */
#define ARG_LIMIT_PARTIAL 8		/* rl_limit only, from 1.3 */
#define ARG_VALUE_CONFIG 2		/* rl_value(name, key, config) */
#define ARG_RESET_CONFIG 2		/* rl_reset(name, key, config), from 1.3 */

/* rl_refund, rl_penalize (name, key, count, config); rl_block (name, key, duration, config) */
#define ARG_ADJUST_AMOUNT 2
#define ARG_ADJUST_CONFIG 3

/* rl_settle(name, key, estimated, actual, config) */
#define ARG_SETTLE_ESTIMATED 2
#define ARG_SETTLE_ACTUAL 3
#define ARG_SETTLE_CONFIG 4

/* rl_limit_all(names, keys, counts, reserve, throws, jitter) */
#define ARG_ALL_NAMES	0
#define ARG_ALL_KEYS	1
#define ARG_ALL_COUNTS	2
#define ARG_ALL_RESERVE 3
#define ARG_ALL_THROWS	4
#define ARG_ALL_JITTER	5

PG_FUNCTION_INFO_V1(rl_define);
PG_FUNCTION_INFO_V1(rl_undefine);
PG_FUNCTION_INFO_V1(rl_allow);
PG_FUNCTION_INFO_V1(rl_deny);
PG_FUNCTION_INFO_V1(rl_unlist);
PG_FUNCTION_INFO_V1(rl_token_bucket);
PG_FUNCTION_INFO_V1(rl_fixed_window);
PG_FUNCTION_INFO_V1(rl_sliding_window);
PG_FUNCTION_INFO_V1(rl_limit);
PG_FUNCTION_INFO_V1(rl_check);
PG_FUNCTION_INFO_V1(rl_value);
PG_FUNCTION_INFO_V1(rl_reset);
PG_FUNCTION_INFO_V1(rl_limit_all);
PG_FUNCTION_INFO_V1(rl_gc);
PG_FUNCTION_INFO_V1(rl_gc_memory);
PG_FUNCTION_INFO_V1(rl_memory_forget);
PG_FUNCTION_INFO_V1(rl_status_row);
PG_FUNCTION_INFO_V1(rl_inline_policy);
PG_FUNCTION_INFO_V1(rl_refund);
PG_FUNCTION_INFO_V1(rl_penalize);
PG_FUNCTION_INFO_V1(rl_block);
PG_FUNCTION_INFO_V1(rl_settle);
PG_FUNCTION_INFO_V1(rl_define_concurrency);
PG_FUNCTION_INFO_V1(rl_acquire);
PG_FUNCTION_INFO_V1(rl_lease);
PG_FUNCTION_INFO_V1(rl_release);
PG_FUNCTION_INFO_V1(rl_key_hash);
PG_FUNCTION_INFO_V1(rl_now);

void		_PG_init(void);

/* Module load: define the settings. */
void
_PG_init(void)
{
	rl_clock_init();
	rl_direct_init();
	rl_stats_init();
	rl_memory_init();
	rl_concurrency_init();
	/* after every ratelimit.* setting is defined */
	MarkGUCPrefixReserved("ratelimit");
}

/* Raise the error for a NULL where the argument is required. */
void
rl_require_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
}

/* The key argument as text, whatever its declared type; NULL for NULL. */
static text *
key_as_text(FunctionCallInfo fcinfo, RlCallCache *cache)
{
	char		buf[MAXINT8LEN + 1];

	if (PG_ARGISNULL(ARG_KEY))
		return NULL;
	switch (cache->key_type)
	{
		case TEXTOID:
			return PG_GETARG_TEXT_PP(ARG_KEY);
		case INT8OID:
			pg_lltoa(PG_GETARG_INT64(ARG_KEY), buf);
			return cstring_to_text(buf);
		case INT4OID:
			pg_ltoa(PG_GETARG_INT32(ARG_KEY), buf);
			return cstring_to_text(buf);
		case INT2OID:
			pg_ltoa(PG_GETARG_INT16(ARG_KEY), buf);
			return cstring_to_text(buf);
		case UUIDOID:
			return cstring_to_text(DatumGetCString(DirectFunctionCall1(uuid_out,
																	   PG_GETARG_DATUM(ARG_KEY))));
		case INETOID:
			return rl_inet_key(PG_GETARG_DATUM(ARG_KEY));
		default:
			elog(ERROR, "unexpected rate limit key type %u", cache->key_type);
	}
	return NULL;				/* keep the compiler quiet */
}

/* A boolean argument that must not be NULL. */
static bool
required_bool(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	rl_require_arg(fcinfo, argno, argname);
	return PG_GETARG_BOOL(argno);
}

/* The name and key arguments, checked. */
static void
call_target(FunctionCallInfo fcinfo, RlCallCache *cache, RlTarget *target)
{
	rl_require_arg(fcinfo, ARG_NAME, "name");
	rl_target_init(target, PG_GETARG_TEXT_PP(ARG_NAME),
				   key_as_text(fcinfo, cache));
}

/* The name argument alone, checked (rl_define, rl_undefine). */
static text *
call_name(FunctionCallInfo fcinfo)
{
	RlTarget	target;

	rl_require_arg(fcinfo, ARG_NAME, "name");
	rl_target_init(&target, PG_GETARG_TEXT_PP(ARG_NAME), NULL);
	return target.name;
}

/* The inline config argument, or NULL. */
static HeapTupleHeader
call_config(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? NULL : PG_GETARG_HEAPTUPLEHEADER(argno);
}

/* Spread a denied call's retry over [0, period) when asked to. */
static void
add_jitter(const RlTarget *target, bool jitter, RlAnswer *answer)
{
	if (jitter && !answer->ok)
		answer->retry_after += rl_jitter(target->policy.period,
										 pg_prng_double(&pg_global_prng_state));
}

/* Whether x is a whole number. */
static inline bool
is_whole(double x)
{
	return x == floor(x);
}

/*
 * The tokens an answer reports: whole ones, rounded down, when the limit
 * counts in whole tokens (its rate, capacity and max_reserved, and the
 * call's count, whole): a refilling bucket's 18.0004 is 18 tokens a call
 * can take.  Exact otherwise.
 */
static double
reported_remaining(const RlPolicy *policy, double count, double remaining)
{
	if (is_whole(policy->rate) && is_whole(policy->capacity) &&
		(!policy->has_max_reserved || is_whole(policy->max_reserved)) &&
		(!policy->has_max_debt || is_whole(policy->max_debt)) &&
		is_whole(count))
		return floor(remaining);
	return remaining;
}

/*
 * Whether the caller may act now: granted, and not a reservation that
 * must wait for retry_after first (a shadow-mode grant may act).
 */
static bool
answer_allowed(const RlAnswer *answer)
{
	return answer->ok &&
		(answer->shadowed || !answer->has_retry || answer->retry_after <= 0);
}

/*
 * The rl_result row for an answer: ok, retry_after, remaining,
 * reset_after, and (1.3) capacity, allowed, retry_after_ms,
 * reset_after_ms and granted.  A schema still at 1.2 has the first four
 * only.
 */
static Datum
result_datum(RlCallCache *cache, const RlTarget *target, double count,
			 const RlAnswer *answer)
{
	Datum		values[9];
	bool		nulls[9] = {false, !answer->has_retry, false, false,
	false, false, !answer->has_retry, false, false};
	/* heap_form_tuple copies them into the row: no allocation of their own */
	Interval	retry_after = {.time = answer->retry_after};
	Interval	reset_after = {.time = answer->reset_after};

	values[0] = BoolGetDatum(answer->ok);
	values[1] = answer->has_retry ? IntervalPGetDatum(&retry_after) : 0;
	values[2] = Float8GetDatum(reported_remaining(&target->policy, count,
												  answer->remaining));
	values[3] = IntervalPGetDatum(&reset_after);
	values[4] = Float8GetDatum(target->policy.capacity);
	values[5] = BoolGetDatum(answer_allowed(answer));
	values[6] = Int64GetDatum(rl_ceil_ms(answer->retry_after));
	values[7] = Int64GetDatum(rl_ceil_ms(answer->reset_after));
	values[8] = Float8GetDatum(answer->ok ? answer->granted : 0);
	Assert(cache->result_desc->natts <= lengthof(values));
	return HeapTupleGetDatum(heap_form_tuple(cache->result_desc, values, nulls));
}

/* Raise RL001 for a refused call. */
static void
raise_refused(const RlTarget *target, double count, const RlAnswer *answer)
{
	if (target->denied)
		rl_raise_denied(target->label, target->address, answer->has_retry,
						answer->retry_after);
	rl_raise_exceeded(target->label, target->key_is_null ? NULL : target->key,
					  count, answer->remaining, answer->retry_after);
}

/*
 * A call that writes a table limit's row, in a read-only transaction (so
 * on a hot standby too): SQLSTATE 25006, as an UPDATE would raise, on
 * either path, whatever the call's outcome.  A memory limit writes no
 * table, and works there.
 */
static void
require_writable(const RlTarget *target, const char *cmdname)
{
	if (target->store->writes_table)
		PreventCommandIfReadOnly(cmdname);
}

/*
 * rl_limit's wait, in microseconds: NULL (and rl_limit of 1.0 to 1.2,
 * which has no such argument) is 0, no wait; at most 1000 years.
 */
static int64
limit_wait(FunctionCallInfo fcinfo)
{
	double		wait;

	if (PG_NARGS() <= ARG_LIMIT_WAIT || PG_ARGISNULL(ARG_LIMIT_WAIT))
		return 0;
	wait = rl_interval_usecs(PG_GETARG_INTERVAL_P(ARG_LIMIT_WAIT));
	if (!(wait >= 0 && wait <= (double) RL_MAX_WAIT))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait must be between 0 and 1000 years")));
	return (int64) wait;
}

/*
 * rl_limit's partial: false when not given (rl_check, rl_limit before
 * 1.3).  A partial call takes only what the key holds now: no reserve.
 */
static bool
limit_partial(FunctionCallInfo fcinfo, bool reserve)
{
	if (PG_NARGS() <= ARG_LIMIT_PARTIAL ||
		!required_bool(fcinfo, ARG_LIMIT_PARTIAL, "partial"))
		return false;
	if (reserve)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partial and reserve cannot be combined"),
				 errdetail("A partial call takes only what the key holds now; a reservation takes what it does not hold yet.")));
	return true;
}

/* rl_limit and rl_check: decide a call, consuming or not. */
static Datum
limit_or_check(FunctionCallInfo fcinfo, bool consuming)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlTarget	target;
	RlAnswer	answer;
	double		count;
	bool		reserve;
	bool		throws;
	bool		jitter;
	int64		wait;

	call_target(fcinfo, cache, &target);
	rl_require_arg(fcinfo, ARG_COUNT, "count");
	count = PG_GETARG_FLOAT8(ARG_COUNT);
	reserve = required_bool(fcinfo, ARG_RESERVE, "reserve");
	throws = required_bool(fcinfo, ARG_THROWS, "throws");
	jitter = required_bool(fcinfo, ARG_JITTER, "jitter");

	wait = consuming ? limit_wait(fcinfo) : 0;
	target.partial = consuming && limit_partial(fcinfo, reserve);

	rl_storage_begin(cache->nspid);
	rl_target_resolve(&target, call_config(fcinfo, ARG_CONFIG));
	if (consuming)
		require_writable(&target, "rl_limit()");
	if (consuming && wait > 0)
		rl_consume_waiting(&target, count, reserve, wait, !throws, &answer);
	else if (consuming)
		rl_consume(&target, count, reserve, !throws, &answer);
	else
		rl_check_call(&target, count, reserve, !throws, &answer);
	rl_storage_end();

	add_jitter(&target, jitter, &answer);
	if (!answer.ok && throws)
		raise_refused(&target, count, &answer);
	PG_RETURN_DATUM(result_datum(cache, &target, count, &answer));
}

/* rl_limit(name, key, count, reserve, throws, config, jitter): consume. */
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

/* The rl_state row for a state. */
static Datum
state_datum(RlCallCache *cache, RlState state)
{
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = Float8GetDatum(state.value);
	values[1] = TimestampTzGetDatum(state.ts);
	return HeapTupleGetDatum(heap_form_tuple(cache->result_desc, values, nulls));
}

/* rl_value(name, key, config): the state brought forward to now. */
Datum
rl_value(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlTarget	target;
	RlState		state;

	call_target(fcinfo, cache, &target);
	rl_storage_begin(cache->nspid);
	rl_target_resolve(&target, call_config(fcinfo, ARG_VALUE_CONFIG));
	state = rl_current(&target);
	rl_storage_end();
	PG_RETURN_DATUM(state_datum(cache, state));
}

/*
 * rl_refund and rl_penalize: the count argument, checked like rl_limit's
 * (a finite number greater than zero and at most 1e15), but never against
 * the capacity: a refund is capped there, a penalty may exceed it.
 */
static double
adjust_count(FunctionCallInfo fcinfo)
{
	double		count;

	rl_require_arg(fcinfo, ARG_ADJUST_AMOUNT, "count");
	count = PG_GETARG_FLOAT8(ARG_ADJUST_AMOUNT);
	if (!(count > 0 && count <= RL_MAX_AMOUNT))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("count must be a finite number greater than zero and at most 1e15"),
				 errdetail("The count is %g.", count)));
	return count;
}

/* rl_block's duration, in microseconds: more than zero, at most 1000 years. */
static int64
adjust_duration(FunctionCallInfo fcinfo)
{
	double		usecs;

	rl_require_arg(fcinfo, ARG_ADJUST_AMOUNT, "duration");
	usecs = rl_interval_usecs(PG_GETARG_INTERVAL_P(ARG_ADJUST_AMOUNT));
	if (!(usecs >= 1 && usecs <= (double) RL_MAX_WAIT))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("duration must be greater than zero and at most 1000 years"),
				 errhint("rl_reset() lifts a block.")));
	return (int64) usecs;
}

/* rl_refund, rl_penalize and rl_block: check, then rl_adjust. */
static Datum
adjust(FunctionCallInfo fcinfo, RlAdjustment kind, const char *cmdname)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlTarget	target;
	double		count = 0;
	int64		duration = 0;
	RlState		state;

	call_target(fcinfo, cache, &target);
	if (kind == RL_ADJUST_BLOCK)
		duration = adjust_duration(fcinfo);
	else
		count = adjust_count(fcinfo);

	rl_storage_begin(cache->nspid);
	rl_target_resolve(&target, call_config(fcinfo, ARG_ADJUST_CONFIG));
	require_writable(&target, cmdname);
	state = rl_adjust(&target, kind, count, duration);
	rl_storage_end();
	PG_RETURN_DATUM(state_datum(cache, state));
}

/* rl_refund(name, key, count, config): give count tokens back. */
Datum
rl_refund(PG_FUNCTION_ARGS)
{
	return adjust(fcinfo, RL_ADJUST_REFUND, "rl_refund()");
}

/* rl_penalize(name, key, count, config): take count tokens, no check. */
Datum
rl_penalize(PG_FUNCTION_ARGS)
{
	return adjust(fcinfo, RL_ADJUST_PENALIZE, "rl_penalize()");
}

/* rl_block(name, key, duration, config): refuse every call for duration. */
Datum
rl_block(PG_FUNCTION_ARGS)
{
	return adjust(fcinfo, RL_ADJUST_BLOCK, "rl_block()");
}

/* One of rl_settle's costs: a finite number from zero to 1e15. */
static double
settle_cost(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	double		cost;

	rl_require_arg(fcinfo, argno, argname);
	cost = PG_GETARG_FLOAT8(argno);
	if (!(cost >= 0 && cost <= RL_MAX_AMOUNT))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a finite number between zero and 1e15",
						argname),
				 errdetail("The %s cost is %g.", argname, cost)));
	return cost;
}

/*
 * rl_settle(name, key, estimated, actual, config): charge the actual cost
 * of a call admitted on an estimate; the key's state and what max_debt
 * left unsettled.
 */
Datum
rl_settle(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlTarget	target;
	double		estimated;
	double		actual;
	double		unsettled;
	RlState		state;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	call_target(fcinfo, cache, &target);
	estimated = settle_cost(fcinfo, ARG_SETTLE_ESTIMATED, "estimated");
	actual = settle_cost(fcinfo, ARG_SETTLE_ACTUAL, "actual");

	rl_storage_begin(cache->nspid);
	rl_target_resolve(&target, call_config(fcinfo, ARG_SETTLE_CONFIG));
	require_writable(&target, "rl_settle()");
	state = rl_settle_key(&target, estimated, actual, &unsettled);
	rl_storage_end();

	values[0] = Float8GetDatum(state.value);
	values[1] = TimestampTzGetDatum(state.ts);
	values[2] = Float8GetDatum(unsettled);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(cache->result_desc,
													  values, nulls)));
}

/*
 * rl_reset(name, key, config): forget one key's state, all shards.  With a
 * config, the state rl_limit with that config uses, and only it; without
 * (and from rl_reset of 1.0 to 1.2, which has no such argument), a defined
 * limit's key, or the table rows of the key under every inline policy of
 * the name: an inline memory key is found by its config alone.
 */
Datum
rl_reset(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlTarget	target;
	HeapTupleHeader config = NULL;

	if (PG_NARGS() > ARG_RESET_CONFIG)
		config = call_config(fcinfo, ARG_RESET_CONFIG);
	call_target(fcinfo, cache, &target);
	rl_storage_begin(cache->nspid);
	rl_reset_key(&target, config);

	/*
	 * A fresh key owes nothing for the refills it had: its next move pays
	 * for none, and gets back no payment of its last move (plans.c).  A
	 * read-only transaction (a memory key's reset) cannot write rl_moves:
	 * there the record stays (docs/policies.md, "Known limits in 1.3").
	 */
	if (config == NULL && target.key != NULL && !XactReadOnly)
		rl_storage_forget_move(target.name, target.key);
	rl_storage_end();
	PG_RETURN_VOID();
}

/*
 * The elements of a one-dimensional array argument of rl_limit_all; NULLs
 * allowed.  The size is checked before the array is taken apart, so an
 * oversized call costs nothing.
 */
static int
array_elements(FunctionCallInfo fcinfo, int argno, const char *argname,
			   Oid elemtype, Datum **values, bool **nulls)
{
	ArrayType  *array;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			n;

	rl_require_arg(fcinfo, argno, argname);
	array = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", argname)));
	n = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	if (n > RL_MAX_LIMITS_PER_CALL)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many limits in one rl_limit_all call"),
				 errdetail("The %s array has %d elements; the limit is %d.",
						   argname, n, RL_MAX_LIMITS_PER_CALL)));
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign,
					  values, nulls, &n);
	return n;
}

/* The rl_all_result row: ok, the longest retry_after, who refused. */
static Datum
all_result_datum(RlCallCache *cache, const RlTarget *targets,
				 const double *counts, const RlAnswer *answers, int n,
				 int refused)
{
	Datum		values[10] = {0};
	bool		nulls[10] = {false, true, true, true, false, false, false,
	false, true, false};
	int64		longest = -1;
	bool		forever = false;	/* a limit refuses for ever */
	bool		allowed = refused < 0;
	int			tightest = refused;

	Assert(n > 0);

	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (answers[i].has_retry && answers[i].retry_after > longest)
			longest = answers[i].retry_after;
		forever = forever || (!answers[i].ok && !answers[i].has_retry);
		allowed = allowed && answer_allowed(&answers[i]);
		if (refused < 0 &&
			(tightest < 0 || answers[i].remaining < answers[tightest].remaining))
			tightest = i;
	}
	values[0] = BoolGetDatum(refused < 0);
	if (longest >= 0 && !forever)
	{
		values[1] = IntervalPGetDatum(rl_usecs_to_interval(longest));
		nulls[1] = false;
		values[8] = Int64GetDatum(rl_ceil_ms(longest));
		nulls[8] = false;
	}

	/*
	 * remaining, reset_after and capacity of the limit that decides the
	 * answer: the refusing one, or, all granted, the one with the fewest
	 * tokens left
	 */
	values[4] = Float8GetDatum(reported_remaining(&targets[tightest].policy,
												  counts[tightest],
												  answers[tightest].remaining));
	values[5] = IntervalPGetDatum(rl_usecs_to_interval(answers[tightest].reset_after));
	values[6] = Float8GetDatum(targets[tightest].policy.capacity);
	values[7] = BoolGetDatum(allowed);
	values[9] = Int64GetDatum(rl_ceil_ms(answers[tightest].reset_after));
	if (refused >= 0)
	{
		values[2] = PointerGetDatum(targets[refused].label);
		nulls[2] = false;
		values[3] = PointerGetDatum(targets[refused].key);
		nulls[3] = targets[refused].key_is_null;
	}
	return HeapTupleGetDatum(heap_form_tuple(cache->result_desc, values, nulls));
}

/*
 * rl_limit_all(names, keys, counts, reserve, throws, jitter): consume from
 * every limit or from none.
 */
Datum
rl_limit_all(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	Datum	   *names;
	Datum	   *keys;
	Datum	   *count_values;
	bool	   *name_nulls;
	bool	   *key_nulls;
	bool	   *count_nulls;
	int			n;
	RlTarget   *targets;
	double	   *counts;
	RlAnswer   *answers;
	int			refused;
	bool		reserve;
	bool		throws;
	bool		jitter;

	n = array_elements(fcinfo, ARG_ALL_NAMES, "names", TEXTOID, &names, &name_nulls);
	if (array_elements(fcinfo, ARG_ALL_KEYS, "keys", TEXTOID, &keys, &key_nulls) != n ||
		array_elements(fcinfo, ARG_ALL_COUNTS, "counts", FLOAT8OID,
					   &count_values, &count_nulls) != n)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("names, keys and counts must have the same length")));
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rl_limit_all needs at least one limit")));
	reserve = required_bool(fcinfo, ARG_ALL_RESERVE, "reserve");
	throws = required_bool(fcinfo, ARG_ALL_THROWS, "throws");
	jitter = required_bool(fcinfo, ARG_ALL_JITTER, "jitter");

	targets = palloc(sizeof(RlTarget) * n);
	counts = palloc(sizeof(double) * n);
	answers = palloc0(sizeof(RlAnswer) * n);
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (name_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("names must not contain null")));
		if (count_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("counts must not contain null")));
		rl_target_init(&targets[i], DatumGetTextPP(names[i]),
					   key_nulls[i] ? NULL : DatumGetTextPP(keys[i]));
		counts[i] = DatumGetFloat8(count_values[i]);
	}

	rl_storage_begin(cache->nspid);
	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		rl_target_resolve(&targets[i], NULL);
	}
	for (int i = 0; i < n; i++)
		require_writable(&targets[i], "rl_limit_all()");
	refused = rl_consume_all(targets, counts, n, reserve, !throws, answers);
	rl_storage_end();

	if (refused >= 0)
	{
		add_jitter(&targets[refused], jitter, &answers[refused]);
		if (throws)
			raise_refused(&targets[refused], counts[refused], &answers[refused]);
	}
	PG_RETURN_DATUM(all_result_datum(cache, targets, counts, answers, n,
									 refused));
}

/*
 * Store a checked definition; a definition of another form under the same
 * name (a rate and a concurrency limit, or permits and leases) is refused
 * rather than replaced, since the state of one means nothing to the other.
 */
static void
put_definition(text *name, Datum *values, bool *nulls)
{
	rl_policy_fill_defaults(values, nulls);
	if (!rl_storage_put_definition(name, values, nulls))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("rate limit \"%s\" is already defined as another form of limit",
						text_to_cstring(name)),
				 errdetail("A rate limit cannot become a concurrency limit, nor a concurrency limit switch between permits and leases, under the same name."),
				 errhint("Drop it with rl_undefine() first, or use another name.")));
}

/* rl_define(name, kind, rate, period, ...): create or replace. */
Datum
rl_define(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	text	   *name = call_name(fcinfo);
	Datum		values[RL_DEFINITION_NATTS];
	bool		nulls[RL_DEFINITION_NATTS];
	RlPolicy	policy;
	RlPolicy	old;
	bool		moved_store;

	/* rl_define of 1.0 to 1.2 has no storage, time_zone, shadow or block_for */
	for (int i = 0; i < RL_DEFINITION_NATTS; i++)
	{
		nulls[i] = i + 1 >= PG_NARGS() || PG_ARGISNULL(i + 1);
		values[i] = nulls[i] ? (Datum) 0 : PG_GETARG_DATUM(i + 1);
	}
	if (!nulls[RL_POLICY_KIND] &&
		rl_kind_parse(TextDatumGetCString(values[RL_POLICY_KIND]), &policy.kind) &&
		RL_KIND_IS_CONCURRENCY(policy.kind))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rl_define() defines rate limits, not concurrency limits"),
				 errhint("Define a concurrency limit with rl_define_concurrency().")));
	rl_policy_fill_defaults(values, nulls);
	rl_policy_from_values(values, nulls, &policy);
	rl_definition_options_from_values(values, nulls, &policy);
	rl_store_of(&policy)->check_use(false);

	rl_storage_begin_writing(cache->nspid, "rl_define()");
	moved_store = rl_definition_lookup(name, &old) &&
		!RL_KIND_IS_CONCURRENCY(old.kind) && old.store != policy.store;
	put_definition(name, values, nulls);
	/* its keys start afresh in the other store: nothing owed from moves */
	if (moved_store)
		rl_storage_forget_name_moves(name);
	rl_storage_end();
	PG_RETURN_VOID();
}

/* rl_undefine(name): drop a definition and its state. */
Datum
rl_undefine(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	text	   *name = call_name(fcinfo);
	bool		found;

	RlPolicy	policy;

	rl_storage_begin_writing(cache->nspid, "rl_undefine()");
	if (rl_definition_lookup(name, &policy) &&
		RL_KIND_IS_CONCURRENCY(policy.kind))
	{
		rl_concurrency_definition_change(cache->nspid, name, &policy,
										 NULL, NULL);
		if (policy.kind == RL_CONCURRENCY_LEASE)
			rl_storage_lease_delete_name(name, rl_clock_now());
	}
	found = rl_storage_delete_definition(name);
	rl_storage_end();
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist",
						text_to_cstring(name))));
	PG_RETURN_VOID();
}

/* An integer argument that must be given and positive (rl_gc's bounds). */
static int32
positive_int_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	int32		n;

	rl_require_arg(fcinfo, argno, argname);
	n = PG_GETARG_INT32(argno);
	if (n <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be positive", argname),
				 errdetail("%s is %d.", argname, n)));
	return n;
}

/*
 * The defined rate limit of a name that per-key settings attach to
 * (overrides and plans, list entries): an error for an undefined name or a
 * concurrency limit.  hint and detail say what the settings are.
 */
RlPolicy
rl_defined_rate_limit(text *name, const char *hint, const char *detail)
{
	RlPolicy	policy;

	if (!rl_definition_lookup(name, &policy))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist",
						text_to_cstring(name)),
				 errhint("%s", hint)));
	if (RL_KIND_IS_CONCURRENCY(policy.kind))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("rate limit \"%s\" is a concurrency limit",
						text_to_cstring(name)),
				 errdetail("%s", detail)));
	return policy;
}

/* The defined rate limit of a list entry's name (rl_allow, rl_deny, rl_unlist). */
static void
listable(text *name)
{
	(void) rl_defined_rate_limit(name,
							  "Define it with rl_define() first: allow and deny lists belong to a defined limit.",
							  "Only a rate limit has allow and deny lists.");
}

/*
 * rl_allow and rl_deny (name, net, expires, note): create or replace the
 * entry of a network in a defined rate limit's list.  expires NULL: for
 * ever.
 */
static Datum
list_network(FunctionCallInfo fcinfo, const char *action, const char *cmdname)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	text	   *name = call_name(fcinfo);
	Datum		values[5];
	bool		nulls[5] = {false};

	rl_require_arg(fcinfo, 1, "net");
	if (!PG_ARGISNULL(2) && TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(2)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("expires must be a finite timestamp"),
				 errhint("Pass NULL for an entry that never expires.")));
	rl_storage_begin_writing(cache->nspid, cmdname);
	listable(name);
	values[0] = PointerGetDatum(name);
	values[1] = rl_access_net(PG_GETARG_DATUM(1));
	values[2] = CStringGetTextDatum(action);
	for (int i = 2; i <= 3; i++)
	{
		nulls[i + 1] = PG_ARGISNULL(i);
		values[i + 1] = nulls[i + 1] ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	rl_storage_put_access(values, nulls);
	rl_storage_end();
	PG_RETURN_VOID();
}

/* rl_allow(name, net, expires, note): its addresses granted, not consuming. */
Datum
rl_allow(PG_FUNCTION_ARGS)
{
	return list_network(fcinfo, "allow", "rl_allow()");
}

/* rl_deny(name, net, expires, note): its addresses refused at once. */
Datum
rl_deny(PG_FUNCTION_ARGS)
{
	return list_network(fcinfo, "deny", "rl_deny()");
}

/* rl_unlist(name, net): drop a network's entries; whether there were any. */
Datum
rl_unlist(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	text	   *name = call_name(fcinfo);
	bool		found;

	rl_storage_begin_writing(cache->nspid, "rl_unlist()");
	listable(name);
	found = rl_storage_delete_access(name, rl_access_net(PG_GETARG_DATUM(1)));
	rl_storage_end();
	PG_RETURN_BOOL(found);
}

/*
 * rl_gc(max_rows): delete up to max_rows idle state rows, then drop up to
 * max_rows idle entries of the memory store.
 */
Datum
rl_gc(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	int32		max_rows = positive_int_arg(fcinfo, 0, "max_rows");
	uint64		removed;

	rl_storage_begin_writing(cache->nspid, "rl_gc()");
	removed = rl_gc_run((uint64) max_rows);
	if (removed < (uint64) max_rows)
		removed += rl_storage_lease_gc(rl_clock_now(),
									   (uint64) max_rows - removed);
	if (removed < (uint64) max_rows)
		removed += rl_storage_move_gc(rl_clock_now(),
									  (uint64) max_rows - removed);
	/* the memory pass writes no table: a budget of its own */
	removed += rl_gc_run_memory(cache->nspid, (uint64) max_rows);
	rl_storage_end();
	PG_RETURN_INT64((int64) removed);
}

/*
 * rl_gc_memory(max_keys): rl_gc's memory pass alone, which writes no table:
 * in a read-only transaction and on a hot standby too.
 */
Datum
rl_gc_memory(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	int32		max_keys = positive_int_arg(fcinfo, 0, "max_keys");
	uint64		removed;

	rl_storage_begin(cache->nspid);
	removed = rl_gc_run_memory(cache->nspid, (uint64) max_keys);
	rl_storage_end();
	PG_RETURN_INT64((int64) removed);
}

/*
 * rl_memory_forget(inline_only): drop this install's memory entries no
 * transaction holds, idle or not (only inline configs' when inline_only),
 * at once; nothing where the server has no memory store.
 */
Datum
rl_memory_forget(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	uint64		removed = 0;

	if (!rl_memory_available())
		PG_RETURN_INT64(0);
	rl_storage_begin(cache->nspid);
	removed = rl_memory_drop_entries(rl_storage_definitions_relid(),
									 PG_GETARG_BOOL(0));
	/* the memory limits' keys start afresh: nothing owed from moves */
	if (!PG_GETARG_BOOL(0) && !XactReadOnly)
		rl_storage_forget_memory_moves();
	rl_storage_end();
	PG_RETURN_INT64((int64) removed);
}

/*
 * The escalation of a defined limit's automatic blocks, which the view's
 * policy (columns of rl_policy) does not carry: a row whose offence score
 * lives is not idle (rl_gc keeps it).  Nothing for an inline policy's row.
 */
static void
definition_escalation(RlCallCache *cache, text *name, RlPolicy *policy)
{
	RlPolicy	defined;
	int			len = VARSIZE_ANY_EXHDR(name);

	if (len > RL_MAX_NAME_BYTES || memchr(VARDATA_ANY(name), RL_INLINE_SEPARATOR, len))
		return;
	rl_storage_begin(cache->nspid);
	if (rl_definition_lookup(name, &defined) && defined.kind == policy->kind)
	{
		policy->block_for = defined.block_for;
		policy->block_factor = defined.block_factor;
		policy->block_max = defined.block_max;
		policy->block_horizon = defined.block_horizon;
	}
	rl_storage_end();
}

/*
 * rl_status_row(policy, name, key, value, ts): one stored row brought
 * forward to now, for the view rl_status.  STRICT: a row with no
 * definition has no known policy.
 */
Datum
rl_status_row(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlPolicy	policy;
	RlTarget	target;
	RlState		stored;
	RlState		current;
	int64		reset_after;
	bool		idle;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	rl_policy_from_composite(PG_GETARG_HEAPTUPLEHEADER(0), &policy);
	/* rows left from a rate under a name now a concurrency limit */
	if (RL_KIND_IS_CONCURRENCY(policy.kind))
	{
		for (int i = 0; i < 5; i++)
			nulls[i] = true;
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(cache->result_desc,
														  values, nulls)));
	}
	definition_escalation(cache, PG_GETARG_TEXT_PP(1), &policy);
	rl_target_for_row(&target, PG_GETARG_TEXT_PP(1), PG_GETARG_TEXT_PP(2),
					  &policy);
	stored.value = PG_GETARG_FLOAT8(3);
	stored.ts = PG_GETARG_TIMESTAMPTZ(4);
	/* the sliding window's prev, from 1.3 on; NaN (the view's NULL) for none */
	stored.prev = PG_NARGS() > 5 ? PG_GETARG_FLOAT8(5) : NAN;
	nulls[3] = !rl_row_now(&target, stored, &current, &reset_after, &idle);

	values[0] = Float8GetDatum(current.value);
	values[1] = TimestampTzGetDatum(current.ts);
	values[2] = Float8GetDatum(current.value > 0 ? current.value : 0);
	values[3] = nulls[3] ? (Datum) 0 :
		PointerGetDatum(rl_usecs_to_interval(reset_after));
	values[4] = BoolGetDatum(idle);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(cache->result_desc,
													  values, nulls)));
}

/*
 * rl_inline_policy(stored_name): the policy a limit used with an inline
 * config stores its state under (see rl_target_resolve), for the view
 * rl_status; NULL for any other name.
 */
Datum
rl_inline_policy(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlPolicy	p;
	Datum		values[RL_POLICY_NATTS];
	bool		nulls[RL_POLICY_NATTS] = {0};

	if (!rl_inline_row(PG_GETARG_TEXT_PP(0), &p))
		PG_RETURN_NULL();
	values[RL_POLICY_KIND] = CStringGetTextDatum(rl_kind_name(p.kind));
	values[RL_POLICY_RATE] = Float8GetDatum(p.rate);
	values[RL_POLICY_PERIOD] = IntervalPGetDatum(rl_usecs_to_interval(p.period));
	values[RL_POLICY_CAPACITY] = Float8GetDatum(p.capacity);
	values[RL_POLICY_MAX_RESERVED] = Float8GetDatum(p.max_reserved);
	nulls[RL_POLICY_MAX_RESERVED] = !p.has_max_reserved;
	values[RL_POLICY_SHARDS] = Int32GetDatum(p.shards);
	values[RL_POLICY_START] = TimestampTzGetDatum(p.start);
	nulls[RL_POLICY_START] = !p.has_start;
	values[RL_POLICY_STORAGE] = CStringGetTextDatum("table");
	nulls[RL_POLICY_TIME_ZONE] = p.calendar.unit == RL_CALENDAR_NONE;
	if (!nulls[RL_POLICY_TIME_ZONE])
	{
		values[RL_POLICY_PERIOD] =
			IntervalPGetDatum(rl_calendar_interval(p.calendar.unit));
		values[RL_POLICY_TIME_ZONE] =
			CStringGetTextDatum(rl_calendar_zone_name(&p.calendar));
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(cache->result_desc,
													  values, nulls)));
}

/*
 * An rl_policy value from a constructor's arguments: args[0..4] are rate,
 * period, capacity, max_reserved, shards; then start (fixed window only),
 * storage, and time_zone (fixed window only).  A sliding window takes
 * rate, period, start and storage (its capacity is its rate; it has no
 * reservations, shards or time zone).
 */
static Datum
policy_datum(FunctionCallInfo fcinfo, RlKind kind)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	Datum		values[RL_POLICY_NATTS];
	bool		nulls[RL_POLICY_NATTS];
	RlPolicy	policy;
	int			argno = 0;

	values[RL_POLICY_KIND] = CStringGetTextDatum(rl_kind_name(kind));
	nulls[RL_POLICY_KIND] = false;
	for (int col = RL_POLICY_RATE; col < RL_POLICY_NATTS; col++)
	{
		if (((col == RL_POLICY_START || col == RL_POLICY_TIME_ZONE) &&
			 kind == RL_TOKEN_BUCKET) ||
			(kind == RL_SLIDING_WINDOW &&
			 (col == RL_POLICY_CAPACITY || col == RL_POLICY_MAX_RESERVED ||
			  col == RL_POLICY_SHARDS || col == RL_POLICY_TIME_ZONE)))
		{
			/* one shard; every other column left out is NULL */
			nulls[col] = col != RL_POLICY_SHARDS;
			values[col] = nulls[col] ? (Datum) 0 : Int32GetDatum(1);
			continue;
		}
		nulls[col] = argno >= PG_NARGS() || PG_ARGISNULL(argno);
		values[col] = nulls[col] ? (Datum) 0 : PG_GETARG_DATUM(argno);
		argno++;
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

/*
 * rl_fixed_window(rate, period, capacity, max_reserved, shards, start,
 * storage, time_zone).
 */
Datum
rl_fixed_window(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(policy_datum(fcinfo, RL_FIXED_WINDOW));
}

/* rl_sliding_window(rate, period, start, storage). */
Datum
rl_sliding_window(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(policy_datum(fcinfo, RL_SLIDING_WINDOW));
}

/* Argument positions of the concurrency functions. */
#define ARG_PERMITS		2		/* rl_acquire, rl_lease */
#define ARG_WAIT		3		/* rl_acquire */
#define ARG_ACQ_THROWS	4		/* rl_acquire */
#define ARG_TTL			3		/* rl_lease */

/* A non-negative interval argument in microseconds, bounded by 100 years. */
static int64
interval_arg(FunctionCallInfo fcinfo, int argno, const char *argname,
			 bool zero_ok)
{
	double		usecs;

	rl_require_arg(fcinfo, argno, argname);
	usecs = rl_interval_usecs(PG_GETARG_INTERVAL_P(argno));
	if (usecs < 0 || (usecs == 0 && !zero_ok) || usecs > (double) RL_MAX_PERIOD)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %s zero and at most 100 years", argname,
						zero_ok ? "at least" : "greater than"),
				 errdetail("%s is %s.", argname,
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   PG_GETARG_DATUM(argno))))));
	return (int64) usecs;
}

/*
 * The name and key of rl_acquire and rl_lease, resolved to a concurrency
 * limit of the given kind, with the permits checked.  Needs
 * rl_storage_begin.
 */
static int32
concurrency_target(FunctionCallInfo fcinfo, RlCallCache *cache, RlKind kind,
				   RlTarget *target)
{
	int32		permits;

	call_target(fcinfo, cache, target);
	rl_require_arg(fcinfo, ARG_PERMITS, "permits");
	permits = PG_GETARG_INT32(ARG_PERMITS);
	target->defined = rl_definition_lookup(target->name, &target->policy);
	rl_target_require_concurrency(target, kind);
	rl_check_permits(target, permits);
	return permits;
}

/*
 * rl_define_concurrency(name, permits, leases): create or replace a
 * concurrency limit of permits holders per key.
 */
Datum
rl_define_concurrency(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	text	   *name = call_name(fcinfo);
	Datum		values[RL_DEFINITION_NATTS] = {0};
	bool		nulls[RL_DEFINITION_NATTS];
	RlPolicy	policy;
	RlPolicy	previous;
	bool		defined;
	bool		leases;

	rl_require_arg(fcinfo, 1, "permits");
	leases = required_bool(fcinfo, 2, "leases");
	for (int i = 0; i < RL_DEFINITION_NATTS; i++)
		nulls[i] = true;
	values[RL_POLICY_KIND] = CStringGetTextDatum(rl_kind_name(leases ?
															  RL_CONCURRENCY_LEASE :
															  RL_CONCURRENCY));
	nulls[RL_POLICY_KIND] = false;
	values[RL_POLICY_CAPACITY] = Float8GetDatum((double) PG_GETARG_INT32(1));
	nulls[RL_POLICY_CAPACITY] = false;
	values[RL_POLICY_SHARDS] = Int32GetDatum(1);
	nulls[RL_POLICY_SHARDS] = false;
	rl_policy_from_values(values, nulls, &policy);

	rl_storage_begin_writing(cache->nspid, "rl_define_concurrency()");

	/*
	 * A lowering waits for the holders from before here, before the row is
	 * written (the trigger on rl_definitions would too, after it).  Another
	 * form under the name is refused by put_definition, without a wait.
	 */
	defined = rl_definition_lookup(name, &previous);
	if (!defined || previous.kind == policy.kind)
		rl_concurrency_definition_change(cache->nspid, name,
										 defined ? &previous : NULL,
										 name, &policy);
	put_definition(name, values, nulls);
	rl_storage_end();
	PG_RETURN_VOID();
}

/*
 * rl_acquire(name, key, permits, wait, throws): take permits until the
 * transaction ends; whether granted.  It writes nothing, so it runs in a
 * read-only transaction; on a standby it is refused, since the standby's
 * permits would not count against the primary's.
 */
Datum
rl_acquire(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlTarget	target;
	int32		permits;
	int64		wait;
	bool		throws;
	bool		granted;

	PreventCommandDuringRecovery("rl_acquire()");
	wait = interval_arg(fcinfo, ARG_WAIT, "wait", true);
	throws = required_bool(fcinfo, ARG_ACQ_THROWS, "throws");
	rl_storage_begin(cache->nspid);
	permits = concurrency_target(fcinfo, cache, RL_CONCURRENCY, &target);
	granted = rl_permits_acquire(&target, permits, wait);
	rl_storage_end();

	if (!granted && throws)
		ereport(ERROR,
				(errcode(ERRCODE_RATE_LIMIT_EXCEEDED),
				 errmsg("concurrency limit \"%s\" exceeded",
						text_to_cstring(target.name)),
				 target.key_is_null ?
				 errdetail("The call asked for %d of the shared limit's %g permits; fewer are free.",
						   permits, target.policy.capacity) :
				 errdetail("The call asked for %d of the %g permits of key \"%s\"; fewer are free.",
						   permits, target.policy.capacity,
						   text_to_cstring(target.key))));
	PG_RETURN_BOOL(granted);
}

/*
 * rl_lease(name, key, permits, ttl): a lease of permits for ttl, stored
 * durably; its id, or NULL when the limit is full.
 */
Datum
rl_lease(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlTarget	target;
	int32		permits;
	int64		ttl;
	Datum		id;
	bool		granted;

	ttl = interval_arg(fcinfo, ARG_TTL, "ttl", false);
	rl_lease_check_ttl(ttl, PG_GETARG_DATUM(ARG_TTL));
	rl_storage_begin_writing(cache->nspid, "rl_lease()");
	permits = concurrency_target(fcinfo, cache, RL_CONCURRENCY_LEASE, &target);
	granted = rl_lease_take(&target, permits, ttl, &id);
	rl_storage_end();
	if (!granted)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(id);
}

/*
 * rl_release(lease): free a lease; true when it was held, false when it
 * was already released or had expired.  An id never issued (or removed by
 * rl_gc) is an error.
 */
Datum
rl_release(PG_FUNCTION_ARGS)
{
	RlCallCache *cache = rl_call_cache(fcinfo);
	RlLeaseStatus status;

	rl_require_arg(fcinfo, 0, "lease");
	rl_storage_begin_writing(cache->nspid, "rl_release()");
	status = rl_storage_lease_release(PG_GETARG_DATUM(0), rl_clock_now());
	rl_storage_end();
	if (status == RL_LEASE_UNKNOWN)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("lease %s does not exist",
						DatumGetCString(DirectFunctionCall1(uuid_out,
															PG_GETARG_DATUM(0)))),
				 errhint("rl_gc() removes leases once their ttl has passed.")));
	PG_RETURN_BOOL(status == RL_LEASE_RELEASED);
}

/*
 * rl_key_hash(key): the hash of a name or key that the lock tags of
 * rl_acquire's permits carry (pg_locks.classid for the name, objid for the
 * key); NULL stands for the NULL key.
 */
Datum
rl_key_hash(PG_FUNCTION_ARGS)
{
	text	   *t = PG_ARGISNULL(0) ? cstring_to_text("") : PG_GETARG_TEXT_PP(0);

	PG_RETURN_OID((Oid) rl_lock_hash(t));
}

/* rl_now(): the time ratelimit computes at (ratelimit.now_override). */
Datum
rl_now(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(rl_clock_now());
}
