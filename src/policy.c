/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  Turning SQL values into a checked RlPolicy, with errors worded for
 *	  the user who typed them.
 *
 * Whatever the source (rl_define's arguments, a row of rl_definitions, an
 * inline rl_policy value a caller built with ROW(...)), it passes through
 * rl_policy_from_values, so no unchecked policy ever reaches the algebra.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "calendar.h"
#include "policy.h"

/* Days per month and year, as extract(epoch from interval) counts them. */
#define RL_DAYS_PER_MONTH	30.0
#define RL_DAYS_PER_YEAR	365.25

static const char *const policy_column_names[RL_POLICY_NATTS] = {
	"kind", "rate", "period", "capacity", "max_reserved", "shards", "start",
	"storage", "time_zone"
};

/*
 * An interval's length in microseconds, as extract(epoch from ...) counts
 * it: whole years of 365.25 days, other months of 30 days, days of 24
 * hours.  A double, so huge intervals cannot wrap.
 */
double
rl_interval_usecs(const Interval *span)
{
	return (double) span->time +
		(double) span->day * USECS_PER_DAY +
		(double) (span->month / MONTHS_PER_YEAR) * RL_DAYS_PER_YEAR * USECS_PER_DAY +
		(double) (span->month % MONTHS_PER_YEAR) * RL_DAYS_PER_MONTH * USECS_PER_DAY;
}

/*
 * A period in microseconds, as a policy keeps it: 0 when it is not more
 * than zero or is past RL_MAX_PERIOD, which rl_policy_problem reports.
 */
int64
rl_period_usecs(const Interval *span)
{
	double		period = rl_interval_usecs(span);

	return (period > 0 && period <= (double) RL_MAX_PERIOD) ? (int64) period : 0;
}

/* A duration in microseconds as an interval of hours, minutes, seconds. */
Interval *
rl_usecs_to_interval(int64 usecs)
{
	Interval   *span = palloc0(sizeof(Interval));

	span->time = usecs;
	return span;
}

/* Raise the error for a required policy column that is NULL. */
static void
require_column(bool *nulls, int column)
{
	if (nulls[column])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", policy_column_names[column])));
}

/*
 * Replace a NULL capacity with the rate, its default, so a stored or
 * returned policy says what it enforces, and spell a time zone as the tz
 * database does (a zone it does not know is left for
 * rl_policy_from_values to refuse).
 */
void
rl_policy_fill_defaults(Datum *values, bool *nulls)
{
	if (!nulls[RL_POLICY_TIME_ZONE])
	{
		char	   *given = TextDatumGetCString(values[RL_POLICY_TIME_ZONE]);
		const char *zone = rl_calendar_zone_canonical(given);

		if (zone)
			values[RL_POLICY_TIME_ZONE] = CStringGetTextDatum(zone);
	}
	if (nulls[RL_POLICY_STORAGE])
	{
		values[RL_POLICY_STORAGE] = CStringGetTextDatum("table");
		nulls[RL_POLICY_STORAGE] = false;
	}
	if (nulls[RL_POLICY_CAPACITY] && !nulls[RL_POLICY_RATE])
	{
		values[RL_POLICY_CAPACITY] = values[RL_POLICY_RATE];
		nulls[RL_POLICY_CAPACITY] = false;
	}
}

/*
 * The storage column: 'table' (also for NULL, a row written before the
 * column existed) or 'memory'.
 */
static RlStore
store_from_values(Datum *values, bool *nulls)
{
	char	   *storage;

	if (nulls[RL_POLICY_STORAGE])
		return RL_STORE_TABLE;
	storage = TextDatumGetCString(values[RL_POLICY_STORAGE]);
	if (strcmp(storage, "table") == 0)
		return RL_STORE_TABLE;
	if (strcmp(storage, "memory") == 0)
		return RL_STORE_MEMORY;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid rate limit storage \"%s\"", storage),
			 errhint("The storage is \"table\" or \"memory\".")));
	return RL_STORE_TABLE;		/* keep the compiler quiet */
}

/*
 * A concurrency limit's columns (a row of rl_definitions, or an inline
 * rl_policy): the permits in capacity, and no rate, period, max_reserved
 * or start.
 */
static void
concurrency_from_values(Datum *values, bool *nulls, RlPolicy *policy)
{
	const char *problem;

	require_column(nulls, RL_POLICY_CAPACITY);
	if (!nulls[RL_POLICY_RATE] || !nulls[RL_POLICY_PERIOD] ||
		!nulls[RL_POLICY_START] || !nulls[RL_POLICY_TIME_ZONE] ||
		(!nulls[RL_POLICY_SHARDS] && DatumGetInt32(values[RL_POLICY_SHARDS]) != 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a concurrency limit has only a number of permits"),
				 errhint("Define it with rl_define_concurrency().")));
	policy->rate = 0;
	policy->period = 0;
	policy->capacity = DatumGetFloat8(values[RL_POLICY_CAPACITY]);
	/*
	 * max_reserved, for transaction-scoped permits only: the highest
	 * number of permits the limit has had since it was defined, when above
	 * the current one (holders from before may still sit in those slots).
	 */
	policy->has_max_reserved = !nulls[RL_POLICY_MAX_RESERVED];
	policy->max_reserved = policy->has_max_reserved ?
		DatumGetFloat8(values[RL_POLICY_MAX_RESERVED]) : 0;
	policy->shards = 1;
	policy->has_start = false;
	policy->start = 0;
	policy->store = RL_STORE_TABLE;
	memset(&policy->calendar, 0, sizeof(policy->calendar));
	if (store_from_values(values, nulls) != RL_STORE_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a concurrency limit cannot use the memory store"),
				 errdetail("Its permits are row locks and rows of rl_leases.")));
	problem = rl_policy_problem(policy);
	if (problem)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem)));
}

/*
 * The calendar unit a period names: '1 day', '1 week' (or '7 days'),
 * '1 month' or '1 year' exactly; RL_CALENDAR_NONE for any other ('24
 * hours' and '30 days' included: a calendar unit is not a length).
 */
static RlCalendarUnit
calendar_unit(const Interval *span)
{
	if (span->time != 0)
		return RL_CALENDAR_NONE;
	if (span->month == 0 && span->day == 1)
		return RL_CALENDAR_DAY;
	if (span->month == 0 && span->day == 7)
		return RL_CALENDAR_WEEK;
	if (span->month == 1 && span->day == 0)
		return RL_CALENDAR_MONTH;
	if (span->month == MONTHS_PER_YEAR && span->day == 0)
		return RL_CALENDAR_YEAR;
	return RL_CALENDAR_NONE;
}

/*
 * The time_zone column: a fixed window of calendar windows (see
 * calendar.c), whose period must name one calendar unit.
 */
static void
calendar_from_values(Datum *values, bool *nulls, RlPolicy *policy)
{
	Interval   *span = DatumGetIntervalP(values[RL_POLICY_PERIOD]);
	RlCalendarUnit unit;

	memset(&policy->calendar, 0, sizeof(policy->calendar));
	if (nulls[RL_POLICY_TIME_ZONE])
		return;
	if (policy->kind != RL_FIXED_WINDOW)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time_zone applies only to fixed window limits")));
	unit = calendar_unit(span);
	if (unit == RL_CALENDAR_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("with a time_zone, period must be 1 day, 1 week, 1 month or 1 year"),
				 errdetail("The period is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   values[RL_POLICY_PERIOD])))));
	rl_calendar_init(&policy->calendar, unit,
					 TextDatumGetCString(values[RL_POLICY_TIME_ZONE]));
}

/*
 * Check the nine policy columns and convert them; any problem is an
 * ERROR naming the column.  Defaults must already be filled in.
 */
void
rl_policy_from_values(Datum *values, bool *nulls, RlPolicy *policy)
{
	char	   *kind;
	const char *problem;

	policy->shadow = false;
	policy->block_for = 0;
	policy->overrides = false;
	policy->block_factor = 0;
	policy->block_max = 0;
	policy->block_horizon = 0;
	policy->ipv4_prefix = 0;
	policy->ipv6_prefix = 0;
	policy->access_lists = false;
	policy->has_max_debt = false;
	policy->max_debt = 0;
	require_column(nulls, RL_POLICY_KIND);
	kind = TextDatumGetCString(values[RL_POLICY_KIND]);
	/*
	 * A whole rl_policy in the kind: PL/pgSQL's SELECT rl_fixed_window(...)
	 * INTO p spreads the value over p's fields, the first taking all of it.
	 */
	if (!rl_kind_parse(kind, &policy->kind) && kind[0] == '(')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid rate limit kind \"%s\"", kind),
				 errdetail("The kind holds a whole rl_policy value."),
				 errhint("In PL/pgSQL, assign a policy with p := rl_fixed_window(...), or SELECT (rl_fixed_window(...)).* INTO p.")));
	if (!rl_kind_parse(kind, &policy->kind))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid rate limit kind \"%s\"", kind),
				 errhint("The kind is \"token bucket\", \"fixed window\" or \"sliding window\".")));
	if (RL_KIND_IS_CONCURRENCY(policy->kind))
	{
		concurrency_from_values(values, nulls, policy);
		return;
	}
	require_column(nulls, RL_POLICY_RATE);
	require_column(nulls, RL_POLICY_PERIOD);
	require_column(nulls, RL_POLICY_CAPACITY);
	require_column(nulls, RL_POLICY_SHARDS);

	policy->rate = DatumGetFloat8(values[RL_POLICY_RATE]);
	policy->period = rl_period_usecs(DatumGetIntervalP(values[RL_POLICY_PERIOD]));
	policy->capacity = DatumGetFloat8(values[RL_POLICY_CAPACITY]);
	policy->has_max_reserved = !nulls[RL_POLICY_MAX_RESERVED];
	policy->max_reserved = policy->has_max_reserved ?
		DatumGetFloat8(values[RL_POLICY_MAX_RESERVED]) : 0;
	policy->shards = DatumGetInt32(values[RL_POLICY_SHARDS]);
	policy->has_start = !nulls[RL_POLICY_START];
	policy->start = 0;
	if (policy->has_start)
	{
		TimestampTz start = DatumGetTimestampTz(values[RL_POLICY_START]);

		if (TIMESTAMP_NOT_FINITE(start))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("start must be a finite timestamp")));
		policy->start = start;
	}
	policy->store = store_from_values(values, nulls);
	calendar_from_values(values, nulls, policy);
	if (policy->store == RL_STORE_MEMORY && policy->shards != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a memory limit cannot have shards"),
				 errdetail("Shards spread row locks; the memory store takes no row lock, and a hot key needs none.")));

	problem = rl_policy_problem(policy);
	if (problem)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem)));
}

/* An interval option of a definition in microseconds, 1 us to 100 years. */
static int64
option_interval(Datum value, const char *name)
{
	double		usecs = rl_interval_usecs(DatumGetIntervalP(value));

	if (!(usecs >= 1 && usecs <= (double) RL_MAX_PERIOD))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 1 microsecond and 100 years", name)));
	return (int64) usecs;
}

/*
 * Escalation of automatic blocks: block_factor (NULL: none), block_max
 * (NULL: 100 years) and block_horizon (NULL: 1 day), kept in the state's
 * third number, so not for a kind that has one of its own.
 */
static void
escalation_from_values(Datum *values, bool *nulls, RlPolicy *policy)
{
	policy->block_factor = 0;
	policy->block_max = RL_MAX_PERIOD;
	policy->block_horizon = RL_USECS_PER_DAY;
	if (nulls[RL_DEFINITION_BLOCK_FACTOR])
	{
		if (!nulls[RL_DEFINITION_BLOCK_MAX] ||
			!nulls[RL_DEFINITION_BLOCK_HORIZON])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("block_max and block_horizon need block_factor")));
		return;
	}
	policy->block_factor = DatumGetFloat8(values[RL_DEFINITION_BLOCK_FACTOR]);
	if (!(policy->block_factor >= 1 && isfinite(policy->block_factor)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block_factor must be a finite number of at least 1")));
	if (policy->block_for <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block_factor needs block_for"),
				 errhint("block_for is the first block, which block_factor multiplies for repeated offences.")));
	if (RL_KIND_HAS_PREV(policy->kind))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a sliding window limit cannot have block_factor"),
				 errdetail("Its state has no room for an offence score: the third number holds the previous window's count.")));
	if (!nulls[RL_DEFINITION_BLOCK_MAX])
		policy->block_max = option_interval(values[RL_DEFINITION_BLOCK_MAX],
											"block_max");
	if (policy->block_max < policy->block_for)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block_max must not be shorter than block_for")));
	if (!nulls[RL_DEFINITION_BLOCK_HORIZON])
		policy->block_horizon =
			option_interval(values[RL_DEFINITION_BLOCK_HORIZON], "block_horizon");
}

/*
 * max_debt (NULL: none): a call is admitted on a positive balance and may
 * take the key down to -max_debt.  Checked with the policy it changes.
 */
static void
debt_from_values(Datum *values, bool *nulls, RlPolicy *policy)
{
	const char *problem;

	policy->has_max_debt = !nulls[RL_DEFINITION_MAX_DEBT];
	policy->max_debt = policy->has_max_debt ?
		DatumGetFloat8(values[RL_DEFINITION_MAX_DEBT]) : 0;
	if (policy->has_max_debt && (problem = rl_policy_problem(policy)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem)));
}

/*
 * ipv4_prefix or ipv6_prefix (NULL: 0, none), 1 to maxbits: an address key
 * counts as its network of that length (access.c).
 */
static int
prefix_option(Datum *values, bool *nulls, int column, const char *name,
			  int maxbits)
{
	int			bits;

	if (nulls[column])
		return 0;
	bits = DatumGetInt32(values[column]);
	if (bits < 1 || bits > maxbits)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 1 and %d", name, maxbits)));
	return bits;
}

/*
 * The options of a defined limit, columns RL_DEFINITION_SHADOW to
 * RL_DEFINITION_MAX_DEBT of values (NULL: the default, off), into a
 * policy rl_policy_from_values has filled.  A concurrency limit has
 * none: it refuses nothing a block or a shadow could apply to.
 */
void
rl_definition_options_from_values(Datum *values, bool *nulls,
								  RlPolicy *policy)
{
	policy->shadow = !nulls[RL_DEFINITION_SHADOW] &&
		DatumGetBool(values[RL_DEFINITION_SHADOW]);
	policy->block_for = 0;
	if (!nulls[RL_DEFINITION_BLOCK_FOR])
		policy->block_for = option_interval(values[RL_DEFINITION_BLOCK_FOR],
											"block_for");
	if (policy->block_for > 0 && policy->shards > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a sharded limit cannot have block_for"),
				 errdetail("Shards serve one hot key, such as a global limit; blocking it would block every caller."),
				 errhint("Block the keys of a limit without shards, or call rl_block().")));
	if (RL_KIND_IS_CONCURRENCY(policy->kind) &&
		(policy->shadow || policy->block_for > 0 ||
		 !nulls[RL_DEFINITION_BLOCK_FACTOR]))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a concurrency limit has no shadow mode and no block_for")));
	escalation_from_values(values, nulls, policy);
	policy->ipv4_prefix = prefix_option(values, nulls,
										RL_DEFINITION_IPV4_PREFIX,
										"ipv4_prefix", 32);
	policy->ipv6_prefix = prefix_option(values, nulls,
										RL_DEFINITION_IPV6_PREFIX,
										"ipv6_prefix", 128);
	debt_from_values(values, nulls, policy);
}

/* Check and convert an inline policy, a value of type rl_policy. */
void
rl_policy_from_composite(HeapTupleHeader tuple, RlPolicy *policy)
{
	Oid			typid = HeapTupleHeaderGetTypeId(tuple);
	int32		typmod = HeapTupleHeaderGetTypMod(tuple);
	TupleDesc	desc = lookup_rowtype_tupdesc(typid, typmod);
	HeapTupleData tmp;
	Datum		values[RL_POLICY_NATTS];
	bool		nulls[RL_POLICY_NATTS];

	/*
	 * 1.0 to 1.2 have no storage and time_zone columns: such a policy
	 * keeps a table, and windows of a period
	 */
	if (desc->natts != RL_POLICY_NATTS && desc->natts != RL_POLICY_STORAGE)
		elog(ERROR, "rl_policy has %d columns, expected %d",
			 desc->natts, RL_POLICY_NATTS);
	nulls[RL_POLICY_STORAGE] = true;
	nulls[RL_POLICY_TIME_ZONE] = true;
	tmp.t_len = HeapTupleHeaderGetDatumLength(tuple);
	ItemPointerSetInvalid(&tmp.t_self);
	tmp.t_tableOid = InvalidOid;
	tmp.t_data = tuple;
	heap_deform_tuple(&tmp, desc, values, nulls);
	ReleaseTupleDesc(desc);

	rl_policy_fill_defaults(values, nulls);
	rl_policy_from_values(values, nulls, policy);
}
