/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  A key's own policy: overrides (rl_override, rl_unoverride), plans
 *	  (rl_plan, rl_unplan) and keys assigned to plans (rl_assign,
 *	  rl_unassign).
 *
 * An override is a row of rl_overrides with a key's rate, period, capacity
 * and max_reserved; an assignment is a row there that names a plan of
 * rl_plans instead.  A call finds either through the override cache
 * (definitions.c, target.c), which the triggers of both tables keep fresh.
 * Their statements are storage_overrides.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "algebra.h"
#include "definitions.h"
#include "functions.h"
#include "limit.h"
#include "names.h"
#include "policy.h"
#include "storage.h"
#include "target.h"

PG_FUNCTION_INFO_V1(rl_override);
PG_FUNCTION_INFO_V1(rl_unoverride);
PG_FUNCTION_INFO_V1(rl_plan);
PG_FUNCTION_INFO_V1(rl_unplan);
PG_FUNCTION_INFO_V1(rl_assign);
PG_FUNCTION_INFO_V1(rl_unassign);

/* The name argument (the first), checked. */
static text *
name_arg(FunctionCallInfo fcinfo)
{
	RlTarget	target;

	rl_require_arg(fcinfo, 0, "name");
	rl_target_init(&target, PG_GETARG_TEXT_PP(0), NULL);
	return target.name;
}

/*
 * The defined rate limit of an override's or a plan's name: an error for
 * an undefined name or a concurrency limit.
 */
static RlPolicy
overridable(text *name)
{
	return rl_defined_rate_limit(name,
								 "Define it with rl_define() first: overrides and plans change keys of a defined limit.",
								 "Only a rate limit's keys can have overrides or plans.");
}

/*
 * The numbers of an override or a plan (rl_override, rl_plan): arguments
 * 2 to 5, rate, period, capacity and max_reserved, into values[2..5] for
 * rl_storage_put_override.  period NULL follows the definition's (a
 * calendar limit's must); capacity NULL is the rate, as in rl_define.
 * Checked as the whole policy a key then has.
 */
static void
own_numbers(FunctionCallInfo fcinfo, text *name, bool plan, Datum *values,
			bool *nulls)
{
	RlPolicy	policy = overridable(name);
	const char *problem;

	policy.rate = PG_GETARG_FLOAT8(2);
	if (!PG_ARGISNULL(3))
	{
		if (policy.calendar.unit != RL_CALENDAR_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 plan ?
					 errmsg("a plan of a calendar limit cannot have a period") :
					 errmsg("an override of a calendar limit cannot have a period"),
					 errdetail("Its windows are the definition's; pass period => NULL.")));
		policy.period = rl_period_usecs(PG_GETARG_INTERVAL_P(3));
	}
	policy.capacity = PG_ARGISNULL(4) ? policy.rate : PG_GETARG_FLOAT8(4);
	policy.has_max_reserved = !PG_ARGISNULL(5);
	policy.max_reserved = policy.has_max_reserved ? PG_GETARG_FLOAT8(5) : 0;
	problem = rl_policy_problem(&policy);
	if (problem)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem)));

	values[2] = Float8GetDatum(policy.rate);
	nulls[3] = PG_ARGISNULL(3);
	values[3] = nulls[3] ? (Datum) 0 : PG_GETARG_DATUM(3);
	values[4] = Float8GetDatum(policy.capacity);
	nulls[5] = !policy.has_max_reserved;
	values[5] = Float8GetDatum(policy.max_reserved);
}

/*
 * rl_override(name, key, rate, period, capacity, max_reserved): create or
 * replace the override of one key of a defined rate limit (an assignment
 * to a plan too: a key has one or the other).
 */
Datum
rl_override(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	RlTarget	target;
	Datum		values[6];
	bool		nulls[6] = {false};

	rl_require_arg(fcinfo, 1, "key");
	rl_target_init(&target, name, PG_GETARG_TEXT_PP(1));
	rl_require_arg(fcinfo, 2, "rate");

	rl_storage_begin_writing(nspid, "rl_override()");
	values[0] = PointerGetDatum(name);
	values[1] = PointerGetDatum(target.key);
	own_numbers(fcinfo, name, false, values, nulls);
	rl_storage_put_override(values, nulls, false);
	rl_storage_end();
	PG_RETURN_VOID();
}

/* rl_unoverride(name, key): drop an override; whether there was one. */
Datum
rl_unoverride(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	RlTarget	target;
	bool		found;

	rl_target_init(&target, name, PG_GETARG_TEXT_PP(1));
	rl_storage_begin_writing(nspid, "rl_unoverride()");
	(void) overridable(name);
	found = rl_storage_delete_override(name, target.key);
	rl_storage_end();
	PG_RETURN_BOOL(found);
}

/* A plan's name argument: given, not empty, at most RL_MAX_NAME_BYTES. */
static text *
plan_arg(FunctionCallInfo fcinfo, int argno)
{
	text	   *plan;
	int			len;

	rl_require_arg(fcinfo, argno, "plan");
	plan = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(plan);
	rl_check_name_bytes(len, "plan name");
	return plan;
}

/*
 * rl_plan(name, plan, rate, period, capacity, max_reserved): create or
 * replace a plan of a defined rate limit, checked as rl_override checks
 * an override.  Its keys take the new numbers at their next call, each
 * keeping what it has left, as after a change of an override.
 */
Datum
rl_plan(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	Datum		values[6];
	bool		nulls[6] = {false};

	values[0] = PointerGetDatum(name);
	values[1] = PointerGetDatum(plan_arg(fcinfo, 1));
	rl_require_arg(fcinfo, 2, "rate");

	rl_storage_begin_writing(nspid, "rl_plan()");
	own_numbers(fcinfo, name, true, values, nulls);
	rl_storage_put_override(values, nulls, true);
	rl_storage_end();
	PG_RETURN_VOID();
}

/*
 * rl_unplan(name, plan): drop a plan; whether there was one.  Refused
 * while keys are assigned to it: dropping it would move them all to the
 * definition at once, unasked.
 */
Datum
rl_unplan(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	text	   *plan = plan_arg(fcinfo, 1);
	int64		assigned;
	bool		found;

	rl_storage_begin_writing(nspid, "rl_unplan()");
	(void) overridable(name);
	found = rl_storage_delete_plan(name, plan, &assigned);
	if (assigned > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("plan \"%s\" of rate limit \"%s\" has keys assigned to it",
						text_to_cstring(plan), text_to_cstring(name)),
				 errdetail("Keys assigned to it: " INT64_FORMAT ".", assigned),
				 errhint("Move them with rl_assign() or rl_unassign() first.")));
	rl_storage_end();
	PG_RETURN_BOOL(found);
}

/*
 * Move a key to plan (NULL: off its plan, to the definition), keeping what
 * it has left, at most the new capacity: false, nothing changed, when it
 * had no plan to leave.
 *
 * The key's state is first brought to now under the policy it had (a
 * table limit's row is held until the transaction ends): the time since
 * its last call refills at the old rate.  Then each row (each shard) keeps
 * what it holds, at most its share of the new capacity, and gains nothing
 * for the time before the move (rl_move_state): the key refills at the new
 * rate from now on.  So a move never gives tokens, however often a key
 * hops between plans that refill at different speeds, and rests on the
 * same ground as an override change (state kept, read under the policy in
 * force).  A debt stays, and a blocked key stays blocked.  A memory key,
 * which is not held, is read under the old policy here, with the refunds
 * this transaction gives it at commit (capped at the old capacity, as if
 * they came first), and capped under its partition later: a take in
 * between only lowers what it keeps.
 */
static bool
change_plan(FunctionCallInfo fcinfo, text *plan, const char *cmdname)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	RlTarget	target;
	RlTarget	before;
	double		held;

	rl_require_arg(fcinfo, 1, "key");
	rl_target_init(&target, name, PG_GETARG_TEXT_PP(1));
	rl_storage_begin_writing(nspid, cmdname);
	(void) overridable(name);
	if (!rl_storage_lock_assignments(name, target.key) && plan == NULL)
	{
		/* nothing to leave: the key's state is not touched either */
		rl_storage_end();
		return false;
	}

	rl_target_resolve(&target, NULL);
	(void) rl_adjust(&target, RL_ADJUST_PENALIZE, 0, 0);
	before = target;
	/* a memory limit's refunds in this transaction counted, capped */
	held = rl_adjust(&before, RL_ADJUST_REFUND, 0, 0).value;
	if (!rl_storage_assign(name, target.key, plan))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("plan \"%s\" of rate limit \"%s\" does not exist",
						text_to_cstring(plan), text_to_cstring(name)),
				 errhint("Create it with rl_plan() first.")));

	rl_target_resolve(&target, NULL);
	(void) rl_adjust(&target, RL_ADJUST_MOVE, held, 0);
	rl_storage_end();
	return true;
}

/*
 * rl_assign(name, key, plan): assign one key of a defined rate limit to a
 * plan, replacing its plan or its override; it keeps what it has left, at
 * most the plan's capacity.
 */
Datum
rl_assign(PG_FUNCTION_ARGS)
{
	(void) change_plan(fcinfo, plan_arg(fcinfo, 2), "rl_assign()");
	PG_RETURN_VOID();
}

/*
 * rl_unassign(name, key): take a key off its plan; it follows the
 * definition again, keeping what it has left, at most its capacity.  False when it had no plan
 * (an override of its own stays).
 */
Datum
rl_unassign(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(change_plan(fcinfo, NULL, "rl_unassign()"));
}

