/*-------------------------------------------------------------------------
 *
 * access.h
 *	  Address keys, a network counted as one key, and the allow and deny
 *	  lists of a limit (access.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_ACCESS_H
#define RATELIMIT_ACCESS_H

#include "postgres.h"

#include "datatype/timestamp.h"

struct RlTarget;

/* One entry of rl_access whose network holds an address. */
typedef struct RlAccessEntry
{
	bool		deny;			/* false: allow */
	bool		expires;		/* false: for ever */
	TimestampTz expires_at;
} RlAccessEntry;

/* What a limit's lists say of a call's address. */
typedef enum RlAccess
{
	RL_ACCESS_NONE,				/* no entry: the limit decides */
	RL_ACCESS_ALLOW,			/* granted without consuming */
	RL_ACCESS_DENY				/* refused at once */
} RlAccess;

extern text *rl_inet_key(Datum inet);
extern void rl_target_address(struct RlTarget *target);
extern RlAccess rl_access_of(struct RlTarget *target, TimestampTz now,
							 bool *has_until, TimestampTz *until);

#endif							/* RATELIMIT_ACCESS_H */
