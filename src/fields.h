/*-------------------------------------------------------------------------
 *
 * fields.h
 *	  The numbers of an answer's HTTP rate-limit fields (fields.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_FIELDS_H
#define RATELIMIT_FIELDS_H

#include "algebra.h"

/* The values of the HTTP fields for one answer (whole seconds). */
typedef struct RlHttpFields
{
	int64_t		quota;			/* RateLimit-Policy q */
	int64_t		window;			/* RateLimit-Policy w */
	int64_t		remaining;		/* RateLimit r */
	int64_t		reset;			/* RateLimit t */
	bool		has_retry_after;	/* a denied call: Retry-After */
	int64_t		retry_after;
} RlHttpFields;

/* The largest Integer an HTTP structured field carries (RFC 9651). */
#define RL_SF_MAX_INTEGER	INT64_C(999999999999999)

extern int64_t rl_ceil_seconds(int64_t usecs);
extern int64_t rl_ceil_ms(int64_t usecs);
extern void rl_http_fields(const RlPolicy *policy, bool ok, bool has_retry,
						   int64_t retry_after, double remaining,
						   int64_t reset_after, RlHttpFields *fields);

#endif							/* RATELIMIT_FIELDS_H */
