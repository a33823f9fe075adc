/*-------------------------------------------------------------------------
 *
 * storage.h
 *	  Where definitions and state live, and how a state row is found,
 *	  locked and written.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_STORAGE_H
#define RATELIMIT_STORAGE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"

#include "algebra.h"

struct RlAccessEntry;

/* One limit's row address: the key '' stands for the NULL (shared) key. */
typedef struct RlRowKey
{
	text	   *name;
	text	   *key;
	int16		shard;
} RlRowKey;

/* What a lock attempt that does not wait found. */
typedef enum RlRowStatus
{
	RL_ROW_LOCKED,				/* locked by us, state and tid filled in */
	RL_ROW_BUSY,				/* locked by another transaction */
	RL_ROW_MISSING				/* no row (or one not yet committed) */
} RlRowStatus;

/* What a call that decided without a lock must do next. */
typedef enum RlTryStatus
{
	RL_TRY_DONE,				/* decided; written if it had to be */
	RL_TRY_MISSING,				/* no row */
	RL_TRY_BUSY,				/* another transaction holds the row */
	RL_TRY_LOCK					/* lock the row and decide again */
} RlTryStatus;

/*
 * Decides a consuming call from a row's state: true, with the state to
 * write, when the row must change; false to leave it alone.
 */
typedef bool (*RlStorageDecide) (const RlState *state, void *arg,
								 RlState *write);

/*
 * A state row as a scan returns it, with its name's definition, or none
 * for a limit used with an inline config (rl_inline_row reads its policy
 * from the name).
 */
typedef struct RlScanRow
{
	text	   *name;
	text	   *key;			/* '' for the NULL key */
	int16		shard;
	RlState		state;
	bool		defined;
	bool		key_overridden; /* its key has an override (rl_overrides) */
	RlPolicy	policy;			/* the whole limit's policy, when defined */
} RlScanRow;

typedef struct RlScan RlScan;

/* A definition as a change to rl_definitions sees it. */
typedef struct RlDefinitionRow
{
	text	   *name;
	RlPolicy	policy;			/* kind, capacity and max_reserved only, but
								 * whole from rl_storage_memory_definitions */
} RlDefinitionRow;

/* What releasing a lease found. */
typedef enum RlLeaseStatus
{
	RL_LEASE_RELEASED,			/* it was held, and now is not */
	RL_LEASE_NOT_HELD,			/* already released, or expired */
	RL_LEASE_UNKNOWN			/* no such lease (or rl_gc removed it) */
} RlLeaseStatus;

extern void rl_storage_begin(Oid nspid);
extern void rl_storage_begin_writing(Oid nspid, const char *cmdname);
extern void rl_storage_connect(void);
extern uint64 rl_storage_run_once(Oid relid, const char *fmt, int nargs,
								  Oid *types, Datum *args, const char *nulls,
								  bool fresh, int expected);
extern void rl_storage_end(void);

extern Oid	rl_storage_definitions_relid(void);
extern bool rl_storage_get_definition(text *name, RlPolicy *policy);
extern bool rl_storage_put_definition(text *name, Datum *values,
									  bool *nulls);
extern bool rl_storage_delete_definition(text *name);
extern Oid	rl_storage_overrides_relid(void);
extern bool rl_storage_get_override(text *name, text *key, RlPolicy *policy);
extern void rl_storage_put_override(Datum *values, bool *nulls, bool plan);
extern bool rl_storage_delete_override(text *name, text *key);
extern void rl_storage_delete_name_overrides(text *name);
extern bool rl_storage_delete_plan(text *name, text *plan, int64 *assigned);
/* What policy a key has (rl_storage_lock_assignments). */
typedef enum RlKeyPolicy
{
	RL_KEY_DEFINITION,			/* none of its own */
	RL_KEY_PLAN,				/* a plan's (rl_assign) */
	RL_KEY_OVERRIDE				/* an override's (rl_override) */
} RlKeyPolicy;

extern RlKeyPolicy rl_storage_lock_assignments(text *name, text *key);
extern bool rl_storage_assign(text *name, text *key, text *plan,
							  text *zone);
extern int64 rl_storage_plan_zone_movers(text *name, text *plan, text *zone);

/* A key's last move to another policy (rl_moves, plans.c). */
typedef struct RlMove
{
	TimestampTz moved_at;
	bool		this_xact;		/* moved by this transaction */
	bool		has_refill_at;
	TimestampTz refill_at;		/* the end of the window it moved into */
	TimestampTz covered_until;	/* how far its refills were paid for */
	double		covered_per_us; /* at what rate, at most, at the end */
	bool		has_near;		/* and up to near_until, a higher rate */
	TimestampTz near_until;
	double		near_per_us;
	double		debt;			/* what the move charged (a penalty) */
} RlMove;

extern bool rl_storage_get_move(text *name, text *key, RlMove *move);
extern void rl_storage_put_move(text *name, text *key, const RlMove *move);
extern void rl_storage_forget_move(text *name, text *key);
extern void rl_storage_forget_name_moves(text *name);
extern void rl_storage_forget_memory_moves(void);
extern uint64 rl_storage_move_gc(TimestampTz now, uint64 max_rows);
extern Oid	rl_storage_access_relid(void);
extern int	rl_storage_get_access(text *name, text *address,
								  MemoryContext cxt,
								  struct RlAccessEntry **entries);
extern void rl_storage_put_access(Datum *values, bool *nulls);
extern bool rl_storage_delete_access(text *name, Datum net);
extern void rl_storage_delete_name_access(text *name);

extern bool rl_storage_read(const RlRowKey *row, RlState *state);
extern bool rl_storage_lock(const RlRowKey *row, RlState *state,
							ItemPointer tid);
extern RlTryStatus rl_storage_consume(const RlRowKey *row,
									  RlStorageDecide decide, void *arg);
extern RlRowStatus rl_storage_lock_nowait(const RlRowKey *row,
										  bool to_delete, RlState *state,
										  ItemPointer tid);
extern void rl_storage_read_shards(text *name, text *key, int nshards,
								   RlState *states, bool *found);
extern bool rl_storage_insert(const RlRowKey *row, const RlState *state);
extern void rl_storage_update(ItemPointer tid, const RlState *state);
extern uint64 rl_storage_delete(text *name, text *key);
extern uint64 rl_storage_delete_stored(text *stored, text *key);
extern void rl_storage_delete_row(ItemPointer tid);

extern RlScan *rl_storage_scan_begin(void);
extern bool rl_storage_scan_next(RlScan *scan, RlScanRow *row);
extern void rl_storage_scan_end(RlScan *scan);

extern int64 rl_storage_lease_held(text *name, text *key, TimestampTz now);
extern Datum rl_storage_lease_insert(text *name, text *key, int32 permits,
									 TimestampTz now, TimestampTz expires);
extern RlLeaseStatus rl_storage_lease_release(Datum id, TimestampTz now);
extern void rl_storage_lease_delete_name(text *name, TimestampTz now);
extern uint64 rl_storage_lease_gc(TimestampTz now, uint64 max_rows);
extern int64 rl_storage_name_leases_held(Oid nspid, text *name,
										 TimestampTz now);
extern List *rl_storage_concurrency_definitions(Relation rel);
extern List *rl_storage_memory_definitions(void);

#endif							/* RATELIMIT_STORAGE_H */
