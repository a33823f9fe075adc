/*-------------------------------------------------------------------------
 *
 * algebra.h
 *	  The rate-limit algebra: two stored numbers (value, ts), a policy and
 *	  the time in, a decision and the next state out.
 *
 * Nothing here includes a PostgreSQL header or reads a clock: every
 * function is pure, so test/unit can check it against hand-made vectors.
 * Times are PostgreSQL's TimestampTz (microseconds from 2000-01-01 UTC);
 * durations are microseconds too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_ALGEBRA_H
#define RATELIMIT_ALGEBRA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Bounds documented in docs/reference.md (Arguments); each keeps the integer
 * time math exact.
 */
#define RL_USECS_PER_SEC	INT64_C(1000000)
#define RL_USECS_PER_DAY	(INT64_C(86400) * RL_USECS_PER_SEC)
#define RL_MAX_PERIOD		(INT64_C(36525) * RL_USECS_PER_DAY) /* 100 years */
#define RL_MAX_WAIT			(INT64_C(365250) * RL_USECS_PER_DAY)	/* 1000 years */
#define RL_MAX_AMOUNT		1e15	/* rate, capacity, max_reserved, count */
/* how long a key without max_reserved may take to refill from its deepest */
#define RL_RESERVE_HORIZON	(RL_MAX_WAIT / 2)
#define RL_MAX_SHARDS		1024
#define RL_MAX_PERMITS		1000	/* concurrency limits: permits per key */

/*
 * The times a timestamptz can hold, [RL_MIN_TIME, RL_END_TIME): PostgreSQL's
 * MIN_TIMESTAMP (4714-11-24 00:00 BC UTC) and END_TIMESTAMP (294277-01-01
 * 00:00 UTC), copied since this file includes no PostgreSQL header (limit.c
 * asserts at compile time that they agree).  A decision that would store a
 * time outside them, or needs a window start, retry or reset past the end,
 * is RL_TIME_OUT_OF_RANGE rather than an answer.
 */
#define RL_MIN_TIME			INT64_C(-211813488000000000)
#define RL_END_TIME			INT64_C(9223371331200000000)
/* No time at all, below every valid one (rl_window_end). */
#define RL_NO_TIME			INT64_MIN

typedef enum RlKind
{
	RL_TOKEN_BUCKET,
	RL_FIXED_WINDOW,
	RL_CONCURRENCY,				/* permits held until the transaction ends */
	RL_CONCURRENCY_LEASE,		/* permits held by a lease until released or
								 * expired */
	RL_SLIDING_WINDOW			/* at most rate in any period, estimated from
								 * two windows' counts */
} RlKind;

/* Concurrency kinds keep their permit count in capacity, and no rate. */
#define RL_KIND_IS_CONCURRENCY(kind) \
	((kind) == RL_CONCURRENCY || (kind) == RL_CONCURRENCY_LEASE)

/*
 * Where a limit's state lives (see limit.c): a row of rate_limits, or an
 * entry of the memory store.  The algebra never reads it.
 */
typedef enum RlStore
{
	RL_STORE_TABLE,
	RL_STORE_MEMORY
} RlStore;

/*
 * Calendar windows: a fixed window whose windows are the days, ISO weeks
 * (from Monday), months or years of a time zone, each starting at local
 * midnight, so of variable length.  The windows are numbered; the
 * algebra asks window_index for the number of the window that holds a
 * time, and window_start for the first microsecond of a window (a time
 * before RL_MIN_TIME, or at or past RL_END_TIME, when outside the range).
 * Both come from limit.c's side (calendar.c, with the tz database); the
 * algebra never knows the zone, it only calls them, so it stays pure and
 * test/unit supplies calendars of its own.  Consecutive windows never
 * overlap: start(index(t)) <= t < start(index(t) + 1).
 */
typedef enum RlCalendarUnit
{
	RL_CALENDAR_NONE,			/* windows of period from an origin */
	RL_CALENDAR_DAY,
	RL_CALENDAR_WEEK,
	RL_CALENDAR_MONTH,
	RL_CALENDAR_YEAR
} RlCalendarUnit;

typedef struct RlCalendar
{
	RlCalendarUnit unit;
	const void *zone;			/* the time zone, for the two functions */
	int64_t		(*window_index) (const struct RlCalendar *calendar,
								 int64_t t);
	int64_t		(*window_start) (const struct RlCalendar *calendar,
								 int64_t index);
} RlCalendar;

typedef struct RlPolicy
{
	RlKind		kind;
	double		rate;			/* tokens added per period */
	int64_t		period;			/* microseconds */
	double		capacity;		/* most tokens ever held */
	bool		has_max_reserved;	/* false: reservations are unbounded */
	double		max_reserved;	/* deepest the value may go below zero */
	int			shards;
	bool		has_start;		/* false: window phase comes from a hash */
	int64_t		start;			/* a window start (fixed and sliding window) */
	RlStore		store;			/* where its state lives */
	/* unit RL_CALENDAR_NONE but for a fixed window with a time zone */
	RlCalendar	calendar;
	/* options of a defined limit (rl_define), never of an inline config */
	bool		shadow;			/* grant what it would refuse, and count it */
	int64_t		block_for;		/* block a refused key this long; 0: never */
	bool		overrides;		/* some keys have a policy of their own */
	/* escalation of block_for (token bucket and fixed window only) */
	double		block_factor;	/* each offence multiplies; 0: no escalation */
	int64_t		block_max;		/* longest escalated block */
	int64_t		block_horizon;	/* one offence is forgotten per horizon */
	/* address keys: a network counted as one key (0: none), lists */
	int			ipv4_prefix;
	int			ipv6_prefix;
	bool		access_lists;	/* rl_access has entries for the name */
	/* debt (token bucket and fixed window, unsharded, without reserve) */
	bool		has_max_debt;	/* admit on a positive balance */
	double		max_debt;		/* deepest a call or a charge may go */
} RlPolicy;

/* True when a policy escalates its automatic blocks (block_factor). */
#define RL_POLICY_ESCALATES(policy) \
	((policy)->block_factor >= 1 && !RL_KIND_HAS_PREV((policy)->kind) && \
	 (policy)->block_horizon > 0)

/*
 * The numbers stored per (name, key, shard).  prev is the sliding
 * window's third number, the count of the window before ts's.  A token
 * bucket or fixed window keeps its offence score there (escalation), as
 * -(1 + score), so always <= -1 and never a count; NaN (stored as NULL)
 * for no offence.
 */
typedef struct RlState
{
	double		value;
	int64_t		ts;
	double		prev;
} RlState;

/* True for a kind whose state has a third number (prev). */
#define RL_KIND_HAS_PREV(kind) ((kind) == RL_SLIDING_WINDOW)

typedef enum RlStatus
{
	RL_DECIDED,					/* the answer's fields are valid */
	RL_WAIT_TOO_LONG,			/* an answer would exceed RL_MAX_WAIT */
	RL_TIME_OUT_OF_RANGE		/* a time given or needed is outside
								 * [RL_MIN_TIME, RL_END_TIME) */
} RlStatus;

typedef struct RlDecision
{
	bool		ok;				/* granted (the state must be written) */
	bool		has_retry;		/* retry_after is meaningful */
	int64_t		retry_after;	/* when to retry, or to run reserved work */
	double		remaining;		/* tokens left after this call */
	int64_t		reset_after;	/* until full (bucket) / next window */
	RlState		state;			/* the state to store when ok */
} RlDecision;

/* A call on a sharded limit, decided over the one or two shards it holds. */
typedef struct RlShardDecision
{
	bool		ok;
	bool		has_retry;
	int64_t		retry_after;
	double		remaining;		/* over the shards the call holds */
	int64_t		reset_after;
	bool		write[2];		/* which shards to store */
	RlState		state[2];
	/* what a defined limit's options did (limit.c sets them, not this file) */
	bool		shadowed;		/* refused, granted by shadow mode */
	bool		blocked;		/* refused, and the key blocked for it */
	double		granted;		/* what a grant takes (store.c sets it) */
} RlShardDecision;

extern const char *rl_kind_name(RlKind kind);
extern bool rl_kind_parse(const char *name, RlKind *kind);

extern int64_t rl_calendar_period(RlCalendarUnit unit);
extern RlCalendarUnit rl_calendar_unit_of_period(int64_t period);
extern const char *rl_policy_problem(const RlPolicy *policy);
extern double rl_reserve_depth(const RlPolicy *policy);
extern const char *rl_count_problem(const RlPolicy *policy, double count,
									bool reserve);
extern RlPolicy rl_policy_shard(const RlPolicy *policy);

extern int64_t rl_window_origin(const RlPolicy *policy, const char *name,
								size_t name_len, const char *key,
								size_t key_len, bool key_is_null);
extern int64_t rl_window_start(int64_t t, int64_t origin, int64_t period);
extern int64_t rl_window_end(const RlPolicy *policy, int64_t origin,
							 int64_t t);
extern int64_t rl_window_length(const RlPolicy *policy, int64_t origin,
								int64_t t);

extern RlStatus rl_initial_state(const RlPolicy *policy, int64_t origin,
								 int64_t now, RlState *state);
extern RlState rl_refill(const RlPolicy *policy, int64_t origin,
						 RlState state, int64_t now);
extern double rl_available(const RlPolicy *policy, int64_t origin,
						   RlState state, int64_t now);
extern bool rl_state_is_blocked(const RlPolicy *policy, int64_t origin,
								RlState state, int64_t now);
extern bool rl_state_is_idle(const RlPolicy *policy, int64_t origin,
							 RlState state, int64_t now);
extern bool rl_idle_at(const RlPolicy *policy, int64_t origin, RlState state,
					   int64_t now, int64_t *at);
extern RlState rl_commit_take(const RlPolicy *policy, int64_t origin,
							  RlState state, int64_t granted, int64_t now,
							  double count);
extern RlStatus rl_decide(const RlPolicy *policy, int64_t origin,
						  const RlState *state, int64_t now, double count,
						  bool reserve, RlDecision *decision);
extern RlStatus rl_decide_shards(const RlPolicy *shard_policy, int64_t origin,
								 int nshards, const RlState *const *states,
								 int64_t now, double count, bool reserve,
								 RlShardDecision *decision);
extern double rl_partial_count(const RlPolicy *policy, int64_t origin,
							   int nshards, const RlState *const *states,
							   int64_t now, double count);
extern int64_t rl_jitter(int64_t period, double unit_random);

extern RlStatus rl_refund_state(const RlPolicy *policy, int64_t origin,
								const RlState *state, int64_t now,
								double count, RlState *out);
extern RlStatus rl_charge_state(const RlPolicy *policy, int64_t origin,
								const RlState *state, int64_t now,
								double count, RlState *out, double *charged);
extern RlStatus rl_penalize_state(const RlPolicy *policy, int64_t origin,
								  const RlState *state, int64_t now,
								  double count, RlState *out);
extern RlStatus rl_move_state(const RlPolicy *policy, int64_t origin,
							  const RlState *state, int64_t now, double held,
							  RlState *out);
extern double rl_offence_score(const RlPolicy *policy, RlState state,
							   int64_t t);
extern int64_t rl_escalated_block_for(const RlPolicy *policy,
									  const RlState *state, int64_t now);
extern RlStatus rl_block_state(const RlPolicy *policy, int64_t origin,
							   const RlState *state, int64_t now,
							   int64_t duration, RlState *out);
extern double rl_refund_spread(double capacity, int n, double *values,
							   double count);
extern void rl_take_spread(int n, double *values, double count);

/* Time a key's refills paid for: until a time, at a rate per microsecond. */
typedef struct RlCovered
{
	int64_t		until;
	double		per_us;
} RlCovered;

#define RL_MAX_COVERED 3

extern int	rl_cover_steps(const RlCovered *spans, int n, int64_t after,
						   RlCovered *steps);
extern double rl_cover_payment(const RlCovered *steps, int n, int64_t end,
							   double per_us);
extern int	rl_cover_compress(RlCovered *steps, int n);

#endif							/* RATELIMIT_ALGEBRA_H */
