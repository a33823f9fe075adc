/*-------------------------------------------------------------------------
 *
 * calendar.c
 *	  Calendar windows: the days, ISO weeks, months or years of a time
 *	  zone, each starting at local midnight, for the algebra's RlCalendar.
 *
 * A window is numbered by its local date, counted from 2000-01-01 (day),
 * the Monday 2000-01-03 (week), 2000-01 (month) or 2000 (year); its start
 * is that date's local midnight, converted the way date_trunc(field, t,
 * zone) converts it (timestamptz_trunc_zone): DetermineTimeZoneOffset
 * takes a midnight that a daylight-saving change skips as the instant of
 * the change, and a midnight it repeats as the later instant.  So a day
 * across a change lasts 23 or 25 hours, and a window is always the span
 * from one local midnight of its unit to the next.
 *
 * The window that holds t is the one its local date names, checked
 * against the starts (a zone that moved its clock across midnight could
 * otherwise name a window whose start is after t): windows never overlap
 * and leave no gap, as the algebra requires.  A date a zone skipped
 * entirely (Pacific/Apia's 2011-12-30) is a window of no length.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pgtime.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "calendar.h"

/* The Monday that starts week 0: 2000-01-03, two days after the epoch. */
#define WEEK_ZERO_OFFSET	2

/* Floor division: the quotient rounded toward minus infinity (d > 0). */
static int64
floor_div(int64 a, int64 d)
{
	int64		q = a / d;

	return (a % d != 0 && a < 0) ? q - 1 : q;
}

/* The number of the window that t's local date names. */
static int64
local_index(const RlCalendar *calendar, int64 t)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	int64		day;

	if (timestamp2tm(t, &tz, &tm, &fsec, NULL, (pg_tz *) calendar->zone) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	day = date2j(tm.tm_year, tm.tm_mon, tm.tm_mday) - POSTGRES_EPOCH_JDATE;
	switch (calendar->unit)
	{
		case RL_CALENDAR_DAY:
			return day;
		case RL_CALENDAR_WEEK:
			return floor_div(day - WEEK_ZERO_OFFSET, 7);
		case RL_CALENDAR_MONTH:
			return (int64) (tm.tm_year - 2000) * MONTHS_PER_YEAR + tm.tm_mon - 1;
		case RL_CALENDAR_YEAR:
			return tm.tm_year - 2000;
		case RL_CALENDAR_NONE:
			break;
	}
	elog(ERROR, "not a calendar unit: %d", (int) calendar->unit);
	return 0;					/* keep the compiler quiet */
}

/*
 * The first microsecond of window index: local midnight of its first
 * date.  Outside timestamptz's range, INT64_MIN before it and INT64_MAX
 * after it, which the algebra takes for out of range.
 */
static int64
calendar_window_start(const RlCalendar *calendar, int64 index)
{
	struct pg_tm tm;
	int64		year;
	int			tz;
	Timestamp	start;

	memset(&tm, 0, sizeof(tm));
	/* any window past these lies outside the range, whatever the zone */
	if (index < -INT64CONST(4000000000) || index > INT64CONST(4000000000))
		return index < 0 ? PG_INT64_MIN : PG_INT64_MAX;
	switch (calendar->unit)
	{
		case RL_CALENDAR_DAY:
		case RL_CALENDAR_WEEK:
			{
				int64		j = (calendar->unit == RL_CALENDAR_DAY ? index :
								 index * 7 + WEEK_ZERO_OFFSET) +
				POSTGRES_EPOCH_JDATE;

				if (j < 0 || j > PG_INT32_MAX)
					return index < 0 ? PG_INT64_MIN : PG_INT64_MAX;
				j2date((int) j, &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
				year = tm.tm_year;
				break;
			}
		case RL_CALENDAR_MONTH:
			year = 2000 + floor_div(index, MONTHS_PER_YEAR);
			tm.tm_mon = (int) (index - floor_div(index, MONTHS_PER_YEAR) *
							   MONTHS_PER_YEAR) + 1;
			tm.tm_mday = 1;
			break;
		case RL_CALENDAR_YEAR:
			year = 2000 + index;
			tm.tm_mon = 1;
			tm.tm_mday = 1;
			break;
		default:
			elog(ERROR, "not a calendar unit: %d", (int) calendar->unit);
			return 0;
	}
	if (year < -5000 || year > 300000)
		return index < 0 ? PG_INT64_MIN : PG_INT64_MAX;
	tm.tm_year = (int) year;
	if (!IS_VALID_JULIAN(tm.tm_year, tm.tm_mon, tm.tm_mday))
		return index < 0 ? PG_INT64_MIN : PG_INT64_MAX;
	tz = DetermineTimeZoneOffset(&tm, (pg_tz *) calendar->zone);
	if (tm2timestamp(&tm, 0, &tz, &start) != 0 || !IS_VALID_TIMESTAMP(start))
		return index < 0 ? PG_INT64_MIN : PG_INT64_MAX;
	return start;
}

/*
 * The number of the window that holds t: its local date's, moved to the
 * window whose start is at or before t and whose successor's is after.
 */
static int64
calendar_window_index(const RlCalendar *calendar, int64 t)
{
	int64		index = local_index(calendar, t);

	while (calendar_window_start(calendar, index) > t)
		index--;
	while (calendar_window_start(calendar, index + 1) <= t)
		index++;
	return index;
}

/*
 * A time zone name as the tz database spells it ("america/new_york" is
 * "America/New_York"); NULL for a name it does not know.
 */
const char *
rl_calendar_zone_canonical(const char *zone)
{
	pg_tz	   *tz;

	if (strlen(zone) >= TZ_STRLEN_MAX)
		return NULL;
	tz = pg_tzset(zone);
	return tz ? pg_get_timezone_name(tz) : NULL;
}

/*
 * Set up the calendar of unit in the named time zone; 22023 for a zone
 * the tz database does not know.
 */
void
rl_calendar_init(RlCalendar *calendar, RlCalendarUnit unit, const char *zone)
{
	pg_tz	   *tz = strlen(zone) < TZ_STRLEN_MAX ? pg_tzset(zone) : NULL;

	if (tz == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time zone \"%s\" not recognized", zone),
				 errhint("Name a zone of the tz database, such as \"America/New_York\" or \"UTC\" (see pg_timezone_names).")));
	calendar->unit = unit;
	calendar->zone = tz;
	calendar->window_index = calendar_window_index;
	calendar->window_start = calendar_window_start;
}

/* The time zone's name, as the tz database spells it. */
const char *
rl_calendar_zone_name(const RlCalendar *calendar)
{
	return pg_get_timezone_name((pg_tz *) calendar->zone);
}

/* A calendar unit as the interval that names it ('1 mon', '7 days'). */
Interval *
rl_calendar_interval(RlCalendarUnit unit)
{
	Interval   *span = palloc0(sizeof(Interval));

	switch (unit)
	{
		case RL_CALENDAR_DAY:
			span->day = 1;
			break;
		case RL_CALENDAR_WEEK:
			span->day = 7;
			break;
		case RL_CALENDAR_MONTH:
			span->month = 1;
			break;
		case RL_CALENDAR_YEAR:
			span->month = MONTHS_PER_YEAR;
			break;
		case RL_CALENDAR_NONE:
			elog(ERROR, "not a calendar unit");
	}
	return span;
}
