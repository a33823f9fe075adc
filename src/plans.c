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

#include <math.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "algebra.h"
#include "clock.h"
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
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("plan name must not be empty")));
	if (len > RL_MAX_NAME_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("plan name is too long"),
				 errdetail("The name is %d bytes; the limit is %d.",
						   len, RL_MAX_NAME_BYTES)));
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
 * it consumed: false, nothing changed, when it had no plan to leave.
 *
 * The key's state is first brought to now under the policy it had (a
 * table limit's row is held until the transaction ends): the time since
 * its last call refills at the old rate.  v is then its value; under the
 * new capacity it holds v plus the difference of the capacities, so an
 * upgrade keeps what was taken and a reservation's debt is never forgiven.
 * A downgrade takes it no lower than 0, or than a debt it already had: it
 * is refused until it refills, not for longer.  What the key holds under
 * the new policy (w) is set to that by a refund or a penalty.  w is read
 * before v: a memory limit's key, which is not held, may be taken from in
 * between, and that then only lowers v, and so what the key is given.  A
 * memory limit gives tokens at commit (rl_refund, a move up): after such a
 * refund in this transaction a move down is refused, since the refund
 * would land after the move's take, capped only by the new capacity.  (The
 * check reads the key twice, so a take between the reads may refuse a
 * move that had no refund: never the other way round.)  A blocked key
 * stays blocked, and refills under the new policy once the block is over.
 */
static bool
change_plan(FunctionCallInfo fcinfo, text *plan, const char *cmdname)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	RlTarget	target;
	RlTarget	before;
	RlState		state;
	double		v;
	double		w;
	double		delta;
	double		wanted;
	RlPolicy	row_policy;

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
	state = rl_adjust(&target, RL_ADJUST_PENALIZE, 0, 0);
	before = target;
	if (!rl_storage_assign(name, target.key, plan))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("plan \"%s\" of rate limit \"%s\" does not exist",
						text_to_cstring(plan), text_to_cstring(name)),
				 errhint("Create it with rl_plan() first.")));

	rl_target_resolve(&target, NULL);
	row_policy = rl_target_row_policy(&target);
	if (target.policy.shards == 1 &&
		rl_state_is_blocked(&row_policy, target.origin, state,
							rl_clock_now()))
	{
		rl_storage_end();
		return true;
	}
	delta = target.policy.capacity - before.policy.capacity;
	if (delta < 0 && !before.store->writes_table &&
		rl_adjust(&before, RL_ADJUST_REFUND, 0, 0).value >
		rl_current(&before).value)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot move key \"%s\" of rate limit \"%s\" to a smaller plan after giving it tokens in the same transaction",
						text_to_cstring(target.key), text_to_cstring(name)),
				 errdetail("A memory limit gives tokens at commit, after the move, and they would undo what it takes."),
				 errhint("Commit first, then move the key.")));
	w = rl_current(&target).value;
	v = rl_current(&before).value;
	wanted = delta > 0 ? v + delta : fmax(v + delta, fmin(v, 0));
	if (wanted > w)
		(void) rl_adjust(&target, RL_ADJUST_REFUND, wanted - w, 0);
	else if (wanted < w)
		(void) rl_adjust(&target, RL_ADJUST_PENALIZE, w - wanted, 0);
	rl_storage_end();
	return true;
}

/*
 * rl_assign(name, key, plan): assign one key of a defined rate limit to a
 * plan, replacing its plan or its override; it keeps what it consumed.
 */
Datum
rl_assign(PG_FUNCTION_ARGS)
{
	(void) change_plan(fcinfo, plan_arg(fcinfo, 2), "rl_assign()");
	PG_RETURN_VOID();
}

/*
 * rl_unassign(name, key): take a key off its plan; it follows the
 * definition again, keeping what it consumed.  False when it had no plan
 * (an override of its own stays).
 */
Datum
rl_unassign(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(change_plan(fcinfo, NULL, "rl_unassign()"));
}

