/*-------------------------------------------------------------------------
 *
 * limit.h
 *	  Deciding calls on one limit or several: which rows a call holds, the
 *	  decision, and what it writes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_LIMIT_H
#define RATELIMIT_LIMIT_H

#include "postgres.h"

#include "access/htup.h"

#include "algebra.h"
#include "names.h"

/*
 * The most limits one rl_limit_all call may name.  Each holds a row lock
 * (a sharded one up to two) until the transaction ends, so a call far
 * larger would hold locks by the thousand and run unchecked for long.
 */
#define RL_MAX_LIMITS_PER_CALL	1000

/* The limit a call addresses, in stored form. */
typedef struct RlTarget
{
	text	   *name;			/* the name its rows are stored under */
	text	   *label;			/* the name the caller gave: messages,
								 * statistics, HTTP fields, window phase */
	text	   *key;			/* '' for the NULL key */
	bool		key_is_null;
	RlPolicy	policy;			/* the whole limit's policy */
	bool		defined;		/* policy from rl_definitions, not a config */
	int64		origin;			/* a window start (fixed window) */
	uint64		memory_epoch;	/* rl_memory_epoch before the policy was read */
} RlTarget;

/* What rl_adjust does to a key. */
typedef enum RlAdjustment
{
	RL_ADJUST_REFUND,
	RL_ADJUST_PENALIZE,
	RL_ADJUST_BLOCK
} RlAdjustment;

/* What a call answers, whether the limit is sharded or not. */
typedef RlShardDecision RlAnswer;

extern void rl_target_init(RlTarget *target, text *name, text *key);
extern void rl_target_resolve(RlTarget *target, HeapTupleHeader config);
extern bool rl_key_policy(text *name, text *key, RlPolicy *policy);
extern void rl_target_require_rate(const RlTarget *target);
extern void rl_target_for_row(RlTarget *target, text *name, text *key,
							  const RlPolicy *policy);
extern void rl_target_recheck(RlTarget *target, double count, bool reserve);
extern void rl_target_check_count(const RlTarget *target, double count,
								  bool reserve);

extern void rl_consume(RlTarget *target, double count, bool reserve,
					   RlAnswer *answer);
extern void rl_consume_try(RlTarget *target, double count, bool reserve,
						   RlAnswer *answer);
extern bool rl_wait_can_grant(const RlTarget *target, double count,
							  bool reserve);
extern void rl_peek(const RlTarget *target, double count, bool reserve,
					RlAnswer *answer);
extern RlState rl_current(const RlTarget *target);
extern bool rl_row_is_idle(const RlTarget *target, RlState state);
extern bool rl_row_now(const RlTarget *target, RlState stored,
					   RlState *current, int64 *reset_after, bool *idle);
extern RlState rl_adjust(RlTarget *target, RlAdjustment kind, double amount,
						 int64 duration);
extern bool rl_forget_memory(RlTarget *target, HeapTupleHeader config);
extern int	rl_consume_all(RlTarget *targets, double *counts, int n,
						   bool reserve, RlAnswer *answers);

#endif							/* RATELIMIT_LIMIT_H */
