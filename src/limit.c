/*-------------------------------------------------------------------------
 *
 * limit.c
 *	  Deciding calls on a limit: resolving its policy, holding its row (or
 *	  two of its shards), deciding at a time read after the locks are held,
 *	  and writing only what a granted decision changed.
 *
 * An unsharded limit is one row, locked FOR NO KEY UPDATE; a key with no
 * row is created by the granted call itself (see storage.c for the race).  A
 * sharded limit holds one or two of its N shards: one that serves the call
 * alone, the transaction's own first (held.c), or two locked with SKIP
 * LOCKED, waiting on one only when both are busy and the transaction holds
 * no shard of the key.  A shard with no row is first created at full
 * capacity, which is exactly what a missing row means, so creating it
 * changes no decision.
 *
 * rl_consume_all locks every limit of a call in one canonical order (name,
 * then key, bytewise), decides them all, and writes either all of them or
 * none, so two calls naming the same limits in any order cannot deadlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/int.h"
#include "common/pg_prng.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "calendar.h"
#include "clock.h"
#include "compat.h"
#include "definitions.h"
#include "held.h"
#include "limit.h"
#include "memory.h"
#include "policy.h"
#include "stats.h"
#include "storage.h"

/* algebra.h keeps its own copy of timestamptz's range */
StaticAssertDecl(RL_MIN_TIME == MIN_TIMESTAMP && RL_END_TIME == END_TIMESTAMP,
				 "RL_MIN_TIME and RL_END_TIME must match timestamptz's range");

/*
 * The row, or the up to two shards, a call holds, and the shards it left
 * busy: n + nbusy is at most 2.
 */
typedef struct RlHeld
{
	int			n;
	int			nbusy;
	int16		busy[2];		/* shards left busy, decided on unlocked */
	int16		shard[2];
	bool		stored[2];		/* false: no row yet (a full bucket) */
	RlState		state[2];
	ItemPointerData tid[2];
} RlHeld;

/* A uniform draw from 0 .. n - 1 (n > 0), for picking shards. */
static inline int
random_below(int n)
{
	return (int) pg_prng_uint64_range(&pg_global_prng_state, 0, (uint64) n - 1);
}

/* Check a name and key (NULL for the shared key) and store them. */
void
rl_target_init(RlTarget *target, text *name, text *key)
{
	int			len = VARSIZE_ANY_EXHDR(name);

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rate limit name must not be empty")));
	if (len > RL_MAX_NAME_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rate limit name is too long"),
				 errdetail("The name is %d bytes; the limit is %d.",
						   len, RL_MAX_NAME_BYTES)));
	if (memchr(VARDATA_ANY(name), RL_INLINE_SEPARATOR, len) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rate limit name must not contain the character U+001F"),
				 errdetail("It separates a name from its inline policy in stored state.")));
	target->name = name;
	target->label = name;
	target->key_is_null = key == NULL;
	if (key == NULL)
	{
		target->key = cstring_to_text("");
		return;
	}
	len = VARSIZE_ANY_EXHDR(key);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rate limit key must not be empty"),
				 errhint("Pass NULL as the key for the limit shared by the whole name.")));
	if (len > RL_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("rate limit key is too long"),
				 errdetail("The key is %d bytes; the limit is %d.",
						   len, RL_MAX_KEY_BYTES)));
	target->key = key;
}

/* The window phase of a target whose policy is known. */
static void
set_origin(RlTarget *target)
{
	target->origin = rl_window_origin(&target->policy,
									  VARDATA_ANY(target->label),
									  VARSIZE_ANY_EXHDR(target->label),
									  VARDATA_ANY(target->key),
									  VARSIZE_ANY_EXHDR(target->key),
									  target->key_is_null);
}

/*
 * A key of a defined limit with an override (rl_overrides): the override's
 * rate, period, capacity and max_reserved in its policy.  Its state is the
 * key's row or memory entry, as without the override, read under the
 * policy now in force: so a change of the definition, or of the override,
 * keeps what the key has taken, as a redefinition keeps a plain key's.
 * rl_gc and the memory store judge the key under the same merged policy.
 */
static void
apply_override(RlTarget *target)
{
	RlPolicy	p = target->policy;
	const char *problem;

	if (!target->defined || !p.overrides || target->key_is_null ||
		RL_KIND_IS_CONCURRENCY(p.kind) ||
		!rl_override_lookup(target->label, target->key, &p))
		return;
	problem = rl_policy_problem(&p);
	if (problem)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid override of rate limit \"%s\" for key \"%s\"",
						text_to_cstring(target->label),
						text_to_cstring(target->key)),
				 errdetail("%s", problem)));
	target->policy = p;
}

/*
 * The policy a defined name's key counts under now: the definition, with
 * the key's override in (rl_gc judges a row under it).  False for a name
 * with no definition.  Needs rl_storage_begin.
 */
bool
rl_key_policy(text *name, text *key, RlPolicy *policy)
{
	RlTarget	target;

	if (!rl_definition_lookup(name, policy))
		return false;
	target.label = name;
	target.key = key;
	target.key_is_null = VARSIZE_ANY_EXHDR(key) == 0;
	target.defined = true;
	target.policy = *policy;
	apply_override(&target);
	*policy = target.policy;
	return true;
}

/*
 * Find the policy: the stored definition, or the inline config (NULL for
 * none) for a name that has none; an inline config's state is its own
 * (inline_row_name); an overridden key's policy has its override in
 * (apply_override).
 * Needs rl_storage_begin.
 */
void
rl_target_resolve(RlTarget *target, HeapTupleHeader config)
{
	bool		defined;

	target->memory_epoch = rl_memory_epoch();
	defined = rl_definition_lookup(target->label, &target->policy);
	if (defined && !rl_definition_tracked())
		target->memory_epoch = RL_MEMORY_EPOCH_UNTRACKED;
	target->defined = defined;
	if (config != NULL)
	{
		if (defined)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("rate limit \"%s\" is already defined",
							text_to_cstring(target->label)),
					 errdetail("An inline config would apply a second policy to the same state."),
					 errhint("Call it without config, or use another name.")));
		rl_policy_from_composite(config, &target->policy);
		if (target->policy.store == RL_STORE_MEMORY)
			rl_memory_check_inline();
	}
	else if (!defined)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist",
						text_to_cstring(target->label)),
				 errhint("Define it with rl_define(), or pass an inline config.")));
	rl_target_require_rate(target);
	if (config != NULL)
		target->name = rl_inline_row_name(target->label, &target->policy);
	else
		apply_override(target);
	set_origin(target);
}

/*
 * Refuse a concurrency limit where a rate is needed (rl_limit, rl_check,
 * rl_value, rl_limit_all, rl_enforce): it has no tokens to take.
 */
void
rl_target_require_rate(const RlTarget *target)
{
	if (!RL_KIND_IS_CONCURRENCY(target->policy.kind))
		return;
	if (!target->defined)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an inline config cannot be a concurrency limit"),
				 errhint("Define it with rl_define_concurrency() and call rl_acquire() or rl_lease().")));
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("rate limit \"%s\" is a concurrency limit",
					text_to_cstring(target->label)),
			 errhint("Take its permits with %s.",
					 target->policy.kind == RL_CONCURRENCY ?
					 "rl_acquire()" : "rl_lease()")));
}

/*
 * A target for a row already stored, with its name's policy: the key ''
 * is the NULL key.  Stored names and keys passed rl_target_init once.
 */
void
rl_target_for_row(RlTarget *target, text *name, text *key,
				  const RlPolicy *policy)
{
	const char *sep = memchr(VARDATA_ANY(name), RL_INLINE_SEPARATOR,
							 VARSIZE_ANY_EXHDR(name));

	target->name = name;
	target->label = sep == NULL ? name :
		cstring_to_text_with_len(VARDATA_ANY(name), sep - VARDATA_ANY(name));
	target->key = key;
	target->key_is_null = VARSIZE_ANY_EXHDR(key) == 0;
	target->policy = *policy;
	target->defined = true;
	target->memory_epoch = PG_UINT64_MAX;
	set_origin(target);
}

/*
 * Once a call holds its rows: look at the name's definition again, since
 * it may have changed or gone while the call waited for a lock.  rl_define
 * and rl_undefine commit, and send the invalidation the lookup accepts,
 * before they release their locks, so a call that waited for them sees
 * their change here.  A call never decides under a definition that no
 * longer exists, nor re-creates state for an undefined name; a changed
 * policy (the key's override's too) is adopted, unless its shard count
 * changed, which would change the rows the call should hold (40001:
 * retry).  The count is checked by recheck_definition.
 */
static void
recheck_policy(RlTarget *target)
{
	RlPolicy	current;
	bool		defined = rl_definition_lookup(target->label, &current);

	if (target->defined && !defined)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist",
						text_to_cstring(target->label)),
				 errdetail("It was undefined while the call waited for its state.")));
	if (!target->defined && defined)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("rate limit \"%s\" is already defined",
						text_to_cstring(target->label)),
				 errdetail("It was defined while the call waited for its state; an inline config would apply a second policy to the same state.")));
	if (!defined)
		return;
	if (current.shards != target->policy.shards)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("rate limit \"%s\" was redefined while the call waited for its state",
						text_to_cstring(target->label)),
				 errdetail("Its shard count changed from %d to %d.",
						   target->policy.shards, current.shards),
				 errhint("Retry the transaction.")));
	target->policy = current;
	rl_target_require_rate(target);
	apply_override(target);
	set_origin(target);
}

/* recheck_policy, then the count under the policy now in force. */
static void
recheck_definition(RlTarget *target, double count, bool reserve)
{
	recheck_policy(target);
	rl_target_check_count(target, count, reserve);
}

/*
 * A call that slept (rl_limit's wait) before it decides: its definition
 * read again, as consume_one does once a table limit's row is held (a
 * memory limit holds nothing to wait for, so only this sees a change made
 * while it slept: a lowered rate or capacity, shadow mode switched off).
 * The epoch is read first, so that the policy is never older than it.
 */
void
rl_target_recheck(RlTarget *target, double count, bool reserve)
{
	if (!target->defined)
		return;
	target->memory_epoch = rl_memory_epoch();
	recheck_definition(target, count, reserve);
	if (!rl_definition_tracked())
		target->memory_epoch = RL_MEMORY_EPOCH_UNTRACKED;
}

/* Refuse a count the limit can never grant. */
void
rl_target_check_count(const RlTarget *target, double count, bool reserve)
{
	const RlPolicy *p = &target->policy;
	const char *problem = rl_count_problem(p, count, reserve);

	if (problem == NULL)
		return;
	if (reserve && p->kind == RL_SLIDING_WINDOW)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem),
				 errdetail("A call counts in the window it is made in; a reservation would count in one not yet begun.")));
	if (p->shards > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem),
				 errdetail("The count is %g; each of the %d shards holds %g.",
						   count, p->shards, p->capacity / p->shards)));
	if (reserve && !p->has_max_reserved)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem),
				 errdetail("The count is %g; the capacity is %g, and without max_reserved a reservation goes no deeper than %g below zero (the capacity, or less if the limit would take over 500 years to refill).",
						   count, p->capacity, rl_reserve_depth(p)),
				 errhint("Deeper reservations need a max_reserved in the limit's definition or inline policy.")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s", problem),
			 !reserve ?
			 errdetail("The count is %g; the capacity is %g.",
					   count, p->capacity) :
			 errdetail("The count is %g; the capacity is %g and max_reserved is %g.",
					   count, p->capacity, p->max_reserved)));
}

static void recheck_policy(RlTarget *target);
static RlState adjust_key(RlTarget *target, RlAdjustment kind, double amount,
						  int64 duration, bool *blocked);

/* The policy one row of the limit enforces. */
static RlPolicy
row_policy(const RlTarget *target)
{
	return target->policy.shards == 1 ? target->policy :
		rl_policy_shard(&target->policy);
}

/* Raise the error for what the algebra could not answer at time now. */
static void
check_answered(RlStatus status, TimestampTz now)
{
	switch (status)
	{
		case RL_DECIDED:
			return;
		case RL_WAIT_TOO_LONG:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("rate limit wait exceeds 1000 years"),
					 errdetail("The count is too large for the rate of the limit.")));
			break;
		case RL_TIME_OUT_OF_RANGE:
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("rate limit state would fall outside the timestamp range"),
					 errdetail("The call is at %s; a window start, retry or reset it needs lies before 4714-11-24 BC or after 294276-12-31.",
							   timestamptz_to_str(now))));
			break;
	}
	elog(ERROR, "unexpected rate limit status %d", (int) status);
}

/*
 * Refuse a state that timestamptz cannot hold, before it is written or
 * returned.  The algebra refuses such states already, against its copy of
 * the bounds; this is the check against PostgreSQL's own.
 */
static void
check_state_time(const RlState *state, TimestampTz now)
{
	if (!IS_VALID_TIMESTAMP(state->ts))
		check_answered(RL_TIME_OUT_OF_RANGE, now);
}

/*
 * Decide over the rows a call holds, at a time read after the locks.
 * Every state the answer would write is checked here, and rl_consume_all
 * decides every limit before it writes any, so an error writes nothing.
 */
static void
decide_held_at(const RlTarget *target, const RlHeld *held, double count,
			   bool reserve, RlAnswer *answer, TimestampTz now)
{
	RlPolicy	policy = row_policy(target);
	const RlState *states[2];

	for (int i = 0; i < held->n; i++)
		states[i] = held->stored[i] ? &held->state[i] : NULL;
	check_answered(rl_decide_shards(&policy, target->origin, held->n, states,
									now, count, reserve, answer), now);
	for (int i = 0; i < held->n; i++)
		if (answer->write[i])
			check_state_time(&answer->state[i], now);
}

static void
decide_held(const RlTarget *target, const RlHeld *held, double count,
			bool reserve, RlAnswer *answer)
{
	decide_held_at(target, held, count, reserve, answer, rl_clock_now());
}

/*
 * The address of a memory limit's key: in this database and this install
 * of the extension (its rl_definitions, which DROP and CREATE EXTENSION
 * replace).
 */
static void
memory_address(const RlTarget *target, RlMemoryKey *k)
{
	rl_memory_key(rl_storage_definitions_relid(), target->name, target->key,
				  k);
}

/* The same, for a call that changes the key: its epoch known. */
static void
memory_key(RlTarget *target, RlMemoryKey *k)
{
	memory_address(target, k);
	if (target->memory_epoch != PG_UINT64_MAX)
		return;

	/*
	 * The store was not attached when the policy was read (a backend's first
	 * memory call, not preloaded): read the epoch now, then the definition
	 * again, so that the policy is never older than the epoch (memory.c).
	 */
	target->memory_epoch = rl_memory_epoch();
	if (!target->defined)
		return;
	recheck_policy(target);
	if (!rl_definition_tracked())
		target->memory_epoch = RL_MEMORY_EPOCH_UNTRACKED;
	if (target->policy.store != RL_STORE_MEMORY)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("rate limit \"%s\" was redefined while the call read it",
						text_to_cstring(target->label)),
				 errdetail("It no longer keeps its state in memory."),
				 errhint("Retry the transaction.")));
}

/*
 * One memory limit, its partition held (rl_memory_lock): the state to
 * decide on at now, as held holds a row.
 */
static void
hold_memory(const RlTarget *target, const RlMemoryKey *k, TimestampTz now,
			RlHeld *held)
{
	held->n = 1;
	held->nbusy = 0;
	held->shard[0] = 0;
	held->stored[0] = true;
	rl_memory_get(k, &target->policy, target->origin, now, &held->state[0]);
}

/*
 * A consuming call on a memory limit: read, decide and take under its
 * partition, which nothing in between waits on.
 */
static void
consume_memory(RlTarget *target, double count, bool reserve,
			   RlAnswer *answer)
{
	RlMemoryKey k;
	RlHeld		held;
	TimestampTz now;

	memory_key(target, &k);
	rl_memory_lock(&k, 1);
	now = rl_clock_now();
	hold_memory(target, &k, now, &held);
	decide_held_at(target, &held, count, reserve, answer, now);
	if (answer->ok)
		rl_memory_take(&k, &target->policy, target->origin, now, count,
					   target->memory_epoch);
	rl_memory_unlock();
}

/* A memory limit's state at now, taking nothing. */
static RlState
read_memory(const RlTarget *target, TimestampTz now)
{
	RlMemoryKey k;
	RlState		state;

	memory_address(target, &k);
	rl_memory_read(&k, &target->policy, target->origin, now, &state);
	return state;
}

/*
 * A sharded call that could not take the shards it picked without waiting,
 * and must not wait: it holds one shard, which cannot serve it alone, and
 * the other is busy; or it holds none, both are busy, and its transaction
 * holds another shard of the key (hold_shards).  Decide over the pair,
 * reading each busy shard's last committed state without a lock, and
 * write nothing.  When the pair could serve the call it is refused with
 * retry_after zero (a shard is in use right now); otherwise it is refused
 * with the shortest wait after which one shard, or both, could serve it.
 */
static void
decide_with_busy(const RlTarget *target, RlHeld *held, double count,
				 bool reserve, RlAnswer *answer)
{
	int			n = held->n;

	for (int i = 0; i < held->nbusy; i++)
	{
		RlRowKey	row = {target->name, target->key, held->busy[i]};

		held->shard[n + i] = held->busy[i];
		held->stored[n + i] = rl_storage_read(&row, &held->state[n + i]);
	}
	held->n = n + held->nbusy;
	decide_held(target, held, count, reserve, answer);
	held->n = n;
	if (answer->ok)
	{
		answer->ok = false;
		answer->has_retry = true;
		answer->retry_after = 0;
		answer->remaining = n == 1 ? held->state[0].value : 0;
	}
	answer->write[0] = answer->write[1] = false;
}

/*
 * Decide over what hold_rows held.  A busy shard is left only when the
 * call could not serve itself from what it holds, so the answer then
 * minds the busy ones too.
 */
static void
decide_hold(const RlTarget *target, RlHeld *held, double count, bool reserve,
			RlAnswer *answer)
{
	if (held->nbusy > 0)
		decide_with_busy(target, held, count, reserve, answer);
	else
		decide_held(target, held, count, reserve, answer);
}

/* Write what a granted decision changed in the rows the call holds. */
static void
write_held(const RlHeld *held, const RlAnswer *answer)
{
	for (int i = 0; i < held->n; i++)
		if (answer->write[i])
			rl_storage_update((ItemPointer) &held->tid[i], &answer->state[i]);
}

/*
 * Create a missing row at full capacity: the same as no row at all.  False
 * when another transaction created it first.
 */
static bool
create_full_row(const RlTarget *target, const RlRowKey *row)
{
	RlPolicy	policy = row_policy(target);
	TimestampTz now = rl_clock_now();
	RlState		full;

	check_answered(rl_initial_state(&policy, target->origin, now, &full), now);
	check_state_time(&full, now);
	return rl_storage_insert(row, &full);
}

/* Give up on a row that vanishes as fast as it is created. */
static void
check_attempts(int attempt)
{
	if (attempt >= 100)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not lock rate limit state after %d attempts",
						attempt + 1)));
}

/*
 * Lock one shard without waiting, creating it (full) if it has no row;
 * true and added to held when it is ours.  Every shard the transaction
 * locks or creates is noted (held.c).  Creating a row waits for another
 * transaction creating it, and everything that waits for shards
 * (hold_every_shard, and a call that found both of its shards busy while
 * its transaction held no shard of the key) waits in ascending shard
 * order: so a shard lower than one the transaction holds is not created
 * but left, as if busy.
 */
static bool
try_hold_shard(const RlTarget *target, int16 shard, RlHeld *held)
{
	RlRowKey	row = {target->name, target->key, shard};
	int			k = held->n;
	RlRowStatus status;

	status = rl_storage_lock_nowait(&row, false, &held->state[k],
									&held->tid[k]);
	if (status == RL_ROW_MISSING)
	{
		if (rl_held_highest(target->name, target->key, target->policy.shards) > shard)
			return false;
		if (create_full_row(target, &row))
			rl_held_note(target->name, target->key, shard);
		status = rl_storage_lock_nowait(&row, false, &held->state[k],
										&held->tid[k]);
	}
	if (status != RL_ROW_LOCKED)
		return false;
	rl_held_note(target->name, target->key, shard);
	held->shard[k] = shard;
	held->stored[k] = true;
	held->n++;
	return true;
}

/* A shard's tokens now, read without a lock; a missing row is full. */
static double
peek_shard(const RlTarget *target, const RlPolicy *policy, int16 shard,
		   TimestampTz now, bool *exists)
{
	RlRowKey	row = {target->name, target->key, shard};
	RlState		state;

	*exists = rl_storage_read(&row, &state);
	if (!*exists)
		return policy->capacity;
	return rl_refill(policy, target->origin, state, now).value;
}

/*
 * Hold the shards a call on a sharded limit decides on.  Of two shards
 * picked at random (or, the first time, the pair prefer names, when not
 * NULL), those with rows are tried first, the fuller first,
 * without waiting (SKIP LOCKED); a shard with no row is created only when
 * no existing one served, since creating a row waits for anyone creating
 * it too.  The second shard is taken only when the first cannot serve
 * count alone, so a call usually holds one row lock.  The call waits only
 * when both shards are busy, and never when its transaction already holds
 * a shard of the key: it then leaves both busy (decide_with_busy).
 */
static void
hold_shards(const RlTarget *target, double count, const int16 *prefer,
			RlHeld *held)
{
	RlPolicy	policy = row_policy(target);
	int			nshards = target->policy.shards;

	for (int attempt = 0;; attempt++)
	{
		int16		pick[2];
		bool		exists[2];
		double		value[2];
		bool		defer[2];
		bool		tried[2] = {false, false};
		TimestampTz now = rl_clock_now();
		RlRowKey	row = {target->name, target->key, 0};

		check_attempts(attempt);
		held->n = 0;
		held->nbusy = 0;
		if (attempt == 0 && prefer != NULL)
		{
			pick[0] = prefer[0];
			pick[1] = prefer[1];
		}
		else
		{
			pick[0] = (int16) random_below(nshards);
			pick[1] = (int16) ((pick[0] + 1 + random_below(nshards - 1)) % nshards);
		}
		value[0] = peek_shard(target, &policy, pick[0], now, &exists[0]);
		value[1] = peek_shard(target, &policy, pick[1], now, &exists[1]);
		if (value[1] > value[0])
		{
			int16		swap = pick[0];
			bool		swap_exists = exists[0];
			double		swap_value = value[0];

			pick[0] = pick[1];
			exists[0] = exists[1];
			value[0] = value[1];
			pick[1] = swap;
			exists[1] = swap_exists;
			value[1] = swap_value;
		}

		/*
		 * Rows that exist first, then the rest in shard order; stop once
		 * one serves.  Creating a row waits for another transaction
		 * creating it, so a call never creates a shard lower than one it
		 * holds (try_hold_shard): an existing shard that cannot serve
		 * alone, by its committed state, waits for the second pass when
		 * the other shard is missing and lower.
		 */
		for (int i = 0; i < 2; i++)
			defer[i] = exists[i] && !exists[1 - i] &&
				pick[1 - i] < pick[i] && value[i] < count;
		for (int pass = 0; pass < 2; pass++)
		{
			for (int j = 0; j < 2; j++)
			{
				int			i = (pass == 1 && pick[1] < pick[0]) ? 1 - j : j;

				if (tried[i] || (pass == 0 && (!exists[i] || defer[i])))
					continue;
				tried[i] = true;
				if (try_hold_shard(target, pick[i], held) && held->n == 1 &&
					rl_refill(&policy, target->origin, held->state[0],
							  rl_clock_now()).value >= count)
					return;
			}
		}
		if (held->n == 1)
		{
			held->nbusy = 1;
			held->busy[0] = held->shard[0] == pick[0] ? pick[1] : pick[0];
			return;
		}
		if (held->n == 2)
			return;

		/*
		 * Both busy.  A transaction that holds a shard of this key (an
		 * earlier call) must not wait for another: a transaction holding
		 * the one it waits for could be waiting for one it holds.
		 */
		rl_stats_both_shards_busy();
		if (rl_held_highest(target->name, target->key, target->policy.shards) >= 0)
		{
			held->nbusy = 2;
			held->busy[0] = pick[0];
			held->busy[1] = pick[1];
			return;
		}

		/*
		 * Otherwise wait for the fuller one.  When it cannot serve count
		 * alone, the other is taken without waiting, as above, or left
		 * busy, so that the answer minds both (decide_hold): waiting for
		 * the second too could deadlock with a call holding it.
		 */
		row.shard = pick[0];
		if (rl_storage_lock(&row, &held->state[0], &held->tid[0]))
		{
			rl_held_note(target->name, target->key, pick[0]);
			held->shard[0] = pick[0];
			held->stored[0] = true;
			held->n = 1;
			if (rl_refill(&policy, target->origin, held->state[0],
						  rl_clock_now()).value < count &&
				!try_hold_shard(target, pick[1], held))
			{
				held->nbusy = 1;
				held->busy[0] = pick[1];
			}
			return;
		}
	}
}

/*
 * Hold the rows a call decides on, all of them existing and locked: the
 * one row of an unsharded limit, or one or two shards of a sharded one
 * (prefer: see hold_shards).
 */
static void
hold_rows(const RlTarget *target, double count, const int16 *prefer,
		  RlHeld *held)
{
	RlRowKey	row = {target->name, target->key, 0};

	if (target->policy.shards > 1)
	{
		hold_shards(target, count, prefer, held);
		return;
	}
	held->nbusy = 0;
	for (int attempt = 0;; attempt++)
	{
		check_attempts(attempt);
		held->n = 1;
		held->shard[0] = 0;
		held->stored[0] = true;
		if (rl_storage_lock(&row, &held->state[0], &held->tid[0]))
			return;
		create_full_row(target, &row);
	}
}

/* A consuming call deciding from state read without a lock. */
typedef struct UnlockedCall
{
	RlTarget   *target;
	double		count;
	bool		reserve;
	RlAnswer   *answer;
	bool		granted;		/* decide_shard_alone: the shard served */
	int16		pair[2];		/* consume_shards_unlocked: the two fullest
								 * probed shards, when only they together
								 * could serve; else -1 */
} UnlockedCall;

/*
 * Decide a call on one row (an unsharded limit's, or one shard serving a
 * call alone) from its state read without a lock: write only a grant.
 * The definition is read again, as after a lock: opening the table may
 * have waited (see recheck_definition).
 */
static bool
decide_unlocked_row(UnlockedCall *call, const RlState *state, RlState *write)
{
	RlHeld		held;

	held.n = 1;
	held.nbusy = 0;
	held.shard[0] = 0;
	held.stored[0] = true;
	held.state[0] = *state;
	recheck_definition(call->target, call->count, call->reserve);
	decide_held(call->target, &held, call->count, call->reserve, call->answer);
	call->granted = call->answer->ok;
	if (!call->answer->ok || !call->answer->write[0])
		return false;
	*write = call->answer->state[0];
	return true;
}

/* rl_storage_consume's decide for an unsharded limit. */
static bool
decide_unlocked(const RlState *state, void *arg, RlState *write)
{
	return decide_unlocked_row(arg, state, write);
}

/*
 * rl_storage_consume's decide for one shard of a sharded limit: grant
 * only when the shard serves the call alone (as hold_shards takes one
 * shard when it can), and lock_first is false; otherwise write nothing
 * and leave the answer to consume_shards_unlocked.  state is kept in seen.
 */
typedef struct ShardProbe
{
	UnlockedCall *call;
	bool		lock_first;		/* only look: the shard is to be locked
								 * without waiting before it is written */
	RlState		seen;
	bool		serves;			/* its tokens cover the count alone */
} ShardProbe;

static bool
decide_shard_alone(const RlState *state, void *arg, RlState *write)
{
	ShardProbe *probe = arg;
	UnlockedCall *call = probe->call;
	RlPolicy	policy = row_policy(call->target);

	probe->seen = *state;
	probe->serves = rl_refill(&policy, call->target->origin, *state,
							  rl_clock_now()).value >= call->count;
	call->granted = false;
	if (!probe->serves || probe->lock_first)
		return false;
	return decide_unlocked_row(call, state, write);
}

/* The most shards a sharded call probes before it takes the locking path. */
#define RL_SHARD_PROBES 8

/* The fullest of the probes p with want[p], or -1. */
static int
fullest_probe(const RlTarget *target, const RlState *seen, const bool *want,
			  int probes, int except)
{
	RlPolicy	policy = row_policy(target);
	TimestampTz now = rl_clock_now();
	int			best = -1;
	double		best_value = 0;

	for (int p = 0; p < probes; p++)
	{
		double		v;

		if (!want[p] || p == except)
			continue;
		v = rl_refill(&policy, target->origin, seen[p], now).value;
		if (best < 0 || v > best_value)
		{
			best = p;
			best_value = v;
		}
	}
	return best;
}

/* What probing the shards of a sharded limit came to. */
typedef enum ShardProbeResult
{
	PROBE_DECIDED,				/* answered (and written when granted) */
	PROBE_HELD,					/* one shard that serves alone is held */
	PROBE_LOCK					/* take the locking path (hold_shards) */
} ShardProbeResult;

/* What locking a shard that looked as if it served the call alone found. */
typedef enum ShardTake
{
	TAKE_HELD,					/* locked, and it serves alone */
	TAKE_SHORT,					/* locked, but it no longer serves alone */
	TAKE_BUSY					/* another transaction holds it (or is
								 * creating it, or it is lower than a shard
								 * the transaction holds and missing) */
} ShardTake;

/*
 * The lowest shard of a key with no row above every shard the transaction
 * holds of it (held.c), or -1 when there is none.
 */
static int
lowest_missing_shard(const RlTarget *target)
{
	int			nshards = target->policy.shards;
	RlState    *states = palloc(sizeof(RlState) * nshards);
	bool	   *found = palloc(sizeof(bool) * nshards);
	int			shard = rl_held_highest(target->name, target->key, target->policy.shards) + 1;

	rl_storage_read_shards(target->name, target->key, nshards, states, found);
	while (shard < nshards && found[shard])
		shard++;
	pfree(states);
	pfree(found);
	return shard < nshards ? shard : -1;
}

/*
 * Lock, without waiting, a shard that by its state read without a lock
 * could serve count alone.  TAKE_HELD leaves it in held (n = 1); after
 * TAKE_SHORT the locked state is in *locked and held is empty again, the
 * shard staying locked (it is noted as the transaction's, held.c).
 *
 * A shard that had no row (missing) is full, as is every missing shard:
 * the lowest missing one above those the transaction holds is created
 * instead.  So a transaction creates a key's shards in ascending order,
 * and one that already holds a shard of the key can still create every
 * missing shard it comes to need (try_hold_shard never creates one lower
 * than a shard held).
 */
static ShardTake
take_serving_shard(const RlTarget *target, int16 shard, bool missing,
				   double count, RlHeld *held, RlState *locked)
{
	RlPolicy	policy = row_policy(target);
	int16		probed = shard;

	held->n = 0;
	held->nbusy = 0;
	if (missing)
	{
		int			lowest = lowest_missing_shard(target);

		if (lowest < 0)
			return TAKE_BUSY;
		shard = (int16) lowest;
	}
	if (!try_hold_shard(target, shard, held))
		return TAKE_BUSY;
	if (rl_refill(&policy, target->origin, held->state[0],
				  rl_clock_now()).value >= count)
		return TAKE_HELD;
	held->n = 0;
	if (shard != probed)
		return TAKE_BUSY;		/* another call filled the gap and used it */
	*locked = held->state[0];
	return TAKE_SHORT;
}

/*
 * An order to try a sharded key's shards in: the shards the transaction
 * holds first (they are never busy for it), then the rest, each group in
 * random order.  Only the first max places are drawn; *nowned receives
 * how many of the shards are the transaction's.
 */
static int16 *
shard_order(const RlTarget *target, int max, int *nowned)
{
	int			nshards = target->policy.shards;
	int16	   *order = palloc(sizeof(int16) * nshards);
	int16	   *own = palloc(sizeof(int16) * max);
	int			nown = rl_held_shards(target->name, target->key, own, max);
	int			front = 0;

	for (int s = 0; s < nshards; s++)
		order[s] = (int16) s;
	for (int i = 0; i < nown; i++)
	{
		int16		shard = own[i];
		int			at = front;

		if (shard >= nshards)
			continue;			/* left over from a redefinition */
		while (order[at] != shard)
			at++;
		order[at] = order[front];
		order[front++] = shard;
	}
	/* a partial shuffle of each group */
	for (int p = 0; p < max && p < nshards; p++)
	{
		int			end = p < front ? front : nshards;
		int			k = p + random_below(end - p);
		int16		swap = order[k];

		order[k] = order[p];
		order[p] = swap;
	}
	pfree(own);
	*nowned = front;
	return order;
}

/*
 * A call on a sharded limit, decided without waiting: probe up to
 * RL_SHARD_PROBES shards, those the transaction already holds first, the
 * rest in random order, each read without a lock, and take the first
 * that serves the call alone and that nobody else holds: in one touch
 * (rl_storage_consume) when it can, else (the SQL path, a row changed
 * since it was read, a missing shard to create) by locking it without
 * waiting and deciding under the lock, which is then left to the caller
 * (PROBE_HELD).  A shard another transaction holds is passed over, so a
 * hot limit's calls spread over its free shards instead of queueing on
 * two.  Every shard is equally likely to be probed first, and the shards
 * probed after a busy one are random too, so no shard takes more than its
 * share of the calls the busy ones pass on.  Both paths probe the same
 * way and so give the same answers: the SQL path finds a shard busy by
 * failing to lock it, where the direct path sees its holder.
 *
 * When no probed shard could be taken, the call is refused without a lock
 * where hold_shards, holding a pair of the probed shards, would refuse it;
 * by their committed state, which holders can only have lowered:
 * - no probed shard serves alone, and the two fullest together cannot
 *   serve it either;
 * - the shards that serve alone are all busy, and a free one that cannot
 *   serve alone was probed: the answer decide_with_busy gives for that
 *   pair (retry_after zero when the pair could serve).
 * Otherwise (serving shards all busy, or a call two shards must share)
 * returns PROBE_LOCK, and the caller takes the locking path
 * (hold_shards), which may wait when the transaction holds no shard of
 * the key.  A call two shards must share tries the two fullest probed
 * first (call->pair): the pair rl_peek (rl_check) decides on when every
 * shard was probed, so that the call is not refused by a random pair
 * where rl_check said it would be granted.
 */
static ShardProbeResult
consume_shards_unlocked(UnlockedCall *call, RlHeld *held)
{
	const RlTarget *target = call->target;
	RlPolicy	policy = row_policy(target);
	int			nshards = target->policy.shards;
	int			probes = Min(nshards, RL_SHARD_PROBES);
	int			nowned;
	int16	   *order = shard_order(target, probes, &nowned);
	RlState		seen[RL_SHARD_PROBES];
	bool		busy_serves[RL_SHARD_PROBES];
	bool		free_short[RL_SHARD_PROBES];
	bool		any_busy_serves = false;
	bool		any_free_short = false;
	bool		decided = false;
	RlHeld		pair;
	int			a;
	int			b;

	for (int p = 0; p < probes; p++)
	{
		int16		shard = order[p];
		RlRowKey	row = {target->name, target->key, shard};
		ShardProbe	probe = {call};
		RlTryStatus status;

		/*
		 * A transaction holding a shard of the key writes another only
		 * once it has locked it without waiting: the one-touch write
		 * waits for a holder that locked the row after it was read.
		 */
		CHECK_FOR_INTERRUPTS();
		probe.lock_first = p >= nowned &&
			rl_held_highest(target->name, target->key, target->policy.shards) >= 0;
		status = rl_storage_consume(&row, decide_shard_alone, &probe);
		if (status == RL_TRY_DONE && probe.lock_first && probe.serves)
			status = RL_TRY_LOCK;
		if (status == RL_TRY_DONE && call->granted)
		{
			/* granted in one touch, which is then the lock */
			if (call->answer->write[0])
				rl_held_note(target->name, target->key, shard);
			pfree(order);
			return PROBE_DECIDED;
		}
		if (status == RL_TRY_MISSING)
		{
			/* a missing shard is full */
			check_answered(rl_initial_state(&policy, target->origin,
											rl_clock_now(), &probe.seen),
						   rl_clock_now());
			probe.serves = policy.capacity >= call->count;
		}
		if ((status == RL_TRY_MISSING || status == RL_TRY_LOCK) &&
			probe.serves)
		{
			switch (take_serving_shard(target, shard,
									   status == RL_TRY_MISSING, call->count,
									   held, &probe.seen))
			{
				case TAKE_HELD:
					pfree(order);
					return PROBE_HELD;
				case TAKE_SHORT:
					status = RL_TRY_DONE;	/* ours now, and short */
					probe.serves = false;
					break;
				case TAKE_BUSY:
					status = RL_TRY_BUSY;
					break;
			}
		}
		seen[p] = probe.seen;
		busy_serves[p] = status == RL_TRY_BUSY && probe.serves;
		free_short[p] = (status == RL_TRY_DONE || status == RL_TRY_MISSING) &&
			!probe.serves;
		any_busy_serves |= busy_serves[p];
		any_free_short |= free_short[p];
	}

	pair.nbusy = 0;
	pair.stored[0] = pair.stored[1] = true;
	if (!any_busy_serves)
	{
		/* none serves alone: would the two fullest together? */
		bool		every[RL_SHARD_PROBES];

		for (int p = 0; p < probes; p++)
			every[p] = true;
		a = fullest_probe(target, seen, every, probes, -1);
		b = fullest_probe(target, seen, every, probes, a);
		pair.n = 2;
		pair.shard[0] = order[a];
		pair.shard[1] = order[b];
		pair.state[0] = seen[a];
		pair.state[1] = seen[b];
		recheck_definition(call->target, call->count, call->reserve);
		decide_held(target, &pair, call->count, call->reserve, call->answer);
		decided = !call->answer->ok;
		if (!decided)
		{
			call->pair[0] = order[a];
			call->pair[1] = order[b];
		}
	}
	else if (any_free_short)
	{
		/* the pair of a free shard that cannot serve and a busy one */
		a = fullest_probe(target, seen, free_short, probes, -1);
		b = fullest_probe(target, seen, busy_serves, probes, -1);
		pair.n = 1;
		pair.shard[0] = order[a];
		pair.state[0] = seen[a];
		pair.nbusy = 1;
		pair.busy[0] = order[b];
		recheck_definition(call->target, call->count, call->reserve);
		decide_with_busy(target, &pair, call->count, call->reserve,
						 call->answer);
		decided = true;
	}
	pfree(order);
	if (decided)
		call->answer->write[0] = call->answer->write[1] = false;
	return decided ? PROBE_DECIDED : PROBE_LOCK;
}

/*
 * Consume from a limit.  An unsharded key with no row is created by the
 * granted call itself, in one statement; when another transaction creates
 * it first, the call locks that row instead.
 */
static void
consume_one(RlTarget *target, double count, bool reserve, RlAnswer *answer)
{
	RlRowKey	row = {target->name, target->key, 0};
	RlHeld		held;
	UnlockedCall call = {target, count, reserve, answer, false, {-1, -1}};

	if (target->policy.store == RL_STORE_MEMORY)
	{
		consume_memory(target, count, reserve, answer);
		return;
	}
	if (target->policy.shards > 1)
	{
		switch (consume_shards_unlocked(&call, &held))
		{
			case PROBE_DECIDED:
				return;
			case PROBE_HELD:
				break;
			case PROBE_LOCK:
				hold_rows(target, count, call.pair[0] >= 0 ? call.pair : NULL,
						  &held);
				break;
		}
		recheck_definition(target, count, reserve);
		decide_hold(target, &held, count, reserve, answer);
		if (answer->ok)
			write_held(&held, answer);
		return;
	}

	for (int attempt = 0;; attempt++)
	{
		RlTryStatus status;

		check_attempts(attempt);
		status = rl_storage_consume(&row, decide_unlocked, &call);
		if (status == RL_TRY_DONE)
		{
			if (answer->ok)
				rl_held_mark(target->name, target->key);
			return;
		}
		held.n = 1;
		held.shard[0] = 0;
		held.stored[0] = status != RL_TRY_MISSING &&
			rl_storage_lock(&row, &held.state[0], &held.tid[0]);
		if (held.stored[0])
			rl_held_mark(target->name, target->key);
		recheck_definition(target, count, reserve);
		decide_held(target, &held, count, reserve, answer);
		if (!answer->ok)
			return;
		if (held.stored[0])
		{
			write_held(&held, answer);
			return;
		}
		if (rl_storage_insert(&row, &answer->state[0]))
		{
			rl_held_mark(target->name, target->key);
			return;
		}
		/* another transaction created the row and committed: lock it */
	}
}

/*
 * Shadow mode: a refusal of a limit in shadow mode becomes a grant that
 * takes nothing (the state stays as the refusal left it, so the limit goes
 * on refusing exactly what an enforcing one would).  The answer keeps the
 * refusal's retry_after: a grant with a retry_after, without reserve, is
 * what tells the caller.  Resets the flags of the options first.
 */
static void
apply_shadow(const RlTarget *target, RlAnswer *answer)
{
	answer->shadowed = false;
	answer->blocked = false;
	if (answer->ok || !target->policy.shadow)
		return;
	answer->ok = true;
	answer->shadowed = true;
	answer->write[0] = answer->write[1] = false;
}

/*
 * block_for: a refused call blocks its key for that long from now, in the
 * caller's transaction (a rollback, or rl_enforce's error, undoes it, as
 * it would an rl_block).  A key already blocked (this option or rl_block)
 * is left as it is, read without a lock: calls refused during a block do
 * not lengthen it, and write nothing.  The answer then reports the block.
 */
static void
apply_block(RlTarget *target, double count, bool reserve, RlAnswer *answer)
{
	TimestampTz now;
	RlState		state;
	RlPolicy	policy;
	RlDecision	d;
	bool		blocked = true;

	if (answer->ok || target->policy.block_for <= 0)
		return;
	/* now read after the state, which rl_current brought forward to its now */
	state = rl_current(target);
	now = rl_clock_now();
	if (rl_state_is_blocked(&target->policy, target->origin, state, now))
		return;
	/* adjust_key escalates block_for by the key's offences, if set */
	state = adjust_key(target, RL_ADJUST_BLOCK, 0, target->policy.block_for,
					   &blocked);
	policy = row_policy(target);
	now = rl_clock_now();
	check_answered(rl_decide(&policy, target->origin, &state, now, count,
							 reserve, &d), now);
	if (d.ok)
		return;					/* can't happen: the block refuses count */
	answer->blocked = blocked;
	answer->has_retry = d.has_retry;
	answer->retry_after = d.retry_after;
	answer->remaining = d.remaining;
	answer->reset_after = d.reset_after;
}

/*
 * Count a decided call in the limit's statistics.  consumed: its tokens
 * were taken (false for a limit that granted inside an rl_limit_all call
 * another limit refused).
 */
static void
count_answer(const RlTarget *target, RlStatsCall *call, double count,
			 const RlAnswer *answer, bool consumed)
{
	call->values[RL_STAT_shadow_refused] = answer->shadowed;
	call->values[RL_STAT_blocks] = answer->blocked;
	if (!answer->ok)
	{
		rl_stats_record(target->label, call, RL_STATS_REFUSED, rl_clock_now());
		return;
	}
	/* a call shadow mode granted took nothing, and reserved nothing */
	if (consumed && !answer->shadowed)
	{
		call->values[RL_STAT_tokens] = count;
		if (answer->has_retry)
		{
			call->values[RL_STAT_reservations] = 1;
			call->values[RL_STAT_deepest_reservation] = -answer->remaining;
		}
	}
	rl_stats_record(target->label, call, RL_STATS_GRANTED, rl_clock_now());
}

/*
 * Consume count tokens from a limit whose policy is known, refusing a
 * count it can never grant, and count the call in its statistics.  final:
 * the answer is the call's own (granted, refused, or an error, whatever
 * raised it), and a refusal blocks its key under block_for.  Otherwise
 * (a waiting call's try, wait.c) only a grant or an error is the call's
 * answer: a refusal is neither counted nor blocks.
 */
static void
consume_counted(RlTarget *target, double count, bool reserve, bool final,
				RlAnswer *answer)
{
	RlStatsCall call = {{0}};
	RlStatsCall *callp = &call;

	if (!rl_stats_tracking())
	{
		rl_target_check_count(target, count, reserve);
		consume_one(target, count, reserve, answer);
		apply_shadow(target, answer);
		if (final)
			apply_block(target, count, reserve, answer);
		return;
	}
	rl_stats_attribute(callp);
	PG_TRY();
	{
		rl_target_check_count(target, count, reserve);
		consume_one(target, count, reserve, answer);
		apply_shadow(target, answer);
		if (final)
			apply_block(target, count, reserve, answer);
	}
	PG_CATCH();
	{
		rl_stats_record(target->label, callp, RL_STATS_ERROR, rl_clock_now());
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (final || answer->ok)
		count_answer(target, callp, count, answer, true);
	else
		rl_stats_attribute(NULL);
}

/* Consume count tokens from a limit: the call's answer (consume_counted). */
void
rl_consume(RlTarget *target, double count, bool reserve, RlAnswer *answer)
{
	consume_counted(target, count, reserve, true, answer);
}

/*
 * The same, for a try of a waiting call that goes on waiting when refused:
 * a refusal is not counted in rl_stats and does not block its key.
 */
void
rl_consume_try(RlTarget *target, double count, bool reserve,
			   RlAnswer *answer)
{
	consume_counted(target, count, reserve, false, answer);
}

/*
 * Whether waiting could ever grant the call while its transaction goes on:
 * false when the transaction's own pending takes on a memory key refuse it
 * even with the key otherwise full (they count until it commits).  A table
 * limit's own takes are in its row, which such a transaction holds and
 * does not wait on (wait.c).
 */
bool
rl_wait_can_grant(const RlTarget *target, double count, bool reserve)
{
	RlMemoryKey k;
	RlHeld		held;
	RlAnswer	answer;
	TimestampTz now;
	double		own;

	if (target->policy.store != RL_STORE_MEMORY)
		return true;
	memory_address(target, &k);
	own = rl_memory_own_pending(&k);
	if (own <= 0)
		return true;
	now = rl_clock_now();
	held.n = 1;
	held.stored[0] = true;
	check_answered(rl_initial_state(&target->policy, target->origin, now,
									&held.state[0]), now);
	held.state[0].value -= own;
	decide_held_at(target, &held, count, reserve, &answer, now);
	return answer.ok;
}

/* The refilled value of a shard, a missing one counting as full. */
static double
shard_value(const RlTarget *target, const RlPolicy *policy, bool found,
			RlState state, TimestampTz now)
{
	return found ? rl_refill(policy, target->origin, state, now).value :
		policy->capacity;
}

/* A sharded key's shards as peek read them, for rl_consume_all. */
typedef struct ShardsRead
{
	RlState    *states;
	bool	   *found;			/* false: no row (a full shard) */
	int16		pair[2];		/* the two fullest */
} ShardsRead;

/*
 * What rl_consume would answer, locking and writing nothing.  A sharded
 * limit answers as if the call had picked its two fullest shards; read,
 * when not NULL, receives what was read.
 */
static void
peek(const RlTarget *target, double count, bool reserve, RlAnswer *answer,
	 ShardsRead *read)
{
	RlHeld		held;
	int			nshards = target->policy.shards;

	if (target->policy.store == RL_STORE_MEMORY)
	{
		TimestampTz now = rl_clock_now();

		held.n = 1;
		held.stored[0] = true;
		held.state[0] = read_memory(target, now);
		decide_held_at(target, &held, count, reserve, answer, now);
		return;
	}
	if (nshards == 1)
	{
		RlRowKey	row = {target->name, target->key, 0};

		held.n = 1;
		held.stored[0] = rl_storage_read(&row, &held.state[0]);
	}
	else
	{
		RlPolicy	policy = row_policy(target);
		RlState    *states = palloc(sizeof(RlState) * nshards);
		bool	   *found = palloc(sizeof(bool) * nshards);
		TimestampTz now = rl_clock_now();
		int			best[2] = {-1, -1};
		double		value[2] = {0, 0};

		rl_storage_read_shards(target->name, target->key, nshards, states, found);
		for (int s = 0; s < nshards; s++)
		{
			double		v = shard_value(target, &policy, found[s], states[s], now);

			if (best[0] < 0 || v > value[0])
			{
				best[1] = best[0];
				value[1] = value[0];
				best[0] = s;
				value[0] = v;
			}
			else if (best[1] < 0 || v > value[1])
			{
				best[1] = s;
				value[1] = v;
			}
		}
		held.n = 2;
		for (int i = 0; i < 2; i++)
		{
			held.stored[i] = found[best[i]];
			held.state[i] = states[best[i]];
		}
		if (read != NULL)
		{
			read->states = states;
			read->found = found;
			read->pair[0] = (int16) best[0];
			read->pair[1] = (int16) best[1];
		}
	}
	decide_held(target, &held, count, reserve, answer);
}

/*
 * What rl_consume would answer, locking and writing nothing: shadow mode
 * included (a block is not: only a consuming call blocks).
 */
void
rl_peek(const RlTarget *target, double count, bool reserve, RlAnswer *answer)
{
	peek(target, count, reserve, answer, NULL);
	apply_shadow(target, answer);
}

/*
 * Hold the rows rl_consume_all decides on for one limit, whose shards, if
 * it has more than one, peek read (read).  Of the shards that by that read
 * serve the call alone, those the transaction holds first, the rest in
 * random order, up to RL_SHARD_PROBES are locked without waiting, and the
 * first that still serves is held.  Otherwise the two fullest are held
 * (hold_shards): the pair rl_check decides on, so that a call is granted
 * whenever rl_check says it would be, as a single call is.
 */
static void
hold_chosen_rows(const RlTarget *target, double count, const ShardsRead *read,
				 RlHeld *held)
{
	int			nshards = target->policy.shards;
	RlPolicy	policy = row_policy(target);
	TimestampTz now = rl_clock_now();
	int16	   *order;
	int			nowned;
	int			tries = 0;

	if (nshards == 1)
	{
		hold_rows(target, count, NULL, held);
		return;
	}
	order = shard_order(target, nshards, &nowned);
	for (int p = 0; p < nshards && tries < RL_SHARD_PROBES; p++)
	{
		int16		s = order[p];
		RlState		locked;

		CHECK_FOR_INTERRUPTS();
		if (shard_value(target, &policy, read->found[s], read->states[s],
						now) < count)
			continue;
		tries++;
		if (take_serving_shard(target, s, !read->found[s], count, held,
							   &locked) == TAKE_HELD)
		{
			pfree(order);
			return;
		}
	}
	pfree(order);
	hold_rows(target, count, read->pair, held);
}

/*
 * A limit's tokens brought forward to now: the sum over its shards.  For a
 * sliding window, what a call could take now (rl_available), counted in
 * the window that starts at ts.
 */
RlState
rl_current(const RlTarget *target)
{
	RlPolicy	policy = row_policy(target);
	int			nshards = target->policy.shards;
	RlState    *states = palloc(sizeof(RlState) * nshards);
	bool	   *found = palloc(sizeof(bool) * nshards);
	TimestampTz now = rl_clock_now();
	RlState		total;

	if (target->policy.store == RL_STORE_MEMORY)
	{
		RlState		stored = read_memory(target, now);

		total = rl_refill(&policy, target->origin, stored, now);
		total.value = rl_available(&policy, target->origin, stored, now);
		check_state_time(&total, now);
		return total;
	}
	rl_storage_read_shards(target->name, target->key, nshards, states, found);
	if (nshards == 1 && found[0])
	{
		total = rl_refill(&policy, target->origin, states[0], now);
		total.value = rl_available(&policy, target->origin, states[0], now);
	}
	else
	{
		check_answered(rl_initial_state(&policy, target->origin, now, &total),
					   now);
		total.value = 0;
		for (int s = 0; s < nshards; s++)
			total.value += shard_value(target, &policy, found[s], states[s], now);
	}
	check_state_time(&total, now);
	return total;
}

/*
 * Whether one stored row (one shard) of a target is idle: refilled to
 * full, so that deleting it changes no later decision (rl_gc).
 */
bool
rl_row_is_idle(const RlTarget *target, RlState state)
{
	RlPolicy	policy = row_policy(target);

	return rl_state_is_idle(&policy, target->origin, state, rl_clock_now());
}

/*
 * One stored row brought forward to now, for rl_status: its state, the
 * time until it is full again (token bucket) or its next window starts,
 * false for that time when it lies beyond the longest wait or past the
 * end of the timestamp range, and whether rl_gc would delete it.
 */
bool
rl_row_now(const RlTarget *target, RlState stored, RlState *current,
		   int64 *reset_after, bool *idle)
{
	RlPolicy	policy = row_policy(target);
	TimestampTz now = rl_clock_now();
	RlDecision	d = {0};
	RlStatus	status;

	*current = rl_refill(&policy, target->origin, stored, now);
	current->value = rl_available(&policy, target->origin, stored, now);
	*idle = rl_state_is_idle(&policy, target->origin, stored, now);
	status = rl_decide(&policy, target->origin, &stored, now, 0, false, &d);
	*reset_after = d.reset_after;
	return status == RL_DECIDED;
}

/* The canonical lock order: name, then the NULL key, then key. */
static int
compare_targets(const RlTarget *a, const RlTarget *b)
{
	int			c = rl_text_cmp(a->name, b->name);

	if (c != 0)
		return c;
	if (a->key_is_null != b->key_is_null)
		return a->key_is_null ? -1 : 1;
	return rl_text_cmp(a->key, b->key);
}

/*
 * qsort_arg order of indexes into a target array: canonical, and equal
 * targets by position, so a limit named twice merges into its first
 * occurrence, whose count a refusal reports.
 */
static int
compare_order(const void *a, const void *b, void *arg)
{
	const RlTarget *targets = arg;
	int			ia = *(const int *) a;
	int			ib = *(const int *) b;
	int			c = compare_targets(&targets[ia], &targets[ib]);

	return c != 0 ? c : (ia > ib) - (ia < ib);
}

/*
 * Consume from n limits (at most RL_MAX_LIMITS_PER_CALL), all or nothing.
 * Limits named more than once consume their counts summed.  Returns the
 * index of the refusing limit with the longest retry_after, or -1 when
 * every limit granted.  calls: where each limit's statistics gather, or
 * NULL when they are not tracked.
 */
static int	block_all(RlTarget *targets, double *total, int n, bool reserve,
					  RlAnswer *answers, const int *first, const int *order);

static int
consume_all(RlTarget *targets, double *counts, int n, bool reserve,
			RlAnswer *answers, const int *first, const int *order,
			RlStatsCall *calls)
{
	double	   *total = palloc0(sizeof(double) * n);
	RlHeld	   *held = palloc(sizeof(RlHeld) * n);
	ShardsRead *read = palloc0(sizeof(ShardsRead) * n);
	RlMemoryKey *mkeys = palloc(sizeof(RlMemoryKey) * n);
	int			nmemory = 0;
	int			refused = -1;

	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		rl_target_check_count(&targets[i], counts[i], reserve);
		total[first[i]] += counts[i];
	}

	/*
	 * A call its committed state refuses is refused without a lock, as a
	 * single limit's is (rl_storage_consume): each limit answers what
	 * rl_peek answers, the most a call could get from it, and holders can
	 * only have lowered that.
	 */
	for (int k = 0; k < n; k++)
	{
		int			i = order[k];

		CHECK_FOR_INTERRUPTS();
		if (first[i] != i)
			continue;
		rl_target_check_count(&targets[i], total[i], reserve);
		recheck_definition(&targets[i], total[i], reserve);
		peek(&targets[i], total[i], reserve, &answers[i], &read[i]);
		apply_shadow(&targets[i], &answers[i]);
		if (!answers[i].ok &&
			(refused < 0 || answers[i].retry_after > answers[refused].retry_after))
			refused = i;
	}
	if (refused >= 0)
	{
		refused = block_all(targets, total, n, reserve, answers, first, order);
		for (int i = 0; i < n; i++)
		{
			if (first[i] != i)
				answers[i] = answers[first[i]];
			else if (calls)
				count_answer(&targets[i], &calls[i], total[i], &answers[i],
							 false);
		}
		return refused;
	}

	/* lock in canonical order, then decide every limit */
	for (int k = 0; k < n; k++)
	{
		int			i = order[k];

		CHECK_FOR_INTERRUPTS();
		if (first[i] != i)
			continue;
		rl_target_check_count(&targets[i], total[i], reserve);
		if (targets[i].policy.store == RL_STORE_MEMORY)
		{
			memory_key(&targets[i], &mkeys[nmemory++]);
			continue;
		}
		if (calls)
			rl_stats_attribute(&calls[i]);
		hold_chosen_rows(&targets[i], total[i], &read[i], &held[i]);
	}
	if (calls)
		rl_stats_attribute(NULL);
	for (int k = 0; k < n; k++)
	{
		int			i = order[k];

		CHECK_FOR_INTERRUPTS();
		if (first[i] != i)
			continue;
		if (targets[i].policy.store == RL_STORE_MEMORY)
		{
			/*
			 * Holding the table rows may have waited: a memory limit is
			 * decided under its definition read after that, as a table
			 * limit is (shadow switched off, a capacity lowered).
			 */
			recheck_definition(&targets[i], total[i], reserve);
			if (targets[i].policy.store != RL_STORE_MEMORY)
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("rate limit \"%s\" was redefined while the call waited for its state",
								text_to_cstring(targets[i].label)),
						 errdetail("It no longer keeps its state in memory."),
						 errhint("Retry the transaction.")));
			continue;
		}
		recheck_definition(&targets[i], total[i], reserve);
		decide_hold(&targets[i], &held[i], total[i], reserve, &answers[i]);
		apply_shadow(&targets[i], &answers[i]);
		if (!answers[i].ok &&
			(refused < 0 || answers[i].retry_after > answers[refused].retry_after))
			refused = i;
	}

	/*
	 * Memory limits last, once every row is held and decided: their
	 * partitions are held from reading to taking, and nothing may wait
	 * for a row or read a table meanwhile.  A table write that fails
	 * later rolls the transaction back, which returns what they took.
	 */
	if (nmemory > 0)
	{
		TimestampTz now;
		int			m = 0;

		rl_memory_lock(mkeys, nmemory);
		now = rl_clock_now();
		for (int k = 0; k < n; k++)
		{
			int			i = order[k];

			if (first[i] != i || targets[i].policy.store != RL_STORE_MEMORY)
				continue;
			hold_memory(&targets[i], &mkeys[m++], now, &held[i]);
			decide_held_at(&targets[i], &held[i], total[i], reserve,
						   &answers[i], now);
			apply_shadow(&targets[i], &answers[i]);
			if (!answers[i].ok &&
				(refused < 0 || answers[i].retry_after > answers[refused].retry_after))
				refused = i;
		}
		m = 0;
		for (int k = 0; k < n && refused < 0; k++)
		{
			int			i = order[k];

			if (first[i] != i || targets[i].policy.store != RL_STORE_MEMORY)
				continue;
			if (answers[i].shadowed)
			{
				m++;
				continue;
			}
			rl_memory_take(&mkeys[m++], &targets[i].policy, targets[i].origin,
						   now, total[i], targets[i].memory_epoch);
		}
		rl_memory_unlock();
	}

	/* all or nothing, written in canonical order too */
	if (refused >= 0)
		refused = block_all(targets, total, n, reserve, answers, first, order);
	for (int k = 0; k < n; k++)
	{
		int			i = order[k];

		CHECK_FOR_INTERRUPTS();
		if (first[i] != i)
			answers[i] = answers[first[i]];
		else if (refused < 0 && targets[i].policy.store == RL_STORE_TABLE)
			write_held(&held[i], &answers[i]);
	}

	/*
	 * Counted only once every write is done: a write that fails makes the
	 * whole call one error for each limit (rl_consume_all), never a grant
	 * and an error.
	 */
	for (int i = 0; i < n && calls; i++)
		if (first[i] == i)
			count_answer(&targets[i], &calls[i], total[i], &answers[i],
						 refused < 0);
	return refused;
}

/*
 * block_for in a refused rl_limit_all call: each limit that refused by
 * itself blocks its key (apply_block), in canonical order.  Returns the
 * refusing limit with the longest retry_after once the blocks are known.
 */
static int
block_all(RlTarget *targets, double *total, int n, bool reserve,
		  RlAnswer *answers, const int *first, const int *order)
{
	int			refused = -1;

	for (int k = 0; k < n; k++)
	{
		int			i = order[k];

		if (first[i] != i || answers[i].ok)
			continue;
		apply_block(&targets[i], total[i], reserve, &answers[i]);
		if (refused < 0 || answers[i].retry_after > answers[refused].retry_after)
			refused = i;
	}
	return refused;
}

/*
 * Hold every shard of a sharded limit, creating missing ones full, waiting
 * for each in shard order: two calls that adjust the same key then queue
 * instead of deadlocking.  A call that already holds some of the shards
 * (an rl_limit earlier in its transaction) gets them at once.
 */
static void
hold_every_shard(const RlTarget *target, RlState *states, ItemPointerData *tids)
{
	int			nshards = target->policy.shards;

	for (int16 s = 0; s < nshards; s++)
	{
		RlRowKey	row = {target->name, target->key, s};

		for (int attempt = 0;; attempt++)
		{
			CHECK_FOR_INTERRUPTS();
			check_attempts(attempt);
			if (rl_storage_lock(&row, &states[s], &tids[s]))
				break;
			create_full_row(target, &row);
		}
		rl_held_note(target->name, target->key, s);
	}
}

/* One row's new state under a refund, penalty or block. */
static void
adjust_row(const RlPolicy *policy, int64 origin, RlAdjustment kind,
		   const RlState *state, TimestampTz now, double amount,
		   int64 duration, RlState *out)
{
	RlStatus	status = RL_DECIDED;

	switch (kind)
	{
		case RL_ADJUST_REFUND:
			status = rl_refund_state(policy, origin, state, now, amount, out);
			break;
		case RL_ADJUST_PENALIZE:
			status = rl_penalize_state(policy, origin, state, now, amount, out);
			break;
		case RL_ADJUST_BLOCK:
			status = rl_block_state(policy, origin, state, now, duration, out);
			break;
	}
	check_answered(status, now);
	check_state_time(out, now);
}

/*
 * rl_adjust on a memory limit.  A penalty is a take (at once, returned by
 * a rollback); a refund and a block change the key when the transaction
 * commits (memory.c), and the state returned is what they would leave if
 * nothing else happened first.
 */
static RlState
adjust_memory(RlTarget *target, RlAdjustment kind, double amount,
			  int64 duration, bool *blocked)
{
	RlMemoryKey k;
	RlState		state;
	RlState		next;
	TimestampTz now;

	memory_key(target, &k);
	if (kind == RL_ADJUST_PENALIZE)
	{
		rl_memory_lock(&k, 1);
		now = rl_clock_now();
		rl_memory_get(&k, &target->policy, target->origin, now, &state);
		adjust_row(&target->policy, target->origin, kind, &state, now, amount,
				   0, &next);
		rl_memory_take(&k, &target->policy, target->origin, now, amount,
					   target->memory_epoch);
		rl_memory_unlock();
		return next;
	}
	now = rl_clock_now();
	rl_memory_read(&k, &target->policy, target->origin, now, &state);
	if (blocked != NULL)
	{
		TimestampTz since;

		/*
		 * block_for: a block already pending in this transaction stands,
		 * and is what the call reports; one another transaction commits
		 * meanwhile is checked at commit.
		 */
		*blocked = !rl_memory_block_pending(&k, &since);
		/* the automatic block's length, escalated by the key's offences */
		duration = rl_escalated_block_for(&target->policy, &state, now);
		adjust_row(&target->policy, target->origin, kind, &state,
				   *blocked ? now : since, amount, duration, &next);
		if (*blocked)
			rl_memory_at_commit(&k, &target->policy, target->origin,
								RL_MEMORY_BLOCK_UNBLOCKED, 0, duration,
								target->memory_epoch);
		return next;
	}
	/* what this transaction's earlier refunds will give comes first */
	if (kind == RL_ADJUST_REFUND)
		state.value = fmin(state.value + rl_memory_own_refunds(&k),
						   target->policy.capacity);
	adjust_row(&target->policy, target->origin, kind, &state, now, amount,
			   duration, &next);
	rl_memory_at_commit(&k, &target->policy, target->origin,
						kind == RL_ADJUST_REFUND ? RL_MEMORY_REFUND : RL_MEMORY_BLOCK,
						amount, duration, target->memory_epoch);
	return next;
}

/*
 * Refund, penalize or block a key: hold its row (every shard of a sharded
 * limit), then compute each new state at a time read after the locks and
 * write them all, only once every one is known to be valid.  amount is
 * the count (refund, penalty), duration the block's length.  Returns the
 * key's state as rl_value would then report it.
 *
 * A sharded refund is spread over the shards in equal parts, none above
 * its own capacity; a penalty takes count / N from each shard, and a
 * block blocks each.
 */
RlState
rl_adjust(RlTarget *target, RlAdjustment kind, double amount, int64 duration)
{
	return adjust_key(target, kind, amount, duration, NULL);
}

/*
 * rl_adjust; for a block, blocked (when not NULL) asks for an automatic
 * block (block_for): a table limit's key that is blocked once its row is
 * held is left as it is (*blocked then receives false, and true when the
 * block was written), and the block lasts block_for escalated by the key's
 * offences (rl_escalated_block_for) rather than duration.
 */
static RlState
adjust_key(RlTarget *target, RlAdjustment kind, double amount, int64 duration,
		   bool *blocked)
{
	RlPolicy	policy;
	int			nshards = target->policy.shards;
	RlState    *states;
	RlState    *next;
	ItemPointerData *tids;
	TimestampTz now;
	RlState		total;

	if (target->policy.store == RL_STORE_MEMORY)
		return adjust_memory(target, kind, amount, duration, blocked);
	states = palloc(sizeof(RlState) * nshards);
	next = palloc(sizeof(RlState) * nshards);
	tids = palloc(sizeof(ItemPointerData) * nshards);
	if (nshards == 1)
	{
		RlHeld		held;

		hold_rows(target, amount, NULL, &held);
		states[0] = held.state[0];
		tids[0] = held.tid[0];
	}
	else
		hold_every_shard(target, states, tids);
	recheck_policy(target);
	policy = row_policy(target);
	now = rl_clock_now();

	/*
	 * A block another transaction wrote and committed while this one
	 * waited for the row: not lengthened (apply_block).
	 */
	if (blocked != NULL)
	{
		*blocked = !(nshards == 1 &&
					 rl_state_is_blocked(&policy, target->origin, states[0], now));
		if (!*blocked)
		{
			total = rl_refill(&policy, target->origin, states[0], now);
			check_state_time(&total, now);
			return total;
		}
		/* the automatic block's length, escalated by the key's offences */
		if (nshards == 1)
			duration = rl_escalated_block_for(&policy, &states[0], now);
	}

	if (kind == RL_ADJUST_REFUND && nshards > 1)
	{
		double	   *values = palloc(sizeof(double) * nshards);

		for (int s = 0; s < nshards; s++)
		{
			adjust_row(&policy, target->origin, kind, &states[s], now, 0, 0,
					   &next[s]);
			values[s] = next[s].value;
		}
		rl_refund_spread(policy.capacity, nshards, values, amount);
		for (int s = 0; s < nshards; s++)
			next[s].value = values[s];
	}
	else
	{
		for (int s = 0; s < nshards; s++)
			adjust_row(&policy, target->origin, kind, &states[s], now,
					   amount / nshards, duration, &next[s]);
	}

	for (int s = 0; s < nshards; s++)
		rl_storage_update(&tids[s], &next[s]);

	if (nshards == 1)
		return next[0];
	check_answered(rl_initial_state(&policy, target->origin, now, &total), now);
	total.value = 0;
	for (int s = 0; s < nshards; s++)
		total.value += rl_refill(&policy, target->origin, next[s], now).value;
	return total;
}

/*
 * rl_reset on a memory limit: the key is forgotten (full again) when the
 * transaction commits.  With a config, the target is resolved with it as
 * rl_limit resolves it (a defined name refuses it); without, only a
 * defined name's key is found here.  False for a table limit, whose rows
 * are deleted instead: target->name is then the stored name of the
 * config's rows, or, without one, the name as given.
 */
bool
rl_forget_memory(RlTarget *target, HeapTupleHeader config)
{
	RlPolicy	policy;
	RlMemoryKey k;

	if (config == NULL &&
		(!rl_definition_lookup(target->label, &policy) ||
		 policy.store != RL_STORE_MEMORY))
		return false;
	rl_target_resolve(target, config);
	if (target->policy.store != RL_STORE_MEMORY)
		return false;
	memory_key(target, &k);
	rl_memory_at_commit(&k, &target->policy, target->origin, RL_MEMORY_RESET,
						0, 0, target->memory_epoch);
	return true;
}

/*
 * Consume from n limits, all or nothing (see consume_all), and count the
 * call in each limit's statistics, once per limit however often named: a
 * limit that refused counts a refusal; one that would have granted counts
 * a grant, with its tokens only when the whole call was granted; on an
 * error, every limit of the call counts one.
 */
int
rl_consume_all(RlTarget *targets, double *counts, int n, bool reserve,
			   RlAnswer *answers)
{
	int		   *order = palloc(sizeof(int) * n);
	int		   *first = palloc(sizeof(int) * n);	/* index merged into */
	RlStatsCall *calls;
	int			refused = -1;

	/* canonical order */
	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_arg(order, n, sizeof(int), compare_order, targets);
	for (int k = 0; k < n; k++)
	{
		int			i = order[k];

		CHECK_FOR_INTERRUPTS();
		first[i] = (k > 0 && compare_targets(&targets[order[k - 1]], &targets[i]) == 0) ?
			first[order[k - 1]] : i;
	}

	if (!rl_stats_tracking())
		return consume_all(targets, counts, n, reserve, answers, first, order,
						   NULL);
	calls = palloc0(sizeof(RlStatsCall) * n);
	PG_TRY();
	{
		refused = consume_all(targets, counts, n, reserve, answers, first,
							  order, calls);
	}
	PG_CATCH();
	{
		TimestampTz now = rl_clock_now();

		for (int i = 0; i < n; i++)
			if (first[i] == i)
				rl_stats_record(targets[i].label, &calls[i], RL_STATS_ERROR, now);
		rl_stats_attribute(NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return refused;
}
