/*-------------------------------------------------------------------------
 *
 * wait.h
 *	  rl_limit(..., wait => interval): sleeping, with no row lock held,
 *	  until a refused call would be granted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_WAIT_H
#define RATELIMIT_WAIT_H

#include "limit.h"

extern void rl_consume_waiting(RlTarget *target, double count, bool reserve,
							   int64 wait, bool blocks, RlAnswer *answer);

#endif							/* RATELIMIT_WAIT_H */
