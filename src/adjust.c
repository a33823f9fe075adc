/*-------------------------------------------------------------------------
 *
 * adjust.c
 *	  The arithmetic of a change to a key's state outside a call: a refund,
 *	  a settlement's charge, a penalty, a plan move, a block, and a refund
 *	  spread over shards.  Each starts from the state brought forward to
 *	  now (algebra.c's refill) and stores only a state that is full again
 *	  within RL_MAX_WAIT.
 *
 *-------------------------------------------------------------------------
 */
#include "algebra.h"
#include "algebra_internal.h"

#include <math.h>
#include <string.h>

/*
 * The state a refund, penalty or block starts from: the stored one brought
 * forward to now, or a full bucket for a key with no state.
 */
static RlStatus
current_state(const RlPolicy *policy, int64_t origin, const RlState *state,
			  int64_t now, RlState *current)
{
	if (!rl_valid_time(now) || (state && !rl_valid_time(state->ts)))
		return RL_TIME_OUT_OF_RANGE;
	if (state == NULL)
		return rl_initial_state(policy, origin, now, current);
	*current = rl_refill(policy, origin, *state, now);
	return RL_DECIDED;
}

/*
 * A state a penalty or block may store: one that, left alone, is full
 * again within RL_MAX_WAIT of now (the bound every answer keeps), at a
 * time before RL_END_TIME.
 */
static RlStatus
check_refillable(const RlPolicy *policy, int64_t origin, RlState state,
				 int64_t now)
{
	int64_t		wait;

	if (!rl_valid_time(state.ts))
		return RL_TIME_OUT_OF_RANGE;
	return rl_wait_for(policy, origin, state, policy->capacity, now, &wait);
}

/*
 * Give count tokens back (count > 0): the state brought forward to now,
 * plus count, never above capacity.  ts is the one the refill left.
 */
RlStatus
rl_refund_state(const RlPolicy *policy, int64_t origin, const RlState *state,
				int64_t now, double count, RlState *out)
{
	RlStatus	status = current_state(policy, origin, state, now, out);

	if (status != RL_DECIDED)
		return status;
	out->value = fmin(out->value + count, policy->capacity);
	return RL_DECIDED;
}

/*
 * Settle's charge of count tokens (count > 0), the part of a cost found
 * after the work: a penalty, but under max_debt one that goes no deeper
 * than -max_debt, taking what it can there (nothing from a key already as
 * deep, which it never lifts).  *charged receives what it took.
 */
RlStatus
rl_charge_state(const RlPolicy *policy, int64_t origin, const RlState *state,
				int64_t now, double count, RlState *out, double *charged)
{
	RlStatus	status = current_state(policy, origin, state, now, out);

	if (status != RL_DECIDED)
		return status;
	*charged = count;
	if (policy->has_max_debt && out->value - count < -policy->max_debt)
	{
		*charged = fmax(out->value + policy->max_debt, 0);
		out->value = fmin(out->value, -policy->max_debt);
	}
	else
		out->value -= count;
	return check_refillable(policy, origin, *out, now);
}

/*
 * Take count tokens (count > 0) without a check: the value may go below
 * zero, and below -max_reserved, as long as the key is full again within
 * RL_MAX_WAIT (RL_WAIT_TOO_LONG otherwise).
 */
RlStatus
rl_penalize_state(const RlPolicy *policy, int64_t origin,
				  const RlState *state, int64_t now, double count,
				  RlState *out)
{
	RlStatus	status = current_state(policy, origin, state, now, out);

	if (status != RL_DECIDED)
		return status;
	out->value -= count;
	return check_refillable(policy, origin, *out, now);
}

/*
 * A row moved to another policy (a key's plan or time zone changed), from
 * its state brought forward to now under the old one, where a call could
 * take held: what a call can take stays at most held, and the row gains
 * nothing for the time before now (brought forward under policy, then
 * taken back, so a window that policy would start earlier gives nothing).
 * For a sliding window that is its value less the previous window's
 * weighted count.  A negative value (a debt, a reservation) stays; a
 * blocked row is not touched.  (What a move pays for a refill it brings
 * forward is a penalty of its own: plans.c.)
 */
RlStatus
rl_move_state(const RlPolicy *policy, int64_t origin, const RlState *state,
			  int64_t now, double held, RlState *out)
{
	RlStatus	status = current_state(policy, origin, state, now, out);
	double		excess;

	if (status != RL_DECIDED)
		return status;
	if (state != NULL && rl_state_is_blocked(policy, origin, *state, now))
	{
		*out = *state;
		return RL_DECIDED;
	}
	excess = rl_available(policy, origin, *out, now) - held;
	if (excess > 0)
		out->value -= excess;
	return RL_DECIDED;
}

/*
 * Block a key for duration (> 0) from now: every call is refused until
 * then, and the key refills from empty afterwards.
 *
 * Token bucket: the key holds nothing at until = now + duration, counted
 * at until, so a call of count tokens is refused until until + count *
 * period / rate.  Fixed window: the key holds nothing in the window that
 * ends at the first window start at or after until, so calls are refused
 * until that start.  Either way the state is stored with ts at that time
 * (or window), later than now, and the refill adds nothing before it.
 *
 * A deficit the key would still owe then (reservations outstanding) is
 * kept: a block never forgives a debt.  A block that already lasts longer
 * is kept as it is: ts never moves backwards.
 *
 * With escalation (block_factor), every block, rl_block's too, adds one
 * to the key's offence score as it stood at now.
 */
RlStatus
rl_block_state(const RlPolicy *policy, int64_t origin, const RlState *state,
			   int64_t now, int64_t duration, RlState *out)
{
	RlState		current;
	int64_t		until;
	int64_t		ts;
	RlStatus	status;
	double		score;

	status = current_state(policy, origin, state, now, &current);
	if (status != RL_DECIDED)
		return status;
	score = rl_offence_score(policy, current, now);
	if (duration <= 0 || !rl_add_before_end(now, duration, &until))
		return RL_TIME_OUT_OF_RANGE;
	if (policy->kind == RL_TOKEN_BUCKET)
		ts = until;
	else if (rl_is_calendar(policy))
	{
		/* the window before the first start at or after until */
		ts = rl_window_of(policy, origin, until - 1);
		if (!rl_valid_time(ts))
			return RL_TIME_OUT_OF_RANGE;
	}
	else
	{
		int64_t		start = rl_window_start(until, origin, policy->period);

		/* the window before the first start at or after until */
		ts = start == until ? until - policy->period : start;
	}
	if (policy->kind == RL_TOKEN_BUCKET)
	{
		if (current.ts >= ts)
			*out = current;
		else
			*out = rl_refill(policy, origin, current, ts);
	}
	else if (current.ts >= until - 1)
		*out = current;			/* a block that lasts longer */
	else
	{
		/*
		 * A window's block is stored at its last microsecond, in the window
		 * it empties: refilled as from that window's start (the same
		 * window), but a time after now until the block is over, so that
		 * rl_state_is_blocked sees a block that ends within the current
		 * window too, and an offence score is forgotten only from its end.
		 */
		*out = rl_refill(policy, origin, current, ts);
		out->ts = until - 1;
	}
	out->value = fmin(out->value, 0);
	/* one offence more, forgotten only from the block's end on */
	if (RL_POLICY_ESCALATES(policy))
		out->prev = rl_score_prev(score + 1);
	return check_refillable(policy, origin, *out, now);
}

/*
 * Spread a refund of count tokens over n shards holding values[], each at
 * most capacity: in equal parts, a shard that fills up passing the rest
 * on to the others.  values[] is raised in place; returns how much was
 * given (less than count only when every shard is full).
 */
double
rl_refund_spread(double capacity, int n, double *values, double count)
{
	double		left = count;

	for (int round = 0; round < n && left > 0; round++)
	{
		int			open = 0;
		double		share;

		for (int i = 0; i < n; i++)
			if (values[i] < capacity)
				open++;
		if (open == 0)
			break;
		share = left / open;
		for (int i = 0; i < n; i++)
		{
			double		give;

			if (values[i] >= capacity)
				continue;
			give = fmin(share, capacity - values[i]);
			values[i] = fmin(values[i] + give, capacity);
			left -= give;
		}
	}
	return count - fmax(left, 0);
}
