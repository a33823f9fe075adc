/*-------------------------------------------------------------------------
 *
 * functions.h
 *	  What the files of SQL-callable functions share (functions.c,
 *	  plans.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_FUNCTIONS_H
#define RATELIMIT_FUNCTIONS_H

#include "postgres.h"

#include "fmgr.h"

#include "algebra.h"

extern void rl_require_arg(FunctionCallInfo fcinfo, int argno,
						   const char *argname);
extern RlPolicy rl_defined_rate_limit(text *name, const char *hint,
									  const char *detail);

#endif							/* RATELIMIT_FUNCTIONS_H */
