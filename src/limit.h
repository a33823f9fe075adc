/*-------------------------------------------------------------------------
 *
 * limit.h
 *	  Deciding calls on one limit or several (limit.c): what the SQL
 *	  functions, the trigger and waiting call.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_LIMIT_H
#define RATELIMIT_LIMIT_H

#include "postgres.h"

#include "access/htup.h"

#include "algebra.h"
#include "names.h"
#include "store.h"
#include "target.h"

/*
 * The most limits one rl_limit_all call may name.  Each holds a row lock
 * (a sharded one up to two) until the transaction ends, so a call far
 * larger would hold locks by the thousand and run unchecked for long.
 */
#define RL_MAX_LIMITS_PER_CALL	1000

extern void rl_consume(RlTarget *target, double count, bool reserve,
					   bool blocks, RlAnswer *answer);
extern void rl_check_call(RlTarget *target, double count, bool reserve,
						  bool blocks, RlAnswer *answer);
extern void rl_consume_try(RlTarget *target, double count, bool reserve,
						   RlAnswer *answer);
extern bool rl_wait_can_grant(const RlTarget *target, double count,
							  bool reserve);
extern bool rl_may_hold(const RlTarget *target);
extern bool rl_target_listed(RlTarget *target);
extern void rl_peek(const RlTarget *target, double count, bool reserve,
					RlAnswer *answer);
extern RlState rl_current(const RlTarget *target);
extern bool rl_row_is_idle(const RlTarget *target, RlState state);
extern bool rl_row_now(const RlTarget *target, RlState stored,
					   RlState *current, int64 *reset_after, bool *idle);
extern RlState rl_adjust(RlTarget *target, RlAdjustment kind, double amount,
						 int64 duration);
extern RlState rl_settle_key(RlTarget *target, double estimated,
							 double actual, double *unsettled);
extern void rl_reset_key(RlTarget *target, HeapTupleHeader config);
extern int	rl_consume_all(RlTarget *targets, double *counts, int n,
						   bool reserve, bool blocks, RlAnswer *answers);

#endif							/* RATELIMIT_LIMIT_H */
