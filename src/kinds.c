/*-------------------------------------------------------------------------
 *
 * kinds.c
 *	  The kinds of limit and the calendar units by their SQL names and
 *	  periods: what the algebra, the policies and the stored names of
 *	  inline configs agree on.
 *
 * Pure, like algebra.c: no PostgreSQL header, unit-tested with it.
 *
 *-------------------------------------------------------------------------
 */
#include "algebra.h"

#include <string.h>

/* The SQL name of a kind, as stored in the definitions table. */
const char *
rl_kind_name(RlKind kind)
{
	switch (kind)
	{
		case RL_TOKEN_BUCKET:
			return "token bucket";
		case RL_FIXED_WINDOW:
			return "fixed window";
		case RL_CONCURRENCY:
			return "concurrency";
		case RL_CONCURRENCY_LEASE:
			return "concurrency lease";
		case RL_SLIDING_WINDOW:
			return "sliding window";
	}
	return "unknown";
}

/* Parse a kind's SQL name; false when it names no kind. */
bool
rl_kind_parse(const char *name, RlKind *kind)
{
	if (strcmp(name, "token bucket") == 0)
		*kind = RL_TOKEN_BUCKET;
	else if (strcmp(name, "fixed window") == 0)
		*kind = RL_FIXED_WINDOW;
	else if (strcmp(name, "concurrency") == 0)
		*kind = RL_CONCURRENCY;
	else if (strcmp(name, "concurrency lease") == 0)
		*kind = RL_CONCURRENCY_LEASE;
	else if (strcmp(name, "sliding window") == 0)
		*kind = RL_SLIDING_WINDOW;
	else
		return false;
	return true;
}

/*
 * The period a calendar unit counts as where a length is needed (bounds,
 * jitter): as extract(epoch from interval) counts '1 day', '1 week',
 * '1 month' (30 days) and '1 year' (365.25 days).  0 for no unit.
 */
int64_t
rl_calendar_period(RlCalendarUnit unit)
{
	switch (unit)
	{
		case RL_CALENDAR_NONE:
			break;
		case RL_CALENDAR_DAY:
			return RL_USECS_PER_DAY;
		case RL_CALENDAR_WEEK:
			return 7 * RL_USECS_PER_DAY;
		case RL_CALENDAR_MONTH:
			return 30 * RL_USECS_PER_DAY;
		case RL_CALENDAR_YEAR:
			return 36525 * RL_USECS_PER_DAY / 100;
	}
	return 0;
}

/* The calendar unit whose period is period; RL_CALENDAR_NONE for none. */
RlCalendarUnit
rl_calendar_unit_of_period(int64_t period)
{
	for (RlCalendarUnit u = RL_CALENDAR_DAY; u <= RL_CALENDAR_YEAR; u++)
		if (rl_calendar_period(u) == period)
			return u;
	return RL_CALENDAR_NONE;
}
