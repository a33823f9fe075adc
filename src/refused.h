/*-------------------------------------------------------------------------
 *
 * refused.h
 *	  Who is refused: the keys refused and blocked most per limit name
 *	  over a recent period (refused.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_REFUSED_H
#define RATELIMIT_REFUSED_H

#include "postgres.h"

extern void rl_refused_init(void);
extern bool rl_refused_attach(void);
extern void rl_refused_record(text *name, text *key, bool key_is_null,
							  int refusals, int blocks);
extern void rl_refused_reset(text *name);

#endif							/* RATELIMIT_REFUSED_H */
