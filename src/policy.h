/*-------------------------------------------------------------------------
 *
 * policy.h
 *	  A policy as SQL sees it: the nine columns of type rl_policy, which
 *	  are also the columns of rl_definitions after name and the arguments
 *	  of rl_define after name.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_POLICY_H
#define RATELIMIT_POLICY_H

#include "postgres.h"

#include "access/htup.h"
#include "utils/timestamp.h"

#include "algebra.h"

/* Column positions of type rl_policy (and of rl_definitions after name). */
#define RL_POLICY_KIND			0
#define RL_POLICY_RATE			1
#define RL_POLICY_PERIOD		2
#define RL_POLICY_CAPACITY		3
#define RL_POLICY_MAX_RESERVED	4
#define RL_POLICY_SHARDS		5
#define RL_POLICY_START			6
#define RL_POLICY_STORAGE		7
#define RL_POLICY_TIME_ZONE		8
#define RL_POLICY_NATTS			9

/*
 * rl_definitions has eight more columns after those: options of a defined
 * limit that no inline config carries (they change what a call does, not
 * the state it keeps).  In the table, time_zone comes after block_horizon,
 * and max_debt last (columns added after these); every query lists the
 * columns in this order.
 */
#define RL_DEFINITION_SHADOW	9
#define RL_DEFINITION_BLOCK_FOR	10
#define RL_DEFINITION_BLOCK_FACTOR	11
#define RL_DEFINITION_BLOCK_MAX	12
#define RL_DEFINITION_BLOCK_HORIZON	13
#define RL_DEFINITION_IPV4_PREFIX	14
#define RL_DEFINITION_IPV6_PREFIX	15
#define RL_DEFINITION_MAX_DEBT	16
#define RL_DEFINITION_NATTS		17

extern void rl_policy_from_values(Datum *values, bool *nulls,
								  RlPolicy *policy);
extern void rl_policy_fill_defaults(Datum *values, bool *nulls);
extern void rl_definition_options_from_values(Datum *values, bool *nulls,
											 RlPolicy *policy);
extern void rl_policy_from_composite(HeapTupleHeader tuple, RlPolicy *policy);
extern Interval *rl_usecs_to_interval(int64 usecs);
extern double rl_interval_usecs(const Interval *span);
extern int64 rl_period_usecs(const Interval *span);

#endif							/* RATELIMIT_POLICY_H */
