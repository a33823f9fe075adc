/*-------------------------------------------------------------------------
 *
 * concurrency.h
 *	  Concurrency limits: at most N holders of a (name, key) at once, as
 *	  permits in the lock manager (until the transaction ends) or as
 *	  leases in a table (until released or expired).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_CONCURRENCY_H
#define RATELIMIT_CONCURRENCY_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "target.h"

/*
 * The lock tags: LOCKTAG_ADVISORY with field1 the database, field2 and
 * field3 hashes of the name and the key, and field4 above the values 1 and
 * 2 that pg_advisory_lock and friends use, so the application's advisory
 * locks never meet ours.  pg_locks shows them as locktype 'advisory' with
 * classid, objid and objsubid holding field2, field3 and field4.
 */
#define RL_LOCK_NAME_FIELD4		0x3FFE	/* a name's definition lock (field3 0) */
#define RL_LOCK_LEASE_FIELD4	0x3FFF	/* a key's lease lock */
#define RL_LOCK_PERMIT_FIELD4	0x4000	/* + slot: permit slot 0 .. N-1 */

extern void rl_concurrency_init(void);
extern void rl_lease_check_ttl(int64 ttl, Datum ttl_arg);
extern uint32 rl_lock_hash(text *t);
extern void rl_target_require_concurrency(const RlTarget *target,
										  RlKind kind);
extern void rl_check_permits(const RlTarget *target, int32 permits);
extern bool rl_permits_acquire(const RlTarget *target, int32 permits,
							   int64 wait_usecs);
extern bool rl_lease_take(const RlTarget *target, int32 permits, int64 ttl,
						  Datum *id);
extern void rl_concurrency_definition_change(Oid nspid, text *before_name,
											 const RlPolicy *before,
											 text *after_name,
											 const RlPolicy *after);

#endif							/* RATELIMIT_CONCURRENCY_H */
