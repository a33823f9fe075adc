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
	RL_DIRECT_FOUND,			/* read without a lock */
	RL_DIRECT_DONE,				/* decided, and written if it had to be */
	RL_DIRECT_CONTENDED,		/* held or changed: decide under the lock */
	RL_DIRECT_UNSUPPORTED		/* use the SQL path */
} RlDirectStatus;

/*
 * Decides a call from a row's state read without a lock (complete: no
 * NULL in it): true, with the state to write, to write; false to leave the
 * row alone.
 */
typedef bool (*RlDirectDecide) (const RlState *state, bool complete,
								void *arg, RlState *write);
/* What rl_direct_insert did. */
typedef enum RlDirectInsertStatus
{
	RL_DIRECT_INSERTED,
	RL_DIRECT_CONFLICT,			/* the row exists: nothing inserted */
	RL_DIRECT_INSERT_UNSUPPORTED	/* use the SQL path */
} RlDirectInsertStatus;

extern void rl_direct_init(void);
extern bool rl_direct_update_locks_key(Oid relid);
extern RlDirectStatus rl_direct_lock(Oid relid, text *name, text *key,
									 int16 shard, bool wait, bool to_delete,
									 RlState *state, bool *complete,
									 ItemPointer tid);
extern bool rl_direct_update(Oid relid, ItemPointer tid,
							 const RlState *state);
extern RlDirectStatus rl_direct_read(Oid relid, text *name, text *key,
									 int16 shard, RlState *state,
									 bool *complete);
extern RlDirectStatus rl_direct_consume(Oid relid, text *name, text *key,
										int16 shard, RlDirectDecide decide,
										void *arg);
extern RlDirectInsertStatus rl_direct_insert(Oid relid, text *name,
											 text *key, int16 shard,
											 const RlState *state);

#endif							/* RATELIMIT_DIRECT_H */
