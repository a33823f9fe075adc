/*-------------------------------------------------------------------------
 *
 * errors.h
 *	  The extension's own error: a rate limit refused a call that asked to
 *	  throw.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_ERRORS_H
#define RATELIMIT_ERRORS_H

#include "postgres.h"

#include "compat.h"

/* SQLSTATE RL001: the error raised by throws => true. */
#define ERRCODE_RATE_LIMIT_EXCEEDED MAKE_SQLSTATE('R','L','0','0','1')

pg_noreturn extern void rl_raise_denied(text *name, text *address,
										bool has_retry, int64 retry_after);
pg_noreturn extern void rl_raise_exceeded(text *name, text *key, double count,
										  double remaining, int64 retry_after);

#endif							/* RATELIMIT_ERRORS_H */
