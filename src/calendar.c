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
#include "utils/memutils.h"
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
 * The zones of the tz database, as pg_timezone_names lists them (the
 * files of the time zone directory), sorted by name, each with a
 * fingerprint of its UTC offsets; built once per backend.  A name
 * pg_tzset accepts only as a POSIX TZ string ("UTC0", "<A>0") is not
 * among them.
 */
typedef struct RlZone
{
	char	   *name;
	uint64		print;
	const char *class;			/* rl_calendar_zone_class's, once known */
} RlZone;

static RlZone *zones;
static int	nzones;

/* Zones compare equal up to here: 2200-01-01, past every rule change. */
#define ZONE_HORIZON	INT64CONST(7258118400)
/* and from here, the start of timestamptz's range (4714 BC) */
#define ZONE_ORIGIN		INT64CONST(-210866803200)

/* A cheap summary of a zone's offsets: equal zones have equal prints. */
static uint64
zone_print(const pg_tz *tz)
{
	uint64		print = 0;

	/* mid-January and mid-July, every fourth year from 1850 to 2098 */
	for (pg_time_t t = INT64CONST(-3786825600) + 14 * 86400;
		 t < INT64CONST(4102444800); t += INT64CONST(126230400))
	{
		for (int half = 0; half < 2; half++)
		{
			pg_time_t	at = t + half * 181 * 86400;
			struct pg_tm *tm = pg_localtime(&at, tz);

			print = print * 1000003 + (uint64) (tm ? tm->tm_gmtoff : 1);
		}
	}
	return print;
}

/* Whether two zones have the same UTC offset at every instant. */
static bool
zones_agree(const pg_tz *a, const pg_tz *b)
{
	pg_time_t	t = ZONE_ORIGIN;

	while (t < ZONE_HORIZON)
	{
		long int	before_a,
					before_b,
					after;
		int			dst;
		pg_time_t	next_a,
					next_b;
		int			has_a = pg_next_dst_boundary(&t, &before_a, &dst, &next_a,
												 &after, &dst, a);
		int			has_b = pg_next_dst_boundary(&t, &before_b, &dst, &next_b,
												 &after, &dst, b);

		if (has_a < 0 || has_b < 0 || before_a != before_b)
			return false;
		if (has_a == 0 && has_b == 0)
			return true;
		/* on to the next instant where either may change */
		t = has_a == 0 ? next_b : has_b == 0 ? next_a :
			Min(next_a, next_b);
	}
	return true;
}

static int
zone_cmp(const void *a, const void *b)
{
	return strcmp(((const RlZone *) a)->name, ((const RlZone *) b)->name);
}

/* Read the zones of the tz database, once. */
static void
load_zones(void)
{
	MemoryContext old;
	pg_tzenum  *dir;
	pg_tz	   *tz;
	int			room = 1024;
	RlZone	   *list;
	int			n = 0;

	if (zones != NULL)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	list = palloc(room * sizeof(RlZone));
	dir = pg_tzenumerate_start();
	while ((tz = pg_tzenumerate_next(dir)) != NULL)
	{
		if (n == room)
		{
			room *= 2;
			list = repalloc(list, room * sizeof(RlZone));
		}
		list[n].name = pstrdup(pg_get_timezone_name(tz));
		list[n].print = zone_print(tz);
		list[n].class = NULL;
		n++;
	}
	pg_tzenumerate_end(dir);
	MemoryContextSwitchTo(old);
	qsort(list, n, sizeof(RlZone), zone_cmp);
	nzones = n;
	zones = list;
}

/* The entry of a tz database name, exactly as the database spells it. */
static RlZone *
find_zone(const char *name)
{
	RlZone		probe;

	load_zones();
	probe.name = (char *) name;
	return bsearch(&probe, zones, nzones, sizeof(RlZone), zone_cmp);
}

/*
 * A time zone name as the tz database spells it ("america/new_york" is
 * "America/New_York"); NULL for a name it does not know, and for a POSIX
 * TZ string, which pg_tzset accepts but names no zone of the database.
 */
const char *
rl_calendar_zone_canonical(const char *zone)
{
	pg_tz	   *tz;
	const char *name;

	if (strlen(zone) >= TZ_STRLEN_MAX)
		return NULL;
	tz = pg_tzset(zone);
	if (tz == NULL)
		return NULL;
	name = pg_get_timezone_name(tz);
	return find_zone(name) ? name : NULL;
}

/*
 * How much a name is preferred as the name of its class, lowest first: a
 * name in a continent's area of the tz database, then in an ocean's, then
 * in Antarctica's, then any other ("US/Eastern", "Arctic/Longyearbyen").
 * Oceans and Antarctica come after the continents since their names are
 * often links to a continent's zone ("Atlantic/Jan_Mayen" to
 * "Europe/Berlin", "Antarctica/McMurdo" to "Pacific/Auckland").
 */
static int
zone_rank(const char *name)
{
	static const char *const areas[] = {
		"Africa/", "America/", "Asia/", "Australia/", "Europe/",
		"Atlantic/", "Indian/", "Pacific/", "Antarctica/"
	};

	for (int i = 0; i < lengthof(areas); i++)
		if (strncmp(name, areas[i], strlen(areas[i])) == 0)
			return i < 5 ? 0 : i < 8 ? 1 : 2;
	return 3;
}

/* Whether name a is preferred to name b as the name of their class. */
static bool
zone_preferred(const char *a, const char *b)
{
	int			rank_a = zone_rank(a);
	int			rank_b = zone_rank(b);

	return rank_a != rank_b ? rank_a < rank_b : strcmp(a, b) < 0;
}

/*
 * The one name of every zone that has the same UTC offsets as the
 * calendar's at every instant, for the name an inline config's state is
 * stored under: windows are local midnights, so the offsets are all that
 * tells two zones apart.  Links ("Zulu", "US/Eastern") and zones that
 * only differ in abbreviations ("Etc/GMT", "Etc/UTC") are one zone: its
 * name is "UTC" for a zone always at UTC, else the preferred
 * (zone_preferred) of the tz database names that agree (up to 2200, past
 * every rule change): "Europe/Berlin", "America/New_York".  Kept per
 * zone for the session.
 */
const char *
rl_calendar_zone_class(const RlCalendar *calendar)
{
	const pg_tz *tz = (const pg_tz *) calendar->zone;
	const char *name = pg_get_timezone_name((pg_tz *) tz);
	RlZone	   *self = find_zone(name);
	const char *class;
	long int	offset;

	if (pg_get_timezone_offset(tz, &offset) && offset == 0)
		return "UTC";
	if (self == NULL)
		return name;
	if (self->class != NULL)
		return self->class;
	class = self->name;
	for (RlZone *z = zones; z < zones + nzones; z++)
	{
		if (z != self && z->print == self->print &&
			zone_preferred(z->name, class))
		{
			pg_tz	   *other = pg_tzset(z->name);

			if (other != NULL && zones_agree(other, tz))
				class = z->name;
		}
	}
	self->class = class;
	return class;
}

/*
 * Set up the calendar of unit in the named time zone; 22023 for a zone
 * the tz database does not know.
 */
void
rl_calendar_init(RlCalendar *calendar, RlCalendarUnit unit, const char *zone)
{
	pg_tz	   *tz = rl_calendar_zone_canonical(zone) ? pg_tzset(zone) : NULL;

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
