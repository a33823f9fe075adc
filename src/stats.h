/*-------------------------------------------------------------------------
 *
 * stats.h
 *	  Per-limit statistics: what the consuming calls on each name did.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_STATS_H
#define RATELIMIT_STATS_H

#include "postgres.h"

#include "datatype/timestamp.h"

/*
 * The counters of one limit, in the order rl_stats_rows returns them.
 * COUNT is a number of events (an int8 column), SUM a running total and
 * MAX the largest value seen (float8 columns).
 *
 * Adding a counter is one line here: its struct field, reset, dump file,
 * accumulation and output follow from this list.  Then set it where the
 * event happens (call->values[RL_STAT_name] += 1), add its OUT column to
 * rl_stats_rows and the view rl_stats in the next version's scripts, in
 * the same position, and document it.  A dump file written by a build
 * with a different list is ignored at startup (its header records the
 * number of counters), so the counters then start from zero.
 */
#define RL_STATS_COUNTERS(X) \
	X(calls, COUNT) \
	X(granted, COUNT) \
	X(refused, COUNT) \
	X(errors, COUNT) \
	X(tokens, SUM) \
	X(reservations, COUNT) \
	X(deepest_reservation, MAX) \
	X(lock_waits, COUNT) \
	X(lock_wait_time, SUM) \
	X(both_shards_busy, COUNT) \
	X(shadow_refused, COUNT) \
	X(blocks, COUNT) \
	X(check_refused, COUNT)

/*
 * The counters 1.2's rl_stats_rows returns, before last_refusal and
 * stats_reset; those added later follow stats_reset, so the library still
 * fills the rows of a schema at 1.2.
 */
#define RL_STATS_V12_COUNTERS	RL_STAT_shadow_refused

typedef enum RlStatId
{
#define RL_STAT_ENUM(name, kind) RL_STAT_##name,
	RL_STATS_COUNTERS(RL_STAT_ENUM)
#undef RL_STAT_ENUM
	RL_STAT_COUNT
} RlStatId;

/*
 * What one call did to one limit, gathered while it runs and added to the
 * shared counters at its end.  Every value is a double: a count stays
 * exact up to 2^53.
 */
typedef struct RlStatsCall
{
	double		values[RL_STAT_COUNT];
	bool		refused;		/* sets last_refusal */
} RlStatsCall;

/* How a counted call ended. */
typedef enum RlStatsOutcome
{
	RL_STATS_GRANTED,
	RL_STATS_REFUSED,
	RL_STATS_ERROR,
	RL_STATS_CHECKED			/* an rl_check: not a call; only what its
								 * values hold counts (check_refused,
								 * blocks) */
} RlStatsOutcome;

extern void rl_stats_init(void);
extern bool rl_stats_tracking(void);
extern void rl_stats_notice_unavailable(void);

extern void rl_stats_attribute(RlStatsCall *call);
extern void rl_stats_lock_wait_start(void);
extern void rl_stats_lock_wait_end(void);
extern void rl_stats_lock_wait_cancel(void);
extern void rl_stats_both_shards_busy(void);
extern void rl_stats_shadow_refused(void);
extern void rl_stats_record(text *name, RlStatsCall *call,
							RlStatsOutcome outcome, TimestampTz now);

#endif							/* RATELIMIT_STATS_H */
