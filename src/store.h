/*-------------------------------------------------------------------------
 *
 * store.h
 *	  The one interface between the decision and the stores that keep a
 *	  limit's state: a table of operations per store, found from the
 *	  policy by rl_store_of, and what every store calls to decide over the
 *	  state it holds (store.c).
 *
 * A store finds, locks, reads and writes a key's state; the decision
 * (limit.c: shadow mode, automatic blocks, statistics, all or nothing)
 * never asks which store it talks to.  Stores: the table store
 * (store_table.c: rows of rate_limits, locked in the caller's
 * transaction) and the memory store (store_memory.c: entries in shared
 * memory, taken at once and returned on rollback).
 *
 * rl_limit_all over several stores: stores are visited in their rank
 * (rl_stores[]), each store's targets in canonical order.  A store holds
 * its targets (hold: this may wait, so only stores ranked before every
 * store whose lock forbids waiting may wait), the targets' definitions are
 * read again, the store locks what it holds (lock), and decides each
 * target (decide).  Once every target of every store is decided, and only
 * when all granted, the stores write in the reverse of their rank, each
 * releasing its lock (unlock) once written: the last locked is the first
 * released, and a store whose lock forbids waiting (the memory store's
 * partition locks) is held only from reading to writing.  A write that
 * fails later rolls the transaction back, which returns what earlier
 * writes took.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_STORE_H
#define RATELIMIT_STORE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "storage/itemptr.h"

#include "algebra.h"
#include "target.h"

/* What a call answers, whether the limit is sharded or not. */
typedef RlShardDecision RlAnswer;

/* What rl_adjust does to a key. */
typedef enum RlAdjustment
{
	RL_ADJUST_REFUND,
	RL_ADJUST_PENALIZE,
	RL_ADJUST_BLOCK,
	RL_ADJUST_CHARGE,			/* rl_settle's: a penalty max_debt bounds */
	RL_ADJUST_RETURN,			/* rl_settle's: a refund a block keeps out */
	RL_ADJUST_MOVE				/* a plan change: keep what the key held
								 * (amount), at most the new capacity */
} RlAdjustment;

/*
 * The state a call decides on: one key's, or two shards of it, as a store
 * holds or read them, and the time they were read at.  The table store
 * also keeps its rows' addresses and the shards it left busy here.
 */
typedef struct RlHeld
{
	int			n;				/* 1, or 2 shards */
	int16		shard[2];
	bool		stored[2];		/* false: no state yet (a full bucket) */
	RlState		state[2];
	TimestampTz now;			/* when read (peek, decide) */
	void	   *store_data;		/* the store's own, from peek to write */
	/* the table store's */
	int			nbusy;			/* n + nbusy is at most 2 */
	int16		busy[2];		/* shards left busy, decided on unlocked */
	ItemPointerData tid[2];
} RlHeld;

/* One store's operations. */
typedef struct RlStoreOps
{
	const char *name;			/* rl_define's storage: "table", "memory" */
	bool		writes_table;	/* a call that changes a key writes a
								 * table: refused in a read-only
								 * transaction */
	bool		locks_rows;		/* a call's lock on a key's state lasts
								 * until its transaction ends (wait.c
								 * tries in a subtransaction) */

	/* refuse a policy the store cannot keep now: an inline config's or a
	 * definition's */
	void		(*check_use) (bool inline_config);

	/* rl_check: the state a call would decide on, read without a lock */
	void		(*peek) (const RlTarget *target, RlHeld *held);
	/* rl_value: the key's state brought forward to now, shards summed */
	RlState		(*current) (const RlTarget *target);
	/* rl_limit: hold, decide (rl_decide_held), write what a grant changed */
	void		(*consume) (RlTarget *target, double count, bool reserve,
							RlAnswer *answer);
	/* whether waiting could ever grant the call in its transaction */
	bool		(*wait_can_grant) (const RlTarget *target, double count,
								   bool reserve);
	/* whether the transaction may hold the key's state already */
	bool		(*may_hold) (const RlTarget *target);

	/* rl_limit_all, in the order the header comment gives */
	void		(*hold) (RlTarget *target, double count, RlHeld *held);
	void		(*lock) (RlHeld *const *held, int n);
	void		(*decide) (const RlTarget *target, RlHeld *held, double count,
						   bool reserve, RlAnswer *answer);
	void		(*write) (const RlTarget *target, const RlHeld *held,
						  double count, const RlAnswer *answer);
	void		(*unlock) (void);

	/*
	 * rl_refund, rl_penalize, rl_block, rl_settle's charge and return;
	 * blocked: see rl_adjust_key; charged (a charge): what it took.
	 * Returns the key's state as rl_value would then report it.
	 */
	RlState		(*adjust) (RlTarget *target, RlAdjustment kind, double amount,
						   int64 duration, bool *blocked, double *charged);
	/*
	 * rl_reset: forget the key (full again).  every_inline: a defined
	 * name's key, and the key under every inline config of the name the
	 * store can find by name alone.
	 */
	void		(*reset) (RlTarget *target, bool every_inline);
	/*
	 * rl_reset of a name with no definition and no config: the same;
	 * returns how many states it forgot
	 */
	uint64		(*reset_inline) (text *name, text *key);
} RlStoreOps;

/* The stores, in rank (see above). */
extern const RlStoreOps *const rl_stores[];
extern const int rl_nstores;

extern const RlStoreOps rl_table_store;
extern const RlStoreOps rl_memory_store;

extern const RlStoreOps *rl_store_of(const RlPolicy *policy);

/* Deciding over what a store holds. */
extern void rl_check_status(RlStatus status, TimestampTz now);
extern void rl_check_state_time(const RlState *state, TimestampTz now);
extern void rl_decide_held(const RlTarget *target, const RlHeld *held,
						   double count, bool reserve, RlAnswer *answer);
extern void rl_adjust_state(const RlPolicy *policy, int64 origin,
							RlAdjustment kind, const RlState *state,
							TimestampTz now, double amount, int64 duration,
							RlState *out, double *charged);

#endif							/* RATELIMIT_STORE_H */
