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
#include "calendar.h"
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
 * A time_zone argument (argno) of an override, a plan or an assignment,
 * for a limit of policy: false for NULL (none of its own), else true with
 * the zone as the tz database spells it in *zone.  Only a calendar limit
 * (a fixed window with a time_zone) has windows of a zone.
 */
static bool
zone_arg(FunctionCallInfo fcinfo, int argno, const RlPolicy *policy,
		 Datum *zone)
{
	char	   *given;
	RlCalendar	check;

	if (PG_ARGISNULL(argno))
		return false;
	if (policy->calendar.unit == RL_CALENDAR_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time_zone applies only to limits defined with a time_zone"),
				 errhint("Define the limit as a fixed window of 1 day, 1 week, 1 month or 1 year with a time_zone first.")));
	given = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	rl_calendar_init(&check, policy->calendar.unit, given);	/* 22023 */
	*zone = CStringGetTextDatum(rl_calendar_zone_canonical(given));
	return true;
}

/*
 * The numbers of an override or a plan (rl_override, rl_plan): arguments
 * 2 to 6, rate, period, capacity, max_reserved and time_zone, into
 * values[2..6] for rl_storage_put_override.  period NULL follows the definition's (a
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

	nulls[6] = !zone_arg(fcinfo, 6, &policy, &values[6]);
	values[2] = Float8GetDatum(policy.rate);
	nulls[3] = PG_ARGISNULL(3);
	values[3] = nulls[3] ? (Datum) 0 : PG_GETARG_DATUM(3);
	values[4] = Float8GetDatum(policy.capacity);
	nulls[5] = !policy.has_max_reserved;
	values[5] = Float8GetDatum(policy.max_reserved);
}

/* What a key holds as it leaves a policy (leave_policy, enter_policy). */
typedef struct KeyHeld
{
	double		held;			/* what a call could take */
	/*
	 * The time its refills paid for beyond now (adjust.c, rl_cover_steps):
	 * its fixed window's, if that refilled it, and what its last move
	 * remembered (rl_moves)
	 */
	RlCovered	covered[RL_MAX_COVERED];
	int			ncovered;
	double		owed;			/* what its last move charged, unspent */
	bool		refundable;		/* and whether it may come back */
	/* a sliding window's counts: its current window's, from since */
	double		count;
	double		prev;			/* and the window's before since */
	int64		since;
} KeyHeld;

/*
 * The first half of a key's move to another policy: its state brought to
 * now under the policy it has (a table limit's row is then held until the
 * transaction ends), so the time since its last call refills at the old
 * rate; returns what a call could then take and how far its refills were
 * paid for.  Those are its fixed window's, and, while they last, those
 * its last move remembered (rl_moves): a key that moved into a window
 * has none of that window's refills until it ends, only what it brought.
 * A memory key, which is not held, is read under the old
 * policy here, with the refunds this transaction gives it at commit
 * (capped at the old capacity, as if they came first), and capped under
 * its partition later: a take in between only lowers what it keeps.
 */
static KeyHeld
leave_policy(RlTarget *target)
{
	RlTarget	before;
	RlState		state;
	TimestampTz now;
	KeyHeld		out;
	RlMove		move;
	bool		refilled = true;
	int64		until;

	rl_target_resolve(target, NULL);
	(void) rl_adjust(target, RL_ADJUST_PENALIZE, 0, 0);
	before = *target;
	/* a memory limit's refunds in this transaction counted, capped */
	state = rl_adjust(&before, RL_ADJUST_REFUND, 0, 0);
	now = rl_clock_now();
	memset(&out, 0, sizeof(out));
	out.held = rl_available(&before.policy, before.origin, state, now);
	if (rl_storage_get_move(target->name, target->key, &move) &&
		move.covered_until > now)
	{
		/*
		 * The window it moved into has begun again since: by its end as it
		 * was then, or as the policy now has it (a plan's window may have
		 * changed since).
		 */
		until = rl_window_end(&before.policy, before.origin, move.moved_at);
		refilled = (until != RL_NO_TIME && until <= now) ||
			(move.has_refill_at && move.refill_at <= now);
		out.covered[out.ncovered].until = move.covered_until;
		out.covered[out.ncovered++].per_us = move.covered_per_us;
		if (move.has_near)
		{
			out.covered[out.ncovered].until = move.near_until;
			out.covered[out.ncovered++].per_us = move.near_per_us;
		}
		out.owed = move.debt;
		if (refilled)
		{
			/*
			 * The refills since have repaid part of the charge: at most
			 * its highest rate over the time they paid for.  Only where
			 * the policy still has the windows the move saw.
			 */
			int64		cur = rl_window_end(&before.policy, before.origin, now);

			if (move.has_refill_at && until == move.refill_at &&
				cur != RL_NO_TIME && cur > move.refill_at)
				out.owed = fmax(move.debt - fmax(move.covered_per_us,
												 move.near_per_us) *
								(double) (cur - move.refill_at), 0);
			else
				out.owed = 0;
		}
		out.refundable = !move.this_xact && !refilled;
	}
	until = rl_window_end(&before.policy, before.origin, now);
	if (refilled && until != RL_NO_TIME)
	{
		out.covered[out.ncovered].until = until;
		out.covered[out.ncovered++].per_us = before.policy.rate /
			(double) rl_window_length(&before.policy, before.origin, now);
	}
	if (before.policy.kind == RL_SLIDING_WINDOW)
	{
		out.count = before.policy.capacity - state.value;
		/* an unknown previous count is a full one, as the algebra reads it */
		out.prev = isnan(state.prev) || state.prev < 0 ?
			before.policy.capacity : state.prev;
		out.since = rl_window_start(now, before.origin, before.policy.period);
	}
	return out;
}

/*
 * The second half, once rl_overrides says the new policy: each row (each
 * shard) keeps what it held, at most its share of the new capacity, and
 * gains nothing for the time before the move (rl_move_state).  A fixed
 * window that ends before the key's refills were paid for brings a refill
 * forward: the move pays for the time it overlaps them, as a penalty
 * (below zero if need be, blocked or not), at the lower of their rate and
 * the new window's, less what the key gives up above the new capacity; a
 * charge of its last move for a refill that has not come is part of it,
 * and what that charged beyond it comes back.  rl_moves remembers how
 * far the refills were paid for, so a move through a policy of a lower
 * rate or a later end pays no less.  A debt stays, and a blocked key
 * stays blocked.
 */
static void
enter_policy(RlTarget *target, KeyHeld held)
{
	TimestampTz now = rl_clock_now();
	int64		end;
	RlCovered	steps[RL_MAX_COVERED];
	int			nsteps;
	RlMove		move;
	double		given_up;
	double		pay = 0;

	rl_target_resolve(target, NULL);
	given_up = fmax(held.held - target->policy.capacity, 0);
	if (target->policy.kind == RL_SLIDING_WINDOW &&
		(held.count > 0 || held.prev > 0))
	{
		/*
		 * A sliding window counts its current window by what it has left
		 * of its capacity: the counts that fall in the new policy's
		 * current window (the old current window's, and the one before it
		 * when that ends inside) stay counted, below zero if the new
		 * capacity is smaller, so the window after remembers them.
		 */
		int64		start = rl_window_start(now, target->origin,
											target->policy.period);
		double		count = held.count + (held.since > start ? held.prev : 0);

		held.held = fmin(held.held, target->policy.capacity - count);
	}
	(void) rl_adjust(target, RL_ADJUST_MOVE, held.held, 0);
	end = rl_window_end(&target->policy, target->origin, now);
	if (end != RL_NO_TIME)
	{
		nsteps = rl_cover_steps(held.covered, held.ncovered, end, steps);
		pay = fmax(rl_cover_payment(steps, nsteps, end, target->policy.rate /
									(double) rl_window_length(&target->policy,
															  target->origin,
															  now)) - given_up,
				   0);
	}

	/*
	 * What the last move charged and the key still owes (for a refill that
	 * has not come, or for windows after the ones that refilled it) counts
	 * towards this payment.  What it charged beyond comes back when no
	 * refill has come and the move was another transaction's; otherwise
	 * the key keeps owing the larger of the two.
	 */
	if (pay > held.owed)
		(void) rl_adjust(target, RL_ADJUST_PENALIZE, pay - held.owed, 0);
	else if (pay < held.owed && held.refundable)
		(void) rl_adjust(target, RL_ADJUST_REFUND, held.owed - pay, 0);
	else
		pay = held.owed;
	/* how far the refills were paid for, while that is to come */
	nsteps = rl_cover_compress(steps, rl_cover_steps(held.covered,
													 held.ncovered, now,
													 steps));
	if (nsteps > 0)
	{
		move.moved_at = now;
		move.has_refill_at = end != RL_NO_TIME;
		move.refill_at = move.has_refill_at ? end : 0;
		move.covered_until = steps[nsteps - 1].until;
		move.covered_per_us = steps[nsteps - 1].per_us;
		move.has_near = nsteps > 1;
		move.near_until = move.has_near ? steps[0].until : 0;
		move.near_per_us = move.has_near ? steps[0].per_us : 0;
		move.debt = pay;
		rl_storage_put_move(target->name, target->key, &move);
	}
}

/*
 * Write the override of target's key (values and nulls as
 * rl_storage_put_override takes them), or drop it (values NULL): false
 * when there was none to drop.  A key that follows the definition and
 * holds its full capacity (none used, or no state yet) takes its first
 * override at once, as a redefinition: nothing it used is forgotten.
 * Any other key, one that has used some of the definition's, one that
 * has an override or a plan, or one whose time zone this changes, moves
 * as on a change of plan (leave_policy, enter_policy): the time up to now
 * counts at the old numbers, and it keeps what it has left, at most the
 * new capacity.  So hopping between overrides, plans and zones never
 * gives a key more.
 */
static bool
write_override(RlTarget *target, Datum *values, bool *nulls)
{
	RlPolicy	definition = overridable(target->name);
	RlKeyPolicy has = rl_storage_lock_assignments(target->name, target->key);
	bool		moving = has != RL_KEY_DEFINITION;
	KeyHeld		held;
	bool		found = true;

	memset(&held, 0, sizeof(held));

	if (values == NULL && has != RL_KEY_OVERRIDE)
		return false;			/* no override to drop: nothing changes */
	if (!moving)
	{
		/* a key that has used some of its capacity (what a call could take) */
		rl_target_resolve(target, NULL);
		moving = rl_current(target).value < target->policy.capacity;
	}
	if (!moving && definition.calendar.unit != RL_CALENDAR_NONE &&
		!nulls[6])
	{
		/* the definition's zone, or another */
		rl_target_resolve(target, NULL);
		moving = strcmp(rl_calendar_zone_name(&target->policy.calendar),
						TextDatumGetCString(values[6])) != 0;
	}
	if (moving)
		held = leave_policy(target);
	if (values)
		rl_storage_put_override(values, nulls, false);
	else
		found = rl_storage_delete_override(target->name, target->key);
	if (moving)
		enter_policy(target, held);
	return found;
}

/*
 * rl_override(name, key, rate, period, capacity, max_reserved, time_zone):
 * create or replace the override of one key of a defined rate limit (an
 * assignment to a plan too: a key has one or the other).
 */
Datum
rl_override(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	RlTarget	target;
	Datum		values[7];
	bool		nulls[7] = {false};

	rl_require_arg(fcinfo, 1, "key");
	rl_target_init(&target, name, PG_GETARG_TEXT_PP(1));
	rl_require_arg(fcinfo, 2, "rate");

	rl_storage_begin_writing(nspid, "rl_override()");
	values[0] = PointerGetDatum(name);
	values[1] = PointerGetDatum(target.key);
	own_numbers(fcinfo, name, false, values, nulls);
	(void) write_override(&target, values, nulls);
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
	found = write_override(&target, NULL, NULL);
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
 * rl_plan(name, plan, rate, period, capacity, max_reserved, time_zone):
 * create or replace a plan of a defined rate limit, checked as
 * rl_override checks an override.  Its keys take the new numbers at their
 * next call, each keeping what it has left, as after a change of an
 * override.  A new time zone would move its keys' windows all at once, so
 * it is refused while keys without a zone of their own are assigned.
 */
Datum
rl_plan(PG_FUNCTION_ARGS)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	text	   *plan = plan_arg(fcinfo, 1);
	Datum		values[7];
	bool		nulls[7] = {false};
	int64		movers;

	values[0] = PointerGetDatum(name);
	values[1] = PointerGetDatum(plan);
	rl_require_arg(fcinfo, 2, "rate");

	rl_storage_begin_writing(nspid, "rl_plan()");
	own_numbers(fcinfo, name, true, values, nulls);
	movers = rl_storage_plan_zone_movers(name, plan,
										 nulls[6] ? NULL :
										 DatumGetTextPP(values[6]));
	if (movers > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("plan \"%s\" of rate limit \"%s\" cannot change its time zone while keys are assigned to it",
						text_to_cstring(plan), text_to_cstring(name)),
				 errdetail("Keys it would move to other windows: " INT64_FORMAT ".",
						   movers),
				 errhint("Create a plan with the new time zone and move the keys with rl_assign().")));
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
 * Move a key to plan (NULL: off its plan, to the definition), with the
 * time zone of argument 3 or its plan's, keeping what it has left, at most
 * the new capacity (leave_policy, enter_policy): false, nothing changed,
 * when it had no plan to leave.  This rests on the same ground as an
 * override change (state kept, read under the policy in force), but gives
 * nothing for the time before the move.
 */
static bool
change_plan(FunctionCallInfo fcinfo, text *plan, const char *cmdname)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	text	   *name = name_arg(fcinfo);
	RlTarget	target;
	RlPolicy	definition;
	Datum		zone;
	text	   *own_zone = NULL;
	KeyHeld		held;

	rl_require_arg(fcinfo, 1, "key");
	rl_target_init(&target, name, PG_GETARG_TEXT_PP(1));
	rl_storage_begin_writing(nspid, cmdname);
	definition = overridable(name);
	if (plan != NULL && zone_arg(fcinfo, 3, &definition, &zone))
		own_zone = DatumGetTextPP(zone);
	if (rl_storage_lock_assignments(name, target.key) != RL_KEY_PLAN &&
		plan == NULL)
	{
		/* nothing to leave: the key's state is not touched either */
		rl_storage_end();
		return false;
	}

	held = leave_policy(&target);
	if (!rl_storage_assign(name, target.key, plan, own_zone))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("plan \"%s\" of rate limit \"%s\" does not exist",
						text_to_cstring(plan), text_to_cstring(name)),
				 errhint("Create it with rl_plan() first.")));
	enter_policy(&target, held);
	rl_storage_end();
	return true;
}

/*
 * rl_assign(name, key, plan, time_zone): assign one key of a defined rate
 * limit to a plan, with a time zone of its own or the plan's (NULL),
 * replacing its plan or its override; it keeps what it has left, at most
 * the plan's capacity.
 */
Datum
rl_assign(PG_FUNCTION_ARGS)
{
	(void) change_plan(fcinfo, plan_arg(fcinfo, 2), "rl_assign()");
	PG_RETURN_VOID();
}

/*
 * rl_unassign(name, key): take a key off its plan; it follows the
 * definition again, keeping what it has left, at most its capacity.  False
 * when it had no plan (an override of its own stays).
 */
Datum
rl_unassign(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(change_plan(fcinfo, NULL, "rl_unassign()"));
}

