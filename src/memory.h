/*-------------------------------------------------------------------------
 *
 * memory.h
 *	  The memory store: limit state in shared memory, taken at once,
 *	  returned on rollback, no row, no WAL (see memory.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_MEMORY_H
#define RATELIMIT_MEMORY_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "utils/guc.h"

#include "algebra.h"

#define RL_MEMORY_ID_BYTES		32	/* SHA-256 */
#define RL_MEMORY_NAME_ID_BYTES	16

/* One (database, extension, stored name, key): the address of an entry. */
typedef struct RlMemoryKey
{
	uint8		id[RL_MEMORY_ID_BYTES];
	uint8		name_id[RL_MEMORY_NAME_ID_BYTES];
	Oid			space;			/* the extension's rl_definitions */
	bool		is_inline;		/* an inline config's stored name */
	uint32		bucket;
	int			partition;
} RlMemoryKey;

extern void rl_memory_init(void);
extern GucContext rl_sizing_context(void);
extern void rl_memory_key(Oid space, text *name, text *key, RlMemoryKey *k);
extern void rl_memory_name_id(Oid space, text *name, uint8 *name_id);

/*
 * The epoch of a call whose definitions change by hand with no trigger
 * firing (rl_definitions' trigger disabled): no judgement of it counts,
 * and the policy it read counts as in force, since no change can be seen.
 */
#define RL_MEMORY_EPOCH_UNTRACKED (PG_UINT64_MAX - 1)

extern uint64 rl_memory_epoch(void);
extern uint64 rl_memory_gc_epoch(void);
extern void rl_memory_lock(const RlMemoryKey *keys, int n);
extern void rl_memory_unlock(void);
extern void rl_memory_get(const RlMemoryKey *k, const RlPolicy *policy,
						  int64 origin, TimestampTz now, RlState *state);
extern void rl_memory_read(const RlMemoryKey *k, const RlPolicy *policy,
						   int64 origin, TimestampTz now, RlState *state);
extern void rl_memory_take(const RlMemoryKey *k, const RlPolicy *policy,
						   int64 origin, TimestampTz now, double count,
						   uint64 epoch);

/* What rl_memory_at_commit does to a key when the transaction commits. */
typedef enum RlMemoryLater
{
	RL_MEMORY_REFUND,			/* give amount back */
	RL_MEMORY_RETURN,			/* the same, unless then blocked (rl_settle) */
	RL_MEMORY_BLOCK,			/* block for duration */
	RL_MEMORY_BLOCK_UNBLOCKED,	/* the same, unless then blocked already
								 * (block_for: a block is not lengthened) */
	RL_MEMORY_RESET				/* forget the key: full again */
} RlMemoryLater;

extern bool rl_memory_block_pending(const RlMemoryKey *k, TimestampTz *at);
extern double rl_memory_own_pending(const RlMemoryKey *k);
extern double rl_memory_own_refunds(const RlMemoryKey *k);
extern void rl_memory_at_commit(const RlMemoryKey *k, const RlPolicy *policy,
								int64 origin, RlMemoryLater what,
								double amount, int64 duration, uint64 epoch);
extern void rl_memory_name_changed(Oid space, text *name, bool dropped);

/* A memory limit's name and current policy, for rl_memory_gc. */
typedef struct RlMemoryName
{
	uint8		name_id[RL_MEMORY_NAME_ID_BYTES];
	RlPolicy	policy;
} RlMemoryName;

extern bool rl_memory_available(void);
extern bool rl_memory_attached(void);
extern void rl_memory_untracked_definitions(void);
extern void rl_memory_attach(void);
extern void rl_memory_require(void);
extern void rl_memory_check_inline(void);
extern uint64 rl_memory_drop_entries(Oid space, bool inline_only);
extern uint64 rl_memory_gc(Oid space, const RlMemoryName *names, int nnames,
						   uint64 epoch, TimestampTz now, uint64 max);

/* rl_stats_info's memory columns. */
typedef struct RlMemoryInfo
{
	const char *storage;
	int64		max_keys;
	int64		keys;
	int64		full_errors;
	TimestampTz empty_since;	/* 0: none */
} RlMemoryInfo;

extern void rl_memory_info(RlMemoryInfo *info);

#endif							/* RATELIMIT_MEMORY_H */
