/*-------------------------------------------------------------------------
 *
 * names.c
 *	  The stored name of a limit used with an inline config: the name, a
 *	  separator no name contains, and the policy in its canonical form;
 *	  and reading the policy back from such a name.
 *
 * Below every store and the decision: it knows the algebra and calendars,
 * nothing of rows, memory entries or calls.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/int.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "calendar.h"
#include "names.h"

/* One number of an inline policy's stored name: exact, and -0 as 0. */
static void
append_amount(StringInfo buf, double x)
{
	appendStringInfo(buf, "/%.17g", x + 0.0);
}

/* The odd part of x (not 0), and in *twos the power of two it had. */
static uint64
odd_part(uint64 x, int *twos)
{
	*twos = 0;
	while ((x & 1) == 0)
	{
		x >>= 1;
		(*twos)++;
	}
	return x;
}

static uint64
gcd_u64(uint64 a, uint64 b)
{
	while (b != 0)
	{
		uint64		r = a % b;

		a = b;
		b = r;
	}
	return a;
}

/*
 * A token bucket whose rate is odd * 2^exponent (odd odd) as its rate per
 * unit, when a double holds rate * unit / period exactly and the policy so
 * written is valid; false, changing nothing, otherwise.  Exact integer
 * arithmetic: the fraction odd * unit / period is reduced, and is exact
 * when its denominator is a power of two and its odd numerator has at most
 * 53 bits (and the power of two is in range).
 */
static bool
rate_per_unit(RlPolicy *p, uint64 odd, int exponent, int64 unit)
{
	uint64		g = gcd_u64((uint64) unit, (uint64) p->period);
	uint64		numerator = (uint64) unit / g;
	uint64		denominator = (uint64) p->period / g;
	uint64		factor = gcd_u64(odd, denominator);
	uint64		n;
	int			numerator_twos;
	int			denominator_twos;
	RlPolicy	friendly = *p;

	denominator = odd_part(denominator / factor, &denominator_twos);
	if (denominator != 1)
		return false;
	numerator = odd_part(numerator, &numerator_twos);
	if (pg_mul_u64_overflow(odd / factor, numerator, &n) ||
		n > (UINT64CONST(1) << 53))
		return false;
	exponent += numerator_twos - denominator_twos;
	friendly.rate = ldexp((double) n, exponent);
	friendly.period = unit;
	if (!(friendly.rate > 0) || isinf(friendly.rate) ||
		ldexp(friendly.rate, -exponent) != (double) n ||
		rl_policy_problem(&friendly) != NULL)
		return false;
	*p = friendly;
	return true;
}

/*
 * A token bucket's rate and period in one form for each ratio rate /
 * period, the only thing its arithmetic reads, and a form people read
 * (rl_status shows it): the rate per second, minute, hour or day, the
 * first of these that a double holds exactly (1 per second, 60 per minute
 * and 3600 per hour are 1 per second; 100 per hour and 200 per 2 hours
 * are 100 per hour).  Whether rate * unit / period is exact depends on the
 * ratio only, so every spelling of a ratio takes the same unit.  A ratio
 * exact per none of them (1 per 7 seconds) is written as its reduced
 * fraction: the period divided by its largest divisor d for which rate / d
 * is exact (a power of two, times an odd factor that divides rate's odd
 * mantissa), unique too (0.015625 per 109375 microseconds).  Left alone
 * where the reduced rate would not be exact (far below 1e-300).
 */
static void
canonical_rate(RlPolicy *p)
{
	static const int64 units[] = {USECS_PER_SEC, USECS_PER_MINUTE,
	USECS_PER_HOUR, USECS_PER_DAY};
	int			exponent;
	uint64		m;
	uint64		odd;
	int			twos;
	uint64		a;
	double		rate;

	if (!(p->rate > 0) || isinf(p->rate) || p->period <= 0)
		return;
	m = (uint64) ldexp(frexp(p->rate, &exponent), 53);
	m = odd_part(m, &twos);
	exponent += twos - 53;
	for (int i = 0; i < lengthof(units); i++)
		if (rate_per_unit(p, m, exponent, units[i]))
			return;
	odd = odd_part((uint64) p->period, &twos);
	a = gcd_u64(m, odd);
	rate = ldexp((double) (m / a), exponent - twos);
	if (!(rate > 0) || ldexp(rate, twos) * (double) a != p->rate)
		return;
	p->rate = rate;
	p->period = (int64) (odd / a);
}

/*
 * The canonical form of a policy, for its stored name: what the algebra
 * cannot tell apart is written one way.  A start is its phase in the
 * period (rl_window_origin reads nothing else), and a token bucket's rate
 * and period are canonical_rate's; a calendar's zone is named by its class
 * (rl_calendar_zone_class), where inline_row_name writes it.
 */
static void
canonical_policy(RlPolicy *p)
{
	if (p->has_start)
		p->start = rl_window_origin(p, NULL, 0, NULL, 0, true);
	if (p->kind == RL_TOKEN_BUCKET)
		canonical_rate(p);
}

/*
 * The name the state of a limit used with an inline config is stored
 * under: the name, RL_INLINE_SEPARATOR, and every field of the policy,
 * exactly.  So each inline policy of a name has a state of its own, and no
 * caller can change how another caller's inline limit counts by calling
 * its name with another policy (a generous one to refill it, a huge
 * reservation to sink it).  Names never contain the separator, so two
 * (name, policy) pairs never share a stored name; rl_inline_row reads
 * the policy back.  The policy is written in its canonical form
 * (canonical_policy), so one policy spelled two ways has one state.
 */
text *
rl_inline_row_name(text *name, const RlPolicy *given)
{
	StringInfoData buf;
	RlPolicy	canonical = *given;
	const RlPolicy *p = &canonical;

	canonical_policy(&canonical);
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	appendStringInfoChar(&buf, RL_INLINE_SEPARATOR);
	appendStringInfoChar(&buf, p->kind == RL_FIXED_WINDOW ? 'f' :
						 p->kind == RL_SLIDING_WINDOW ? 's' : 't');
	append_amount(&buf, p->rate);
	appendStringInfo(&buf, "/" INT64_FORMAT, p->period);
	append_amount(&buf, p->capacity);
	if (p->has_max_reserved)
		append_amount(&buf, p->max_reserved);
	else
		appendStringInfoString(&buf, "/-");
	appendStringInfo(&buf, "/%d", p->shards);
	if (p->has_start)
		appendStringInfo(&buf, "/" INT64_FORMAT, p->start);
	else
		appendStringInfoString(&buf, "/-");
	/* last, since a zone's name has slashes; the period names the unit */
	if (p->calendar.unit != RL_CALENDAR_NONE)
		appendStringInfo(&buf, "/%s", rl_calendar_zone_class(&p->calendar));
	return cstring_to_text_with_len(buf.data, buf.len);
}

/* A field of a stored name as a number written by append_amount. */
static bool
parse_amount(const char *field, double *x)
{
	char	   *parsed;

	errno = 0;
	*x = strtod(field, &parsed);
	return *field != '\0' && *parsed == '\0' && errno == 0;
}

/* A field of a stored name as an integer. */
static bool
parse_integer(const char *field, int64 *x)
{
	char	   *parsed;

	errno = 0;
	*x = strtoi64(field, &parsed, 10);
	return *field != '\0' && *parsed == '\0' && errno == 0;
}

/*
 * The policy of a stored name that inline_row_name made; false for the
 * name of a defined limit, or anything inline_row_name cannot have made.
 */
bool
rl_inline_row(text *stored, RlPolicy *policy)
{
	const char *start = VARDATA_ANY(stored);
	int			len = VARSIZE_ANY_EXHDR(stored);
	const char *sep = memchr(start, RL_INLINE_SEPARATOR, len);
	char	   *rest;
	char	   *field[8];
	int			n = 0;
	int64		shards;

	if (sep == NULL)
		return false;
	/* kind/rate/period/capacity/max_reserved/shards/start[/time zone] */
	rest = pnstrdup(sep + 1, start + len - sep - 1);
	for (char *f = rest;; n++)
	{
		field[n] = f;
		if (n == 7)
			break;				/* the time zone: the rest, slashes and all */
		f = strchr(f, '/');
		if (f == NULL)
			break;
		*f++ = '\0';
	}
	if (n != 6 && n != 7)
		return false;
	memset(policy, 0, sizeof(*policy));
	if (strcmp(field[0], "t") == 0)
		policy->kind = RL_TOKEN_BUCKET;
	else if (strcmp(field[0], "f") == 0)
		policy->kind = RL_FIXED_WINDOW;
	else if (strcmp(field[0], "s") == 0)
		policy->kind = RL_SLIDING_WINDOW;
	else
		return false;
	policy->has_max_reserved = strcmp(field[4], "-") != 0;
	policy->has_start = strcmp(field[6], "-") != 0;
	if (!parse_amount(field[1], &policy->rate) ||
		!parse_integer(field[2], &policy->period) ||
		!parse_amount(field[3], &policy->capacity) ||
		(policy->has_max_reserved &&
		 !parse_amount(field[4], &policy->max_reserved)) ||
		!parse_integer(field[5], &shards) || shards < 1 ||
		shards > RL_MAX_SHARDS ||
		(policy->has_start && !parse_integer(field[6], &policy->start)))
		return false;
	policy->shards = (int) shards;
	if (n == 7)
	{
		RlCalendarUnit unit = rl_calendar_unit_of_period(policy->period);

		if (unit == RL_CALENDAR_NONE || policy->kind != RL_FIXED_WINDOW ||
			rl_calendar_zone_canonical(field[7]) == NULL)
			return false;
		rl_calendar_init(&policy->calendar, unit, field[7]);
	}
	return rl_policy_problem(policy) == NULL;
}

/*
 * A name of len bytes is neither empty (22023) nor longer than
 * RL_MAX_NAME_BYTES (54000); what names it in the messages ("rate limit
 * name", "plan name").
 */
void
rl_check_name_bytes(int len, const char *what)
{
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what)));
	if (len > RL_MAX_NAME_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is too long", what),
				 errdetail("The name is %d bytes; the limit is %d.",
						   len, RL_MAX_NAME_BYTES)));
}
