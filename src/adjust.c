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
#include <stdlib.h>
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
 * weighted count.  A negative value (a debt, a reservation) stays, as
 * long as the new policy repays it within RL_MAX_WAIT (RL_WAIT_TOO_LONG
 * otherwise); a blocked row is not touched.  (What a move pays for a
 * refill it brings forward is a penalty of its own: plans.c.)
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
	/* a debt the new policy would take more than RL_MAX_WAIT to repay */
	return check_refillable(policy, origin, *out, now);
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
 * The time a key's refills paid for, as steps: the upper envelope of n
 * spans (n at most RL_MAX_COVERED), each until a time at a rate per
 * microsecond, cut to the part after after.  steps[] receives them in
 * order of their ends, each ending later and at a lower rate than the
 * one before (step i covers from the end of step i - 1); returns how
 * many.
 */
int
rl_cover_steps(const RlCovered *spans, int n, int64_t after,
			   RlCovered *steps)
{
	RlCovered	sorted[RL_MAX_COVERED];
	int			m = 0;
	int			k = 0;
	double		rate = 0;

	for (int i = 0; i < n; i++)
	{
		int			j = m++;

		if (spans[i].until <= after)
		{
			m--;
			continue;
		}
		/* insertion by end */
		while (j > 0 && sorted[j - 1].until > spans[i].until)
		{
			sorted[j] = sorted[j - 1];
			j--;
		}
		sorted[j] = spans[i];
	}
	/* from the last end back: the highest rate of the spans still on */
	for (int j = m - 1; j >= 0; j--)
	{
		rate = fmax(rate, sorted[j].per_us);
		sorted[j].per_us = rate;
	}
	/* a step at the rate of the next adds nothing; one as long, its rate */
	for (int j = 0; j < m; j++)
	{
		if (j + 1 < m && sorted[j].until == sorted[j + 1].until)
			sorted[j + 1].per_us = sorted[j].per_us;
		if (j + 1 < m && sorted[j].per_us == sorted[j + 1].per_us)
			continue;
		steps[k++] = sorted[j];
	}
	return k;
}

/*
 * What a refill at end pays for the steps (rl_cover_steps) that run past
 * it: each step's rate, at most per_us, over its part after end.
 */
double
rl_cover_payment(const RlCovered *steps, int n, int64_t end, double per_us)
{
	double		pay = 0;
	int64_t		from = end;

	for (int i = 0; i < n; i++)
	{
		if (steps[i].until <= from)
			continue;
		pay += fmin(steps[i].per_us, per_us) * (double) (steps[i].until - from);
		from = steps[i].until;
	}
	return pay;
}

/*
 * Steps (rl_cover_steps) cut to at most two: of the three, the two
 * neighbours that add the least covered time at the higher rate become
 * one, so the steps never cover less.  Returns how many are left.
 */
int
rl_cover_compress(RlCovered *steps, int n)
{
	double		first;
	double		second;

	if (n < 3)
		return n;
	/* the first step's rate up to the second's end, or the second's to the third's */
	first = (steps[0].per_us - steps[1].per_us) *
		(double) (steps[1].until - steps[0].until);
	second = (steps[1].per_us - steps[2].per_us) *
		(double) (steps[2].until - steps[1].until);
	if (first <= second)
	{
		steps[0].until = steps[1].until;
		steps[1] = steps[2];
	}
	else
		steps[1].until = steps[2].until;
	return 2;
}

/* qsort's order for rl_take_spread: the largest first */
static int
descending(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x < y) - (x > y);
}

/*
 * Take count tokens (count > 0) from n shards holding values[] (n at
 * most RL_MAX_SHARDS), the fullest first: every shard above a level is
 * lowered to it, the level chosen so that the shards give count in all.
 * A shard holding less gives nothing until every shard is down to it, so
 * no shard goes below zero while another holds a token: what the shards
 * hold above zero drops by count, as far as it goes, and a call (which
 * takes from a shard that holds enough) is granted no more than the key
 * holds.  Beyond that the rest is taken from all alike.  values[] is
 * lowered in place.
 */
void
rl_take_spread(int n, double *values, double count)
{
	double		sorted[RL_MAX_SHARDS];
	double		top = 0;
	double		level = 0;

	memcpy(sorted, values, sizeof(double) * n);
	qsort(sorted, n, sizeof(double), descending);
	for (int k = 1; k <= n; k++)
	{
		top += sorted[k - 1];
		level = (top - count) / k;
		if (k == n || level >= sorted[k])
			break;
	}
	for (int i = 0; i < n; i++)
		values[i] = fmin(values[i], level);
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
