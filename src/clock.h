/*-------------------------------------------------------------------------
 *
 * clock.h
 *	  The one place the extension reads the time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_CLOCK_H
#define RATELIMIT_CLOCK_H

#include "postgres.h"

#include "datatype/timestamp.h"

extern void rl_clock_init(void);
extern TimestampTz rl_clock_now(void);

#endif							/* RATELIMIT_CLOCK_H */
