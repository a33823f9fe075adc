/*-------------------------------------------------------------------------
 *
 * algebra_internal.h
 *	  What the arithmetic of a call (algebra.c) shares with the arithmetic
 *	  of a change outside a call (adjust.c), and nothing else includes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_ALGEBRA_INTERNAL_H
#define RATELIMIT_ALGEBRA_INTERNAL_H

#include "algebra.h"

/* True for a fixed window of calendar windows. */
static inline bool
rl_is_calendar(const RlPolicy *policy)
{
	return policy->calendar.unit != RL_CALENDAR_NONE;
}

extern bool rl_valid_time(int64_t t);
extern bool rl_add_before_end(int64_t t, int64_t d, int64_t *sum);
extern int64_t rl_window_of(const RlPolicy *policy, int64_t origin, int64_t t);
extern double rl_score_prev(double score);
extern RlStatus rl_wait_for(const RlPolicy *policy, int64_t origin,
							RlState state, double target, int64_t now,
							int64_t *wait);

#endif
