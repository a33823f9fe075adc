/*-------------------------------------------------------------------------
 *
 * algebra.c
 *	  Token-bucket and fixed-window arithmetic on two numbers per limit.
 *
 * A limit's state is (value, ts).  Token bucket: tokens flow in
 * continuously at rate/period, up to capacity; ts is when value was last
 * brought forward.  Fixed window: rate tokens arrive at each window start
 * origin + k * period, up to capacity; ts is the start of the window value
 * belongs to.  A call subtracts count from the brought-forward value; it is
 * granted when the result stays at or above zero (or above -max_reserved
 * when reserving).  Every wait reported is the first microsecond at which
 * the same arithmetic says yes, found by a closed form and then confirmed
 * by re-running the refill, so floating-point rounding can never make a
 * retry at retry_after fail.
 *
 * Sliding window (a third number, prev): windows as a fixed window's,
 * capacity = rate = N; value is what the current window (ts) has left,
 * N - cur, and prev what the window before it counted.  At time t in
 * ts's window a call may take N - cur - prev * (1 - (t - ts) / period):
 * the previous window's count weighted by the part of it still inside
 * the sliding window of length period that ends at t (rl_available).  At
 * each window start the current count becomes prev (0 when a window
 * passed with no state), so that amount is continuous and never
 * decreases while the key is left alone; every wait is a bisection over
 * it.  docs/policies.md derives what that admits against an exact log.
 *
 * Time arithmetic is checked: the times given must be valid timestamptz
 * values, a sum of a time and a duration that reaches RL_END_TIME (or
 * would overflow) stops the answer with RL_TIME_OUT_OF_RANGE, and a
 * difference of two times is taken where it cannot overflow.  Near either
 * end of the range a call can thus fail, but it never wraps.
 *
 *-------------------------------------------------------------------------
 */
#include "algebra.h"
#include "algebra_internal.h"

#include <math.h>
#include <string.h>

/* True when x is a finite amount within [lo, RL_MAX_AMOUNT]. */
static bool
amount_in_range(double x, double lo, bool lo_inclusive)
{
	if (!isfinite(x) || x > RL_MAX_AMOUNT)
		return false;
	return lo_inclusive ? x >= lo : x > lo;
}

/*
 * How long an untouched limit takes to go from its deepest reservation
 * (-max_reserved) to full.  Bounding it bounds every wait a call on the
 * policy can report (rl_reserve_depth bounds it for a limit without
 * max_reserved).
 */
static double
fill_time(const RlPolicy *policy)
{
	double		span = policy->capacity +
		(policy->has_max_reserved ? policy->max_reserved : 0) +
		(policy->has_max_debt ? policy->max_debt : 0);

	if (policy->kind == RL_TOKEN_BUCKET)
		return span * (double) policy->period / policy->rate;
	return ceil(span / policy->rate) * (double) policy->period;
}

/*
 * How far below zero reservations may take a key: max_reserved, or for a
 * limit without one, its capacity, so that one call (anyone's: rl_limit is
 * granted to PUBLIC) can make the key's other callers wait no longer than
 * a full burst does, about two refills; and never so far that the limit
 * needs more than RL_RESERVE_HORIZON to refill to full (whole windows, for
 * a fixed window).  That keeps every state a call can leave full again
 * well within RL_MAX_WAIT (the other half absorbs any rounding), for a
 * slow limit whose capacity alone takes centuries to refill too; deeper
 * reservations are the definition's choice, an explicit max_reserved.
 */
double
rl_reserve_depth(const RlPolicy *policy)
{
	double		span;

	if (policy->has_max_reserved)
		return policy->max_reserved;
	if (policy->kind == RL_SLIDING_WINDOW)
		return 0;				/* it has no reservations */
	if (policy->kind == RL_TOKEN_BUCKET)
		span = (double) RL_RESERVE_HORIZON * policy->rate /
			(double) policy->period;
	else
		span = (double) (RL_RESERVE_HORIZON / policy->period) * policy->rate;
	if (span <= policy->capacity)
		return 0;
	return fmin(policy->capacity, span - policy->capacity);
}

/* What is wrong with a policy, as an error message, or NULL if nothing. */
const char *
rl_policy_problem(const RlPolicy *policy)
{
	if (policy->has_max_debt)
	{
		/* shards would each admit on a positive balance of their own */
		if (policy->kind != RL_TOKEN_BUCKET && policy->kind != RL_FIXED_WINDOW)
			return "max_debt applies only to token bucket and fixed window limits";
		if (!amount_in_range(policy->max_debt, 0, true))
			return "max_debt must be a finite number between zero and 1e15";
		if (policy->has_max_reserved)
			return "a limit cannot have both max_debt and max_reserved";
		if (policy->shards != 1)
			return "a sharded limit cannot have max_debt";
	}
	if (RL_KIND_IS_CONCURRENCY(policy->kind))
	{
		if (!(policy->capacity >= 1 && policy->capacity <= RL_MAX_PERMITS &&
			  policy->capacity == floor(policy->capacity)))
			return "permits must be between 1 and 1000";
		if (policy->shards != 1 || policy->has_start)
			return "a concurrency limit has only a number of permits";
		/* permits lowered: the highest number of slots still in use */
		if (policy->has_max_reserved &&
			!(policy->kind == RL_CONCURRENCY &&
			  policy->max_reserved > policy->capacity &&
			  policy->max_reserved <= RL_MAX_PERMITS &&
			  policy->max_reserved == floor(policy->max_reserved)))
			return "a concurrency limit has only a number of permits";
		return NULL;
	}
	if (!amount_in_range(policy->rate, 0, false))
		return "rate must be a finite number greater than zero and at most 1e15";
	if (policy->period <= 0 || policy->period > RL_MAX_PERIOD)
		return "period must be greater than zero and at most 100 years";
	if (!amount_in_range(policy->capacity, 0, true))
		return "capacity must be a finite number between zero and 1e15";
	if (policy->has_max_reserved &&
		!amount_in_range(policy->max_reserved, 0, true))
		return "max_reserved must be a finite number between zero and 1e15";
	if (policy->shards < 1 || policy->shards > RL_MAX_SHARDS)
		return "shards must be between 1 and 1024";
	if (policy->has_start && policy->kind != RL_FIXED_WINDOW &&
		policy->kind != RL_SLIDING_WINDOW)
		return "start applies only to fixed and sliding window limits";
	if (policy->kind == RL_SLIDING_WINDOW)
	{
		/*
		 * A reservation would have to count in a window not yet begun, and
		 * shards would each estimate their own share of two windows: the
		 * bound derived for one counter holds for neither.
		 */
		if (policy->capacity != policy->rate)
			return "the capacity of a sliding window limit is its rate";
		if (policy->has_max_reserved)
			return "a sliding window limit cannot reserve";
		if (policy->shards != 1)
			return "a sliding window limit cannot have shards";
	}
	if (policy->calendar.unit != RL_CALENDAR_NONE)
	{
		if (policy->kind != RL_FIXED_WINDOW)
			return "time_zone applies only to fixed window limits";
		if (policy->has_start)
			return "a fixed window with a time_zone cannot have a start";
		if (policy->period != rl_calendar_period(policy->calendar.unit))
			return "with a time_zone, period must be 1 day, 1 week, 1 month or 1 year";
	}
	if (fill_time(policy) > (double) RL_MAX_WAIT)
		return "the limit would take more than 1000 years to refill";
	return NULL;
}

/*
 * The largest count a limit can ever grant: its capacity, and with shards
 * two shards' worth, since a call takes from at most two shards.
 */
static double
grantable(const RlPolicy *policy, bool reserve)
{
	double		per_shard = policy->capacity +
		(reserve ? rl_reserve_depth(policy) : 0);

	if (policy->shards == 1)
		return per_shard;
	return 2 * per_shard / policy->shards;
}

/*
 * What is wrong with a count for this (valid) policy, or NULL.  A count the
 * limit can never grant is an error rather than an endless stream of
 * retry_afters.
 */
const char *
rl_count_problem(const RlPolicy *policy, double count, bool reserve)
{
	if (!amount_in_range(count, 0, false))
		return "count must be a finite number greater than zero and at most 1e15";
	if (policy->has_max_debt)
	{
		/* a call may already take the key below zero: nothing to reserve */
		if (reserve)
			return "a limit with max_debt cannot reserve";
		if (count > policy->capacity + policy->max_debt)
			return "count exceeds the capacity plus max_debt of the limit";
		return NULL;
	}
	if (reserve && policy->kind == RL_SLIDING_WINDOW)
		return "a sliding window limit cannot reserve";
	if (policy->shards > 1 && count > grantable(policy, reserve))
		return "count exceeds what two shards of the limit can hold";
	if (!reserve && count > policy->capacity)
		return "count exceeds the capacity of the limit";
	if (reserve && count > policy->capacity + rl_reserve_depth(policy))
		return policy->has_max_reserved ?
			"count exceeds the capacity plus max_reserved of the limit" :
			"count exceeds what the limit can reserve without max_reserved";
	return NULL;
}

/* The policy each of a limit's shards enforces: an even split. */
RlPolicy
rl_policy_shard(const RlPolicy *policy)
{
	RlPolicy	shard = *policy;

	shard.rate /= policy->shards;
	shard.capacity /= policy->shards;
	shard.max_reserved /= policy->shards;
	shard.shards = 1;			/* the policy of one row */
	return shard;
}

/* True when t is a time a timestamptz can hold. */
bool
rl_valid_time(int64_t t)
{
	return t >= RL_MIN_TIME && t < RL_END_TIME;
}

/*
 * A later time, t + d (d >= 0), into *sum; false when it would be at or
 * past RL_END_TIME, overflow included.
 */
bool
rl_add_before_end(int64_t t, int64_t d, int64_t *sum)
{
	return !__builtin_add_overflow(t, d, sum) && *sum < RL_END_TIME;
}

/*
 * How long from now until t, zero when t is not later; false when that is
 * more than RL_MAX_WAIT.  Two valid times can lie further apart than an
 * int64_t reaches, hence the checked difference.
 */
static bool
wait_until(int64_t t, int64_t now, int64_t *wait)
{
	if (t <= now)
	{
		*wait = 0;
		return true;
	}
	return !__builtin_sub_overflow(t, now, wait) && *wait <= RL_MAX_WAIT;
}

/* Floor modulo: the result is in [0, m) for m > 0. */
static int64_t
floor_mod(int64_t a, int64_t m)
{
	int64_t		r = a % m;

	return r < 0 ? r + m : r;
}

/* The number of a calendar limit's window that holds t. */
static inline int64_t
calendar_index(const RlPolicy *policy, int64_t t)
{
	return policy->calendar.window_index(&policy->calendar, t);
}

/* The first microsecond of a calendar limit's window number index. */
static inline int64_t
calendar_start(const RlPolicy *policy, int64_t index)
{
	return policy->calendar.window_start(&policy->calendar, index);
}

/*
 * The start of a fixed window's window that holds t, whichever kind of
 * windows it has (rl_window_start for windows of a period).
 */
int64_t
rl_window_of(const RlPolicy *policy, int64_t origin, int64_t t)
{
	if (rl_is_calendar(policy))
		return calendar_start(policy, calendar_index(policy, t));
	return rl_window_start(t, origin, policy->period);
}

/* 64-bit FNV-1a over a byte range, continuing from h. */
static uint64_t
fnv1a(uint64_t h, const char *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
	{
		h ^= (unsigned char) data[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

/*
 * A time at which one of this limit's windows starts.  With no configured
 * start the phase is a hash of (name, key), fixed forever, so keys spread
 * their window starts over the period and a reset never moves them.  The
 * NULL key hashes differently from every text key, the empty one included.
 */
int64_t
rl_window_origin(const RlPolicy *policy, const char *name, size_t name_len,
				 const char *key, size_t key_len, bool key_is_null)
{
	uint64_t	h = UINT64_C(14695981039346656037);
	char		tag = key_is_null ? 'N' : 'K';

	if (policy->has_start)
		return floor_mod(policy->start, policy->period);
	/* calendar windows start at local midnight, for every key */
	if (rl_is_calendar(policy))
		return 0;
	h = fnv1a(h, name, name_len);
	h = fnv1a(h, "\0", 1);
	h = fnv1a(h, &tag, 1);
	if (!key_is_null)
		h = fnv1a(h, key, key_len);
	return (int64_t) (h % (uint64_t) policy->period);
}

/*
 * The start of the window that contains t.  It precedes t by less than a
 * period, so it may precede RL_MIN_TIME; one that would precede INT64_MIN
 * comes back as INT64_MIN, outside the valid range as the true start is.
 */
int64_t
rl_window_start(int64_t t, int64_t origin, int64_t period)
{
	/* t's offset into its window, found without forming t - origin */
	int64_t		offset = floor_mod(t, period) - floor_mod(origin, period);
	int64_t		start;

	if (offset < 0)
		offset += period;
	if (__builtin_sub_overflow(t, offset, &start))
		return INT64_MIN;
	return start;
}

/*
 * The end of a fixed window's window that holds t (the first microsecond
 * of the next), or RL_NO_TIME for the other kinds and for an end that is
 * not a valid time.
 */
int64_t
rl_window_end(const RlPolicy *policy, int64_t origin, int64_t t)
{
	int64_t		start;
	int64_t		length;
	int64_t		end;

	if (policy->kind != RL_FIXED_WINDOW)
		return RL_NO_TIME;
	start = rl_window_of(policy, origin, t);
	length = rl_window_length(policy, origin, t);
	if (length <= 0 || __builtin_add_overflow(start, length, &end) ||
		!rl_valid_time(end))
		return RL_NO_TIME;
	return end;
}

/*
 * How long the window that holds t lasts: the period, or for calendar
 * windows that window's own length (a month of 28 to 31 days, a day of 23
 * or 25 hours across a daylight-saving change); 0 when its end is not
 * before RL_END_TIME.  What RateLimit-Policy's w reports.
 */
int64_t
rl_window_length(const RlPolicy *policy, int64_t origin, int64_t t)
{
	int64_t		index;
	int64_t		start;
	int64_t		end;

	if (!rl_is_calendar(policy))
		return policy->period;
	index = calendar_index(policy, t);
	start = calendar_start(policy, index);
	end = calendar_start(policy, index + 1);
	if (!rl_valid_time(start) || !rl_valid_time(end))
		return 0;
	return end - start;
}

/*
 * The state of a key never seen before: a full bucket, counted from now
 * (token bucket) or from the start of now's window.  RL_TIME_OUT_OF_RANGE
 * when now is not a valid time, or its window starts before RL_MIN_TIME.
 */
RlStatus
rl_initial_state(const RlPolicy *policy, int64_t origin, int64_t now,
				 RlState *state)
{
	if (!rl_valid_time(now))
		return RL_TIME_OUT_OF_RANGE;
	state->value = policy->capacity;
	state->ts = policy->kind == RL_TOKEN_BUCKET ? now :
		rl_window_of(policy, origin, now);
	state->prev = RL_KIND_HAS_PREV(policy->kind) ? 0 : NAN;
	return rl_valid_time(state->ts) ? RL_DECIDED : RL_TIME_OUT_OF_RANGE;
}

/* The prev that stores an offence score: -(1 + score), NaN for none. */
double
rl_score_prev(double score)
{
	return score > 0 ? -(1 + score) : NAN;
}

/*
 * rl_refill for a sliding window: at a new window the current window's
 * count becomes prev when the two are adjacent, and 0 otherwise; value
 * starts at capacity.  A missing prev (NaN: a state written under another
 * kind, before a redefinition) counts as a full previous window, N: what
 * that window granted is unknown, and assuming less could admit more than
 * the bound in the first window after the change.  So does a negative one
 * (another kind's offence score, or a hand edit): never as empty.
 */
static RlState
sliding_refill(const RlPolicy *policy, int64_t origin, RlState state,
			   int64_t now)
{
	RlState		out = state;
	int64_t		from = rl_window_start(state.ts, origin, policy->period);
	int64_t		to = rl_window_start(now, origin, policy->period);

	if (isnan(out.prev) || out.prev < 0)
		out.prev = policy->capacity;
	if (to > from)
	{
		uint64_t	span = (uint64_t) to - (uint64_t) from;

		out.prev = span == (uint64_t) policy->period ?
			fmax(policy->capacity - fmin(state.value, policy->capacity), 0) : 0;
		out.value = policy->capacity;
		out.ts = to;
	}
	out.value = fmin(out.value, policy->capacity);
	return out;
}

/*
 * What a sliding window's state, already brought forward to t (or
 * blocked: ts after t), lets a call take at t: its value less prev
 * weighted by the part of the previous window still inside the sliding
 * window that ends at t.  Before ts the whole of prev counts.
 */
static double
sliding_available(const RlPolicy *policy, RlState state, int64_t t)
{
	int64_t		into;

	if (isnan(state.prev) || state.prev < 0)
		state.prev = policy->capacity;	/* as sliding_refill */
	if (!(state.prev > 0))
		return state.value;
	if (t <= state.ts)
		into = 0;
	else if (__builtin_sub_overflow(t, state.ts, &into) ||
			 into >= policy->period)
		into = policy->period;
	return state.value - state.prev *
		((double) (policy->period - into) / (double) policy->period);
}

/*
 * What a call could take at now from state left alone: the refilled
 * value, and for a sliding window that less the previous window's
 * weighted count.  The one test of every decision and wait.
 */
double
rl_available(const RlPolicy *policy, int64_t origin, RlState state,
			 int64_t now)
{
	RlState		current = rl_refill(policy, origin, state, now);

	if (policy->kind == RL_SLIDING_WINDOW)
		return sliding_available(policy, current, now);
	return current.value;
}

/*
 * Bring a state forward to now without consuming.  A clock that reads
 * earlier than ts adds nothing and never moves ts backwards.  The new ts
 * is state.ts, now, or the start of now's window when that follows
 * state.ts, so it is a valid time whenever state.ts and now are.
 */
RlState
rl_refill(const RlPolicy *policy, int64_t origin, RlState state, int64_t now)
{
	RlState		out = state;

	if (policy->kind == RL_SLIDING_WINDOW)
		return sliding_refill(policy, origin, state, now);
	/*
	 * A sliding window's count, left by a redefinition, is not kept; an
	 * offence score is, even without escalation (it may be switched on
	 * again).
	 */
	if (!(state.prev < 0))
		out.prev = NAN;
	if (policy->kind == RL_TOKEN_BUCKET)
	{
		if (now > state.ts)
		{
			/*
			 * The exact difference, then rounded: converting each time first
			 * would lose microseconds far from 2000, and the difference of
			 * two valid times can exceed what an int64_t holds.
			 */
			double		elapsed = (double) ((uint64_t) now - (uint64_t) state.ts);

			out.value = state.value + elapsed * policy->rate / policy->period;
			out.ts = now;
		}
	}
	else if (rl_is_calendar(policy))
	{
		/* one rate per window started since ts's, whatever its length */
		int64_t		from = calendar_index(policy, state.ts);
		int64_t		to = calendar_index(policy, now);

		if (to > from)
		{
			out.value = state.value + (double) (to - from) * policy->rate;
			out.ts = calendar_start(policy, to);
		}
	}
	else
	{
		int64_t		from = rl_window_start(state.ts, origin, policy->period);
		int64_t		to = rl_window_start(now, origin, policy->period);

		if (to > from)
		{
			/* exact even where to - from exceeds what an int64_t holds */
			uint64_t	span = (uint64_t) to - (uint64_t) from;
			double		windows = (double) (span / (uint64_t) policy->period);

			out.value = state.value + windows * policy->rate;
			out.ts = to;
		}
	}
	out.value = fmin(out.value, policy->capacity);
	/* the offence score, forgotten up to the new ts */
	if (RL_POLICY_ESCALATES(policy) && out.ts > state.ts)
		out.prev = rl_score_prev(rl_offence_score(policy, state, out.ts));
	return out;
}

/*
 * The offence score of a state at time t (escalation): the one stored in
 * prev as -(1 + score), less one per block_horizon since ts.  Forgetting
 * starts only once t passes ts, so not during a block (whose ts is its
 * end).  0 for no score: NaN, or a sliding window's count.
 */
double
rl_offence_score(const RlPolicy *policy, RlState state, int64_t t)
{
	double		score = state.prev <= -1 ? -state.prev - 1 : 0;

	if (!(score > 0) || !RL_POLICY_ESCALATES(policy))
		return score > 0 ? score : 0;
	if (t > state.ts)
		score -= (double) ((uint64_t) t - (uint64_t) state.ts) /
			(double) policy->block_horizon;
	return score > 0 ? score : 0;
}

/*
 * How long an automatic block of state at now lasts: block_for, times
 * block_factor for every offence the key's score still holds, a part of
 * one (an offence being forgotten) counting whole, at most block_max.
 * block_for without escalation.  Rounded up rather than down: a score
 * starts to decay as soon as a block ends, so a repeated offence within
 * the horizon finds 1 - a little, which must still escalate.
 */
int64_t
rl_escalated_block_for(const RlPolicy *policy, const RlState *state,
					   int64_t now)
{
	double		offences;
	double		duration;

	if (!RL_POLICY_ESCALATES(policy) || state == NULL)
		return policy->block_for;
	offences = ceil(rl_offence_score(policy, *state, now));
	duration = (double) policy->block_for * pow(policy->block_factor, offences);
	if (!(duration < (double) policy->block_max))
		return policy->block_max;
	return (int64_t) duration;
}

/*
 * Whether a stored state is indistinguishable from no state at all, now
 * and at every later time: brought forward to now it is exactly the state
 * a missing row starts from (full, and counted at the same instant).  The
 * refill never decreases and is capped at capacity, so once full a row
 * stays full at every later time; a reservation outstanding (a negative
 * value) or a window not yet over keeps the row.
 */
bool
rl_state_is_idle(const RlPolicy *policy, int64_t origin, RlState state,
				 int64_t now)
{
	RlState		current = rl_refill(policy, origin, state, now);
	RlState		fresh;

	/* where no missing row can start (before RL_MIN_TIME), keep the row */
	if (rl_initial_state(policy, origin, now, &fresh) != RL_DECIDED)
		return false;
	return current.value >= fresh.value && current.ts == fresh.ts &&
		!(RL_KIND_HAS_PREV(policy->kind) && current.prev > 0) &&
		!(RL_POLICY_ESCALATES(policy) &&
		  rl_offence_score(policy, state, now) > 0);
}

/*
 * Whether a stored state is blocked at now: counted from a time after now,
 * or (a window kind) from a window after now's, which only a block leaves
 * (rl_block_state stores a window's block at its last microsecond; a
 * clock that stepped back reads the same, and is as good a reason not to
 * block again).
 */
bool
rl_state_is_blocked(const RlPolicy *policy, int64_t origin, RlState state,
					int64_t now)
{
	if (policy->kind == RL_TOKEN_BUCKET)
		return state.ts > now;
	/* a block ending within now's window is stored at its end (rl_block_state) */
	return state.ts > now ||
		rl_window_of(policy, origin, state.ts) > rl_window_of(policy, origin, now);
}


/*
 * When a stored state, left alone, becomes idle (rl_state_is_idle), at or
 * after now: false when that is not within RL_MAX_WAIT, or not a time the
 * state is then idle at.  The memory store drops an entry from then on.
 */
bool
rl_idle_at(const RlPolicy *policy, int64_t origin, RlState state,
		   int64_t now, int64_t *at)
{
	int64_t		wait;

	if (policy->kind == RL_SLIDING_WINDOW)
	{
		/*
		 * Idle once a window starts after one that counted nothing; the
		 * amount available reaches capacity a little earlier in rounding.
		 */
		int64_t		ws = rl_window_start(state.ts, origin, policy->period);

		if (!rl_valid_time(now) || !rl_valid_time(state.ts))
			return false;
		if (rl_state_is_idle(policy, origin, state, now))
		{
			*at = now;
			return true;
		}
		for (int k = 1; k <= 2; k++)
		{
			int64_t		t;

			if (!rl_add_before_end(ws, k * policy->period, &t))
				return false;
			if (t > now && rl_state_is_idle(policy, origin, state, t))
			{
				*at = t;
				return true;
			}
		}
		return false;
	}
	if (!rl_valid_time(now) || !rl_valid_time(state.ts) ||
		rl_wait_for(policy, origin, state, policy->capacity, now, &wait) !=
		RL_DECIDED ||
		!rl_add_before_end(now, wait, at))
		return false;
	if (RL_POLICY_ESCALATES(policy))
	{
		/* and once the offence score is forgotten, a microsecond late */
		double		score = rl_offence_score(policy, state, state.ts);
		double		forgotten = ceil(score * (double) policy->block_horizon) + 1;
		int64_t		until;

		if (score > 0)
		{
			if (!(forgotten < (double) RL_MAX_WAIT) ||
				!rl_add_before_end(state.ts, (int64_t) forgotten, &until))
				return false;
			if (until > *at)
				*at = until;
		}
	}
	return rl_state_is_idle(policy, origin, state, *at);
}

/*
 * A take of count tokens granted at time granted, made final at now (the
 * memory store, at commit).  Token bucket: the state brought forward to
 * now, less count; taking at now rather than at granted never leaves more
 * tokens, since a refill capped at capacity in between would have absorbed
 * part of the take.  Fixed window: taken in the window it was granted in
 * and brought forward from there, so that what a later window inherits (a
 * capacity above the rate carries tokens over, a reservation carries a
 * deficit) is exact; when the state has already moved past that window (a
 * later commit, a block), taken at now, which never leaves more either
 * (a penalty too may leave a deficit, so the take is never just dropped).
 */
RlState
rl_commit_take(const RlPolicy *policy, int64_t origin, RlState state,
			   int64_t granted, int64_t now, double count)
{
	RlState		out;

	if ((policy->kind == RL_FIXED_WINDOW ||
		 policy->kind == RL_SLIDING_WINDOW) &&
		rl_window_of(policy, origin, granted) >=
		rl_window_of(policy, origin, state.ts))
	{
		out = rl_refill(policy, origin, state, granted);
		out.value -= count;
		return rl_refill(policy, origin, out, now);
	}
	out = rl_refill(policy, origin, state, now);
	out.value -= count;
	return out;
}

/*
 * rl_wait_for for calendar windows: the same search, counted in windows
 * rather than in microseconds, since windows differ in length.  From the
 * window after ts's (ts's holds less than target), the closed form's
 * window, then growing steps until the refill agrees, then a bisection
 * for the first window start at which it does.
 */
static RlStatus
wait_for_calendar(const RlPolicy *policy, RlState state, double target,
				  int64_t now, int64_t *wait)
{
	double		windows = ceil((target - state.value) / policy->rate);
	int64_t		lo = calendar_index(policy, state.ts);
	int64_t		hi;
	int64_t		step = 1;
	int64_t		t;
	int64_t		waited;

	/*
	 * Windows are never much shorter than their unit's period (a 23-hour
	 * day, a February), so twice the periods in RL_MAX_WAIT bounds the
	 * windows it holds; wait_until decides exactly.
	 */
	if (!(windows <= (double) (2 * RL_MAX_WAIT / policy->period) + 2))
		return RL_WAIT_TOO_LONG;
	hi = lo + (int64_t) windows;
	for (;;)
	{
		t = calendar_start(policy, hi);
		if (!rl_valid_time(t))
			return RL_TIME_OUT_OF_RANGE;
		if (rl_refill(policy, 0, state, t).value >= target)
			break;
		if (!wait_until(t, now, &waited))
			return RL_WAIT_TOO_LONG;
		lo = hi;
		hi += step;
		if (step < RL_MAX_WAIT / RL_USECS_PER_DAY)
			step *= 2;
	}
	while (hi - lo > 1)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (rl_refill(policy, 0, state, calendar_start(policy, mid)).value >=
			target)
			hi = mid;
		else
			lo = mid;
	}
	if (!wait_until(calendar_start(policy, hi), now, wait))
		return RL_WAIT_TOO_LONG;
	return RL_DECIDED;
}

/*
 * rl_wait_for for a sliding window: the amount available never decreases
 * while the key is left alone, and is capacity two windows after the
 * state's (capacity - prev once a window passes, then capacity), so a
 * bisection between now and then finds the first microsecond at which
 * rl_available says yes.
 */
static RlStatus
sliding_wait(const RlPolicy *policy, int64_t origin, RlState state,
			 double target, int64_t now, int64_t *wait)
{
	int64_t		lo = now;
	int64_t		hi;

	if (rl_available(policy, origin, state, now) >= target)
	{
		*wait = 0;
		return RL_DECIDED;
	}
	if (!rl_add_before_end(state.ts > now ? state.ts : now, 2 * policy->period,
						&hi))
	{
		hi = RL_END_TIME - 1;
		if (rl_available(policy, origin, state, hi) < target)
			return RL_TIME_OUT_OF_RANGE;
	}
	else if (rl_available(policy, origin, state, hi) < target)
		return RL_WAIT_TOO_LONG;	/* a target above capacity */
	while (hi - lo > 1)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (rl_available(policy, origin, state, mid) >= target)
			hi = mid;
		else
			lo = mid;
	}
	if (!wait_until(hi, now, wait))
		return RL_WAIT_TOO_LONG;
	return RL_DECIDED;
}

/*
 * How long from now until state, left alone, holds at least target tokens
 * (target <= capacity).  RL_WAIT_TOO_LONG when that is past RL_MAX_WAIT,
 * RL_TIME_OUT_OF_RANGE when it is at or past RL_END_TIME.  now and
 * state.ts must be valid times.
 */
RlStatus
rl_wait_for(const RlPolicy *policy, int64_t origin, RlState state,
		 double target, int64_t now, int64_t *wait)
{
	double		missing = target - state.value;
	int64_t		base;
	int64_t		step;
	int64_t		t;
	int64_t		before;
	int64_t		waited;
	int64_t		ahead;
	double		guess;

	if (policy->kind == RL_SLIDING_WINDOW)
		return sliding_wait(policy, origin, state, target, now, wait);
	if (missing <= 0)
	{
		*wait = 0;
		return RL_DECIDED;
	}
	if (rl_is_calendar(policy))
		return wait_for_calendar(policy, state, target, now, wait);
	if (policy->kind == RL_TOKEN_BUCKET)
	{
		base = state.ts;
		step = 1;
		guess = ceil(missing * (double) policy->period / policy->rate);
		if (!(guess <= (double) RL_MAX_WAIT))
			return RL_WAIT_TOO_LONG;
		ahead = (int64_t) guess;
	}
	else
	{
		/* whole windows, in integers: a double past 2^53 rounds */
		double		windows = ceil(missing / policy->rate);

		base = rl_window_start(state.ts, origin, policy->period);
		step = policy->period;
		if (!(windows <= (double) (RL_MAX_WAIT / policy->period) + 1))
			return RL_WAIT_TOO_LONG;
		ahead = (int64_t) windows * policy->period;
	}
	/* past the end, start from the last valid time: it may be enough */
	if (!rl_add_before_end(base, ahead, &t))
		t = RL_END_TIME - 1;

	/*
	 * The closed form can land a rounding error off; let the refill itself
	 * decide.  Step forward until it agrees (growing steps bound the loop
	 * even where a microsecond is below the precision of the arithmetic;
	 * past RL_MAX_WAIT they stop growing, so they cannot overflow), keeping
	 * the last time that did not; then bisect between the two for the
	 * first time that does, in steps (a fixed window's refill changes only
	 * at window starts, base is one, and so is every time tried).  base
	 * itself does not agree: the state holds less than target at its ts,
	 * and no window starts between base and ts.
	 */
	before = base;
	while (rl_refill(policy, origin, state, t).value < target)
	{
		before = t;
		if (!rl_add_before_end(t, step, &t))
			return RL_TIME_OUT_OF_RANGE;
		if (step < RL_MAX_WAIT)
			step *= 2;
		if (!wait_until(t, now, &waited))
			return RL_WAIT_TOO_LONG;
	}
	step = policy->kind == RL_TOKEN_BUCKET ? 1 : policy->period;

	/*
	 * Most often the closed form is exact: when the step before it does
	 * not agree, it is the first that does (the refill only grows with
	 * time), and one refill saves the bisection from base.
	 */
	if (before == base && t - step > base &&
		rl_refill(policy, origin, state, t - step).value < target)
		before = t - step;
	if (before > t - step)
		before = t - step;
	while ((t - before) / step > 1)
	{
		int64_t		mid = before + ((t - before) / step / 2) * step;

		if (rl_refill(policy, origin, state, mid).value >= target)
			t = mid;
		else
			before = mid;
	}
	if (!wait_until(t, now, wait))
		return RL_WAIT_TOO_LONG;
	return RL_DECIDED;
}

/*
 * How long from now until the next window starts.  RL_TIME_OUT_OF_RANGE
 * when that start is at or past RL_END_TIME.
 */
static RlStatus
window_reset(const RlPolicy *policy, int64_t origin, int64_t now,
			 int64_t *reset_after)
{
	int64_t		next;

	if (rl_is_calendar(policy))
	{
		next = calendar_start(policy, calendar_index(policy, now) + 1);
		if (!rl_valid_time(next))
			return RL_TIME_OUT_OF_RANGE;
	}
	else if (!rl_add_before_end(rl_window_start(now, origin, policy->period),
							 policy->period, &next))
		return RL_TIME_OUT_OF_RANGE;
	*reset_after = next - now;
	return RL_DECIDED;
}

/*
 * rl_decide for a sliding window (which never reserves): granted when
 * what rl_available gives covers count; the count is added to the
 * current window.  A refusal's retry_after is the first microsecond at
 * which the same test says yes; reset_after the time until the key,
 * left alone, could take its whole capacity again.
 */
static RlStatus
sliding_decide(const RlPolicy *policy, int64_t origin, const RlState *state,
			   int64_t now, double count, RlDecision *decision)
{
	RlState		current;
	RlState		after;
	RlStatus	status;
	double		available;

	if (state)
		current = rl_refill(policy, origin, *state, now);
	else if ((status = rl_initial_state(policy, origin, now,
										&current)) != RL_DECIDED)
		return status;
	available = sliding_available(policy, current, now);
	after = current;
	after.value -= count;
	decision->ok = available >= count;
	decision->state = after;
	decision->has_retry = !decision->ok;
	decision->retry_after = 0;
	if (decision->ok)
		decision->remaining = available - count;
	else
	{
		decision->remaining = available;
		status = rl_wait_for(policy, origin, state ? *state : current, count,
						  now, &decision->retry_after);
		if (status != RL_DECIDED)
			return status;
	}
	return rl_wait_for(policy, origin, decision->ok ? after : current,
					policy->capacity, now, &decision->reset_after);
}

/*
 * The tokens a key must hold for a call of count to be granted: count,
 * less the depth reservations may go to.  Under max_debt, a positive
 * balance (the least double above zero) from which count goes no deeper
 * than -max_debt.  rl_decide's test and the target of its wait alike.
 */
static inline double
admission_need(const RlPolicy *policy, double count, bool reserve)
{
	if (policy->has_max_debt)
		return fmax(count - policy->max_debt, nextafter(0.0, 1.0));
	return count - (reserve ? rl_reserve_depth(policy) : 0);
}

/*
 * Decide a call of count tokens at time now against state (NULL for a key
 * with no stored state).  The policy and count must have passed
 * rl_policy_problem and rl_count_problem.
 */
RlStatus
rl_decide(const RlPolicy *policy, int64_t origin, const RlState *state,
		  int64_t now, double count, bool reserve, RlDecision *decision)
{
	RlState		current;
	RlState		after;
	RlStatus	status;
	double		need;

	if (!rl_valid_time(now) || (state && !rl_valid_time(state->ts)))
		return RL_TIME_OUT_OF_RANGE;
	if (policy->kind == RL_SLIDING_WINDOW)
		return sliding_decide(policy, origin, state, now, count, decision);
	if (state)
		current = rl_refill(policy, origin, *state, now);
	else if ((status = rl_initial_state(policy, origin, now,
										&current)) != RL_DECIDED)
		return status;
	after.value = current.value - count;
	after.ts = current.ts;
	after.prev = current.prev;

	/*
	 * Granted when the tokens now cover what the call needs: the very
	 * comparison rl_wait_for makes, so that a refusal's retry_after is the
	 * first time this decides yes, whatever rounds.
	 */
	need = admission_need(policy, count, reserve);
	decision->ok = current.value >= need;

	/* a debt is no reservation (act at once); its bound holds exactly */
	if (decision->ok && policy->has_max_debt)
		after.value = fmax(after.value, -policy->max_debt);
	decision->state = after;
	decision->has_retry = after.value < 0 &&
		!(decision->ok && policy->has_max_debt);
	decision->retry_after = 0;
	if (decision->ok)
	{
		decision->remaining = after.value;
		/* a reservation: run the work once the deficit is paid back */
		if (decision->has_retry)
		{
			status = rl_wait_for(policy, origin, after, 0, now,
							  &decision->retry_after);
			if (status != RL_DECIDED)
				return status;
		}
	}
	else
	{
		/*
		 * Nothing is written, so a retry refills from the stored state:
		 * measure the wait from there, not from the rounded current value.
		 */
		decision->remaining = current.value;
		status = rl_wait_for(policy, origin, state ? *state : current,
						  need, now, &decision->retry_after);
		if (status != RL_DECIDED)
			return status;
	}

	if (policy->kind == RL_TOKEN_BUCKET)
		return rl_wait_for(policy, origin, decision->ok ? after : current,
						policy->capacity, now, &decision->reset_after);
	return window_reset(policy, origin, now, &decision->reset_after);
}

/* The tokens a set of shards holds at time t, left alone. */
static double
sum_at(const RlPolicy *policy, int64_t origin, const RlState *states,
	   int n, int64_t t)
{
	double		sum = 0;

	for (int i = 0; i < n; i++)
		sum += rl_refill(policy, origin, states[i], t).value;
	return sum;
}

/*
 * The first microsecond from now at which the shards, left alone, hold at
 * least target tokens together: a binary search, since the refill never
 * decreases.  RL_WAIT_TOO_LONG when not within RL_MAX_WAIT;
 * RL_TIME_OUT_OF_RANGE when not before RL_END_TIME, which comes first.
 */
static RlStatus
wait_for_sum(const RlPolicy *policy, int64_t origin, const RlState *states,
			 int n, double target, int64_t now, int64_t *wait)
{
	int64_t		lo = now;
	int64_t		hi;
	bool		cut = !rl_add_before_end(now, RL_MAX_WAIT, &hi);

	if (sum_at(policy, origin, states, n, lo) >= target)
	{
		*wait = 0;
		return RL_DECIDED;
	}
	if (cut)
		hi = RL_END_TIME - 1;
	if (sum_at(policy, origin, states, n, hi) < target)
		return cut ? RL_TIME_OUT_OF_RANGE : RL_WAIT_TOO_LONG;
	while (hi - lo > 1)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (sum_at(policy, origin, states, n, mid) >= target)
			hi = mid;
		else
			lo = mid;
	}
	*wait = hi - now;
	return RL_DECIDED;
}

/* The smaller of two waits, where either may be unachievable. */
static void
take_shorter(RlStatus status, int64_t wait, bool *found, int64_t *best)
{
	if (status == RL_DECIDED && (!*found || wait < *best))
	{
		*best = wait;
		*found = true;
	}
}

/*
 * Decide a call on a sharded limit over the shards it holds (one, or two
 * of those picked at random), with the per-shard policy.  The fuller shard serves
 * the call when it can alone; otherwise both do, left balanced; a denial
 * reports the shortest wait after which one shard, or both together, could
 * serve it.  states[i] is NULL for a shard with no stored state.
 */
RlStatus
rl_decide_shards(const RlPolicy *policy, int64_t origin, int nshards,
				 const RlState *const *states, int64_t now, double count,
				 bool reserve, RlShardDecision *d)
{
	RlState		cur[2];
	double		floor_value;
	double		total;
	int			best;
	RlStatus	status;

	memset(d, 0, sizeof(*d));
	if (!rl_valid_time(now))
		return RL_TIME_OUT_OF_RANGE;
	for (int i = 0; i < nshards; i++)
		if (states[i] && !rl_valid_time(states[i]->ts))
			return RL_TIME_OUT_OF_RANGE;
	if (nshards == 1)
	{
		RlDecision	one;

		status = rl_decide(policy, origin, states[0], now, count, reserve, &one);
		d->ok = one.ok;
		d->has_retry = one.has_retry;
		d->retry_after = one.retry_after;
		d->remaining = one.remaining;
		d->reset_after = one.reset_after;
		d->write[0] = one.ok;
		d->state[0] = one.state;
		return status;
	}

	for (int i = 0; i < 2; i++)
	{
		if (states[i])
			cur[i] = rl_refill(policy, origin, *states[i], now);
		else if ((status = rl_initial_state(policy, origin, now,
											&cur[i])) != RL_DECIDED)
			return status;
	}
	best = cur[0].value >= cur[1].value ? 0 : 1;
	total = cur[0].value + cur[1].value - count;
	floor_value = reserve ? -rl_reserve_depth(policy) : 0;

	if (cur[best].value - count >= 0)
	{
		d->ok = true;
		d->write[best] = true;
		d->state[best] = cur[best];
		d->state[best].value -= count;
		d->state[1 - best] = cur[1 - best];
	}
	else if (cur[0].value + cur[1].value >= count + 2 * floor_value)
	{
		/* both shards serve it, and are left holding the same */
		d->ok = true;
		for (int i = 0; i < 2; i++)
		{
			d->write[i] = true;
			d->state[i] = cur[i];
			d->state[i].value = total / 2;
		}
	}

	if (d->ok)
	{
		d->remaining = d->state[0].value + d->state[1].value;
		d->has_retry = d->remaining < 0;
		if (d->has_retry)
		{
			/* a balanced reservation: both shards pay it back together */
			status = wait_for_sum(policy, origin, d->state, 2, 0, now,
								  &d->retry_after);
			if (status != RL_DECIDED)
				return status;
		}
	}
	else
	{
		bool		found = false;
		int64_t		wait = 0;
		RlState		stored[2];

		for (int i = 0; i < 2; i++)
			stored[i] = states[i] ? *states[i] : cur[i];
		d->remaining = cur[0].value + cur[1].value;
		d->has_retry = true;
		if (count + floor_value <= policy->capacity)
		{
			for (int i = 0; i < 2; i++)
			{
				status = wait_for_sum(policy, origin, &stored[i], 1,
									  count + floor_value, now, &wait);
				take_shorter(status, wait, &found, &d->retry_after);
			}
		}
		status = wait_for_sum(policy, origin, stored, 2,
							  count + 2 * floor_value, now, &wait);
		take_shorter(status, wait, &found, &d->retry_after);
		/* every search failed for the same reason: they share now */
		if (!found)
			return status;
	}

	if (policy->kind == RL_TOKEN_BUCKET)
		return wait_for_sum(policy, origin, d->ok ? d->state : cur, 2,
							2 * policy->capacity, now, &d->reset_after);
	return window_reset(policy, origin, now, &d->reset_after);
}

/*
 * What a partial call decides on (rl_limit's partial): count, or what the
 * shards it holds let a call take now when that is less, in whole tokens
 * when count is whole.  When that is nothing, min(count, 1): a call the
 * state refuses, whose retry_after is the time until one token (or the
 * whole count, when less) is there.  Never a reservation, never a debt
 * (rl_decide_held decides it without max_debt): rl_decide grants exactly
 * what it takes, by the same comparison.
 * states[i] is NULL for a shard with no stored state (full).
 */
double
rl_partial_count(const RlPolicy *policy, int64_t origin, int nshards,
				 const RlState *const *states, int64_t now, double count)
{
	double		available = 0;
	double		take;

	if (!rl_valid_time(now))
		return count;			/* rl_decide says why */
	for (int i = 0; i < nshards; i++)
	{
		if (states[i] == NULL)
			available += policy->capacity;
		else if (!rl_valid_time(states[i]->ts))
			return count;
		else
			available += rl_available(policy, origin, *states[i], now);
	}
	take = fmin(count, available);
	if (count == floor(count))
		take = floor(take);
	return take > 0 ? take : fmin(count, 1);
}

/* A retry delay spread over [0, period), from a uniform draw in [0, 1). */
int64_t
rl_jitter(int64_t period, double unit_random)
{
	int64_t		jitter = (int64_t) (unit_random * (double) period);

	return jitter < period ? jitter : period - 1;
}
