/*-------------------------------------------------------------------------
 *
 * calendar.h
 *	  Calendar windows in a time zone, for the algebra's RlCalendar.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_CALENDAR_H
#define RATELIMIT_CALENDAR_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "algebra.h"

extern const char *rl_calendar_zone_canonical(const char *zone);
extern void rl_calendar_init(RlCalendar *calendar, RlCalendarUnit unit,
							 const char *zone);
extern const char *rl_calendar_zone_name(const RlCalendar *calendar);
extern const char *rl_calendar_zone_class(const RlCalendar *calendar);
extern Interval *rl_calendar_interval(RlCalendarUnit unit);

#endif							/* RATELIMIT_CALENDAR_H */
