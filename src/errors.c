/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  Raising SQLSTATE RL001, the error of throws => true.
 *
 * The message names the limit; the detail names the key and the tokens;
 * the hint says when to retry, as an interval an HTTP layer can turn into
 * Retry-After.  Kept apart so its report location stays put.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "errors.h"
#include "policy.h"

/* Raise RL001 for a refused call; key is NULL for the shared limit. */
void
rl_raise_exceeded(text *name, text *key, double count, double remaining,
				  int64 retry_after)
{
	Interval   *wait = rl_usecs_to_interval(retry_after);
	char	   *retry = DatumGetCString(DirectFunctionCall1(interval_out,
															IntervalPGetDatum(wait)));

	if (key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_RATE_LIMIT_EXCEEDED),
				 errmsg("rate limit \"%s\" exceeded", text_to_cstring(name)),
				 errdetail("The shared limit has %g tokens; the call asked for %g.",
						   remaining, count),
				 errhint("Retry after %s.", retry)));
	ereport(ERROR,
			(errcode(ERRCODE_RATE_LIMIT_EXCEEDED),
			 errmsg("rate limit \"%s\" exceeded", text_to_cstring(name)),
			 errdetail("Key \"%s\" has %g tokens; the call asked for %g.",
					   text_to_cstring(key), remaining, count),
			 errhint("Retry after %s.", retry)));
}

/*
 * Raise RL001 for a call the limit's deny list refused: address is the
 * caller's; retry_after when has_retry, else it is denied for ever.
 */
void
rl_raise_denied(text *name, text *address, bool has_retry, int64 retry_after)
{
	char	   *retry;

	if (!has_retry)
		ereport(ERROR,
				(errcode(ERRCODE_RATE_LIMIT_EXCEEDED),
				 errmsg("rate limit \"%s\" denies address \"%s\"",
						text_to_cstring(name), text_to_cstring(address)),
				 errdetail("The address is on the limit's deny list, with no expiry.")));
	retry = DatumGetCString(DirectFunctionCall1(interval_out,
												IntervalPGetDatum(rl_usecs_to_interval(retry_after))));
	ereport(ERROR,
			(errcode(ERRCODE_RATE_LIMIT_EXCEEDED),
			 errmsg("rate limit \"%s\" denies address \"%s\"",
					text_to_cstring(name), text_to_cstring(address)),
			 errdetail("The address is on the limit's deny list."),
			 errhint("Retry after %s.", retry)));
}
