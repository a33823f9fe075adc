/*-------------------------------------------------------------------------
 *
 * target.h
 *	  The limit a call addresses, in stored form, with its policy and the
 *	  store that keeps its state (target.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_TARGET_H
#define RATELIMIT_TARGET_H

#include "postgres.h"

#include "access/htup.h"

#include "algebra.h"
#include "names.h"

struct RlStoreOps;

/* The limit a call addresses, in stored form. */
typedef struct RlTarget
{
	text	   *name;			/* the name its state is stored under */
	text	   *label;			/* the name the caller gave: messages,
								 * statistics, HTTP fields, window phase */
	text	   *key;			/* '' for the NULL key */
	bool		key_is_null;
	RlPolicy	policy;			/* the whole limit's policy */
	bool		defined;		/* policy from rl_definitions, not a config */
	int64		origin;			/* a window start (fixed window) */
	const struct RlStoreOps *store; /* the store of policy (rl_store_of) */
	uint64		epoch;			/* the definitions' epoch the policy was
								 * read at (rl_definition_lookup_at);
								 * PG_UINT64_MAX: not known */
	text	   *address;		/* the key as the address the lists judge,
								 * when it is one (access.c); else NULL */
	int			address_prefix; /* the prefix key counts it under; 0: none */
	bool		denied;			/* refused by the deny list (limit.c) */
	bool		partial;		/* rl_limit's partial: a call takes what the
								 * key holds, up to its count */
} RlTarget;

extern void rl_target_init(RlTarget *target, text *name, text *key);
extern void rl_target_resolve(RlTarget *target, HeapTupleHeader config);
extern bool rl_target_resolve_defined(RlTarget *target,
									  HeapTupleHeader config);
extern bool rl_key_policy(text *name, text *key, RlPolicy *policy);
extern void rl_target_require_rate(const RlTarget *target);
extern void rl_target_for_row(RlTarget *target, text *name, text *key,
							  const RlPolicy *policy);
extern void rl_target_reread(RlTarget *target);
extern void rl_target_reread_epoch(RlTarget *target);
extern void rl_target_reread_count(RlTarget *target, double count,
								   bool reserve);
extern void rl_target_recheck(RlTarget *target, double count, bool reserve);
extern void rl_target_check_count(const RlTarget *target, double count,
								  bool reserve);

/* The policy one row (one shard) of the limit enforces. */
static inline RlPolicy
rl_target_row_policy(const RlTarget *target)
{
	return target->policy.shards == 1 ? target->policy :
		rl_policy_shard(&target->policy);
}

#endif							/* RATELIMIT_TARGET_H */
