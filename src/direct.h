/*-------------------------------------------------------------------------
 *
 * direct.h
 *	  The direct path to a state row (used by storage.c only).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_DIRECT_H
#define RATELIMIT_DIRECT_H

#include "postgres.h"

#include "storage/itemptr.h"

#include "algebra.h"

typedef enum RlDirectStatus
{
	RL_DIRECT_LOCKED,
	RL_DIRECT_BUSY,
	RL_DIRECT_MISSING,
	RL_DIRECT_UNSUPPORTED		/* use the SQL path */
} RlDirectStatus;

/* What rl_direct_insert did. */
typedef enum RlDirectInsertStatus
{
	RL_DIRECT_INSERTED,
	RL_DIRECT_CONFLICT,			/* the row exists: nothing inserted */
	RL_DIRECT_INSERT_UNSUPPORTED	/* use the SQL path */
} RlDirectInsertStatus;

extern void rl_direct_init(void);
extern RlDirectStatus rl_direct_lock(Oid relid, text *name, text *key,
									 int16 shard, bool wait, RlState *state,
									 bool *complete, ItemPointer tid);
extern bool rl_direct_update(Oid relid, ItemPointer tid,
							 const RlState *state);
extern RlDirectInsertStatus rl_direct_insert(Oid relid, text *name,
											 text *key, int16 shard,
											 const RlState *state);

#endif							/* RATELIMIT_DIRECT_H */
