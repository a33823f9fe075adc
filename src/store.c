/*-------------------------------------------------------------------------
 *
 * store.c
 *	  The stores in their rank, the one place a policy's store is found,
 *	  and what every store calls to decide over the state it holds: the
 *	  algebra at the time the state was read, its answers checked against
 *	  timestamptz's range.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "store.h"

/* algebra.h keeps its own copy of timestamptz's range */
StaticAssertDecl(RL_MIN_TIME == MIN_TIMESTAMP && RL_END_TIME == END_TIMESTAMP,
				 "RL_MIN_TIME and RL_END_TIME must match timestamptz's range");

/*
 * The stores in rank: the table store first, since holding its rows may
 * wait; the memory store last, since nothing may wait while it holds a
 * partition (store.h).
 */
const RlStoreOps *const rl_stores[] = {&rl_table_store, &rl_memory_store};
const int	rl_nstores = lengthof(rl_stores);

/* Each store by its policy's storage. */
static const RlStoreOps *const store_by_storage[] = {
	[RL_STORE_TABLE] = &rl_table_store,
	[RL_STORE_MEMORY] = &rl_memory_store,
};

/* The store that keeps the state of a limit with this policy. */
const RlStoreOps *
rl_store_of(const RlPolicy *policy)
{
	Assert(policy->store >= 0 && policy->store < lengthof(store_by_storage));
	return store_by_storage[policy->store];
}

/* Raise the error for what the algebra could not answer at time now. */
void
rl_check_status(RlStatus status, TimestampTz now)
{
	switch (status)
	{
		case RL_DECIDED:
			return;
		case RL_WAIT_TOO_LONG:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("rate limit wait exceeds 1000 years"),
					 errdetail("The count is too large for the rate of the limit.")));
			break;
		case RL_TIME_OUT_OF_RANGE:
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("rate limit state would fall outside the timestamp range"),
					 errdetail("The call is at %s; a window start, retry or reset it needs lies before 4714-11-24 BC or after 294276-12-31.",
							   timestamptz_to_str(now))));
			break;
	}
	elog(ERROR, "unexpected rate limit status %d", (int) status);
}

/*
 * Refuse a state that timestamptz cannot hold, before it is written or
 * returned.  The algebra refuses such states already, against its copy of
 * the bounds; this is the check against PostgreSQL's own.
 */
void
rl_check_state_time(const RlState *state, TimestampTz now)
{
	if (!IS_VALID_TIMESTAMP(state->ts))
		rl_check_status(RL_TIME_OUT_OF_RANGE, now);
}

/*
 * Decide over the state a store holds for a call, at the time it was read
 * (held->now).  Every state the answer would write is checked here, and
 * rl_consume_all decides every limit before it writes any, so an error
 * writes nothing.
 */
void
rl_decide_held(const RlTarget *target, const RlHeld *held, double count,
			   bool reserve, RlAnswer *answer)
{
	RlPolicy	policy = rl_target_row_policy(target);
	const RlState *states[2];

	/* a deny found once the call held its state: refused, as limit.c's */
	if (target->denied)
	{
		memset(answer, 0, sizeof(*answer));
		answer->has_retry = target->deny_has_until;
		answer->retry_after = target->deny_has_until ?
			Max(target->deny_until - held->now, 1) : 0;
		return;
	}
	for (int i = 0; i < held->n; i++)
		states[i] = held->stored[i] ? &held->state[i] : NULL;
	if (target->partial && !target->allowed)
	{
		count = rl_partial_count(&policy, target->origin, held->n, states,
								 held->now, count);
		/* never a debt: refused until the tokens are held (one, or count) */
		policy.has_max_debt = false;
	}
	rl_check_status(rl_decide_shards(&policy, target->origin, held->n, states,
									 held->now, target->allowed ? 0 : count,
									 !target->allowed && reserve, answer),
					held->now);
	/* an allow found then: granted, taking nothing */
	if (target->allowed)
	{
		answer->ok = true;
		answer->has_retry = false;
		answer->retry_after = 0;
		answer->write[0] = answer->write[1] = false;
		answer->granted = count;
		return;
	}
	answer->granted = answer->ok ? count : 0;
	for (int i = 0; i < held->n; i++)
		if (answer->write[i])
			rl_check_state_time(&answer->state[i], held->now);
}

/*
 * One row's new state under a refund, penalty, block, charge, return or
 * move; *charged receives what a charge took (amount for the other kinds).
 */
void
rl_adjust_state(const RlPolicy *policy, int64 origin, RlAdjustment kind,
		   const RlState *state, TimestampTz now, double amount,
		   int64 duration, RlState *out, double *charged)
{
	RlStatus	status = RL_DECIDED;

	*charged = amount;
	switch (kind)
	{
		case RL_ADJUST_REFUND:
			status = rl_refund_state(policy, origin, state, now, amount, out);
			break;
		case RL_ADJUST_PENALIZE:
			status = rl_penalize_state(policy, origin, state, now, amount, out);
			break;
		case RL_ADJUST_BLOCK:
			status = rl_block_state(policy, origin, state, now, duration, out);
			break;
		case RL_ADJUST_CHARGE:
			status = rl_charge_state(policy, origin, state, now, amount, out,
									 charged);
			break;
		case RL_ADJUST_RETURN:
			status = rl_refund_state(policy, origin, state, now, amount, out);

			/*
			 * Routine settling never lifts a block: while the key is
			 * blocked a return gives nothing, and the block ends with the
			 * key as the block left it.
			 */
			if (status == RL_DECIDED && state != NULL &&
				rl_state_is_blocked(policy, origin, *state, now))
				status = rl_refund_state(policy, origin, state, now, 0, out);
			break;
		case RL_ADJUST_MOVE:
			status = rl_move_state(policy, origin, state, now, amount, out);
			break;
	}
	rl_check_status(status, now);
	rl_check_state_time(out, now);
}

