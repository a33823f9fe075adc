/*-------------------------------------------------------------------------
 *
 * fields.c
 *	  The numbers of the HTTP RateLimit-Policy, RateLimit and Retry-After
 *	  fields for an answer: amounts rounded down, times up.
 *
 * Free of PostgreSQL, like the algebra, so the unit tests link it alone;
 * http.c writes the fields.
 *
 *-------------------------------------------------------------------------
 */
#include "fields.h"

#include <math.h>

/* A duration in whole units of unit microseconds, rounded up; 0 if none. */
static int64_t
ceil_units(int64_t usecs, int64_t unit)
{
	if (usecs <= 0)
		return 0;
	return usecs / unit + (usecs % unit != 0);
}

/* A duration in whole seconds, rounded up: never earlier than the exact. */
int64_t
rl_ceil_seconds(int64_t usecs)
{
	return ceil_units(usecs, RL_USECS_PER_SEC);
}

/* The same in whole milliseconds (rl_result's retry_after_ms). */
int64_t
rl_ceil_ms(int64_t usecs)
{
	return ceil_units(usecs, 1000);
}

/* An amount as a structured-field Integer: floor, within [0, max]. */
static int64_t
sf_amount(double x)
{
	if (!(x > 0))
		return 0;
	if (x >= (double) RL_SF_MAX_INTEGER)
		return RL_SF_MAX_INTEGER;
	return (int64_t) floor(x);
}

/*
 * The values of RateLimit-Policy, RateLimit and Retry-After for an answer
 * of rl_limit or rl_check under policy (the whole limit's).  Amounts are
 * rounded down and times up, so a client that follows them never asks
 * early: q is the rate and w the period (rounded up, at least 1), or for
 * a rate below one token per period, q = 1 and w the time one token takes
 * (rounded up); r the
 * whole tokens left (0 while a reservation is outstanding); t, for a
 * granted call, the time until the key is full again (token bucket) or
 * its next window starts (fixed window), and for a denied call the
 * Retry-After, the time until the same call would succeed, so that
 * Retry-After never falls before the end of the effective window.
 */
void
rl_http_fields(const RlPolicy *policy, bool ok, bool has_retry,
			   int64_t retry_after, double remaining, int64_t reset_after,
			   RlHttpFields *fields)
{
	fields->quota = sf_amount(policy->rate);
	fields->window = rl_ceil_seconds(policy->period);
	if (fields->quota == 0)
	{
		/*
		 * Less than one token per period: a quota of 0 would tell a client
		 * it may never send.  Say one token per the time one takes.
		 */
		double		w = ceil((double) policy->period / policy->rate /
							 (double) RL_USECS_PER_SEC);

		fields->quota = 1;
		fields->window = w >= (double) RL_SF_MAX_INTEGER ?
			RL_SF_MAX_INTEGER : (int64_t) w;
	}
	if (fields->window < 1)
		fields->window = 1;
	fields->remaining = sf_amount(remaining);
	fields->has_retry_after = !ok;
	fields->retry_after = !ok && has_retry ? rl_ceil_seconds(retry_after) : 0;
	fields->reset = ok ? rl_ceil_seconds(reset_after) : fields->retry_after;
}
