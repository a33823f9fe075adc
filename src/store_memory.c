/*-------------------------------------------------------------------------
 *
 * store_memory.c
 *	  The memory store as store.h's operations: a key's state is an entry
 *	  in shared memory (memory.c), taken at once and returned by a
 *	  rollback, written to no table.
 *
 * Locking: a call reads, decides and takes under the key's partition lock
 * (rl_memory_lock), which nothing in between waits on: no table is read,
 * no row lock taken and no definition looked up while it is held.  So a
 * call's definition is read again before the lock (rl_target_reread),
 * and the epoch it read the policy at goes with every take (memory.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "clock.h"
#include "definitions.h"
#include "memory.h"
#include "storage.h"
#include "store.h"

/*
 * The address of a memory limit's key: in this database and this install
 * of the extension (its rl_definitions, which DROP and CREATE EXTENSION
 * replace).
 */
static void
memory_address(const RlTarget *target, RlMemoryKey *k)
{
	rl_memory_key(rl_definitions_relid(), target->name, target->key,
				  k);
}

/* The same, for a call that changes the key: its epoch known. */
static void
memory_key(RlTarget *target, RlMemoryKey *k)
{
	memory_address(target, k);
	if (target->epoch != PG_UINT64_MAX)
		return;

	/*
	 * The store was not attached when the policy was read (a backend's first
	 * memory call, not preloaded): read the epoch now, then the definition
	 * again, so that the policy is never older than the epoch (memory.c).
	 */
	rl_target_reread_epoch(target);
}

/*
 * One memory limit, its partition held (rl_memory_lock): the state to
 * decide on, read at now.
 */
static void
hold_memory(const RlTarget *target, const RlMemoryKey *k, RlHeld *held)
{
	held->n = 1;
	held->nbusy = 0;
	held->shard[0] = 0;
	held->stored[0] = true;
	held->now = rl_clock_now();
	rl_memory_get(k, &target->policy, target->origin, held->now,
				  &held->state[0]);
}

/*
 * A consuming call on a memory limit: read, decide and take under its
 * partition, which nothing in between waits on.
 */
static void
memory_consume(RlTarget *target, double count, bool reserve,
			   RlAnswer *answer)
{
	RlMemoryKey k;
	RlHeld		held;

	memory_key(target, &k);
	rl_memory_lock(&k, 1);
	hold_memory(target, &k, &held);
	rl_decide_held(target, &held, count, reserve, answer);
	if (answer->ok)
		rl_memory_take(&k, &target->policy, target->origin, held.now,
					   answer->granted, target->epoch);
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

/* The entry rl_consume would decide on, read without its lock. */
static void
memory_peek(const RlTarget *target, RlHeld *held)
{
	held->n = 1;
	held->nbusy = 0;
	held->stored[0] = true;
	held->store_data = NULL;
	held->now = rl_clock_now();
	held->state[0] = read_memory(target, held->now);
}

/*
 * A memory limit's tokens brought forward to now.  For a sliding window,
 * what a call could take now (rl_available).
 */
static RlState
memory_current(const RlTarget *target)
{
	RlPolicy	policy = target->policy;
	TimestampTz now = rl_clock_now();
	RlState		stored = read_memory(target, now);
	RlState		total;

	total = rl_refill(&policy, target->origin, stored, now);
	total.value = rl_available(&policy, target->origin, stored, now);
	rl_check_state_time(&total, now);
	return total;
}

/*
 * Whether waiting could ever grant the call while its transaction goes on:
 * false when the transaction's own pending takes on the key refuse it
 * even with the key otherwise full (they count until it commits).
 */
static bool
memory_wait_can_grant(const RlTarget *target, double count, bool reserve)
{
	RlMemoryKey k;
	RlHeld		held;
	RlAnswer	answer;
	double		own;

	memory_address(target, &k);
	own = rl_memory_own_pending(&k);
	if (own <= 0)
		return true;
	held.n = 1;
	held.stored[0] = true;
	held.now = rl_clock_now();
	rl_check_status(rl_initial_state(&target->policy, target->origin,
									 held.now, &held.state[0]), held.now);
	held.state[0].value -= own;
	rl_decide_held(target, &held, count, reserve, &answer);
	return answer.ok;
}

/* A memory limit holds no lock across calls. */
static bool
memory_may_hold(const RlTarget *target)
{
	return false;
}

/* rl_limit_all: the key's address, its epoch known (store.h). */
static void
memory_hold(RlTarget *target, double count, RlHeld *held)
{
	RlMemoryKey *k = palloc(sizeof(RlMemoryKey));

	memory_key(target, k);
	held->store_data = k;
}

/* rl_limit_all: the partitions of every memory limit of the call. */
static void
memory_lock(RlHeld *const *held, int n)
{
	RlMemoryKey *keys = palloc(sizeof(RlMemoryKey) * Max(n, 1));

	for (int i = 0; i < n; i++)
		keys[i] = *(RlMemoryKey *) held[i]->store_data;
	rl_memory_lock(keys, n);
	pfree(keys);
}

/* rl_limit_all: decide one memory limit under its partition. */
static void
memory_decide(const RlTarget *target, RlHeld *held, double count,
			  bool reserve, RlAnswer *answer)
{
	hold_memory(target, held->store_data, held);
	rl_decide_held(target, held, count, reserve, answer);
}

/* rl_limit_all: take what was decided, under the partition still held. */
static void
memory_write(const RlTarget *target, const RlHeld *held, double count,
			 const RlAnswer *answer)
{
	rl_memory_take(held->store_data, &target->policy, target->origin,
				   held->now, count, target->epoch);
}

static void
memory_unlock(void)
{
	rl_memory_unlock();
}

/*
 * rl_adjust on a memory limit (rl_adjust_key).  A penalty, a charge or a
 * move is a take (at once, returned by a rollback) of what it decided under
 * the key's partition, a charge counting this transaction's queued returns
 * as the table store's row holds them.  A move's amount is what the key
 * held under its old policy, this transaction's refunds counted, read by
 * the caller (the entry is read under the policy in force); those refunds
 * land after the move, so it keeps that less them, and a take since the
 * read only lowers what it keeps.  A refund, a return and a block change
 * the key when the transaction commits (memory.c), and the state returned
 * is what they would leave if nothing else happened first.
 */
static RlState
memory_adjust(RlTarget *target, RlAdjustment kind, double amount,
			  int64 duration, bool *blocked, double *charged)
{
	RlMemoryKey k;
	RlState		state;
	RlState		next;
	TimestampTz now;
	double		took;

	memory_key(target, &k);
	if (kind == RL_ADJUST_PENALIZE || kind == RL_ADJUST_CHARGE ||
		kind == RL_ADJUST_MOVE)
	{
		rl_memory_lock(&k, 1);
		now = rl_clock_now();
		rl_memory_get(&k, &target->policy, target->origin, now, &state);
		/* a charge counts what this transaction's returns will give */
		if (kind == RL_ADJUST_CHARGE)
			state.value = fmin(state.value + rl_memory_own_refunds(&k),
							   target->policy.capacity);
		/* ... and a move leaves room for them */
		if (kind == RL_ADJUST_MOVE)
			amount -= rl_memory_own_refunds(&k);
		rl_adjust_state(&target->policy, target->origin, kind, &state, now, amount,
				   0, &next, &took);
		/* the entry is read as stored: what the move takes is from now's */
		if (kind == RL_ADJUST_MOVE)
			took = rl_refill(&target->policy, target->origin, state,
							 now).value - next.value;
		rl_memory_take(&k, &target->policy, target->origin, now, took,
					   target->epoch);
		rl_memory_unlock();
		if (charged != NULL)
			*charged = took;
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
		rl_adjust_state(&target->policy, target->origin, kind, &state,
				   *blocked ? now : since, amount, duration, &next, &took);
		if (*blocked)
			rl_memory_at_commit(&k, &target->policy, target->origin,
								RL_MEMORY_BLOCK_UNBLOCKED, 0, duration,
								target->epoch);
		return next;
	}
	/* what this transaction's earlier refunds will give comes first */
	if (kind == RL_ADJUST_REFUND || kind == RL_ADJUST_RETURN)
		state.value = fmin(state.value + rl_memory_own_refunds(&k),
						   target->policy.capacity);
	rl_adjust_state(&target->policy, target->origin, kind, &state, now, amount,
			   duration, &next, &took);
	rl_memory_at_commit(&k, &target->policy, target->origin,
						kind == RL_ADJUST_REFUND ? RL_MEMORY_REFUND :
						kind == RL_ADJUST_RETURN ? RL_MEMORY_RETURN : RL_MEMORY_BLOCK,
						amount, duration, target->epoch);
	return next;
}


/*
 * rl_reset: the key is forgotten (full again) when the transaction
 * commits.  An inline config's key is found by its config alone, so
 * every_inline finds only the name's own key.
 */
static void
memory_reset(RlTarget *target, bool every_inline)
{
	RlMemoryKey k;

	memory_key(target, &k);
	rl_memory_at_commit(&k, &target->policy, target->origin, RL_MEMORY_RESET,
						0, 0, target->epoch);
}

static uint64
memory_reset_inline(text *name, text *key)
{
	return 0;
}

/*
 * A definition needs the store (the library preloaded); an inline config
 * needs ratelimit.inline_memory too.
 */
static void
memory_check_use(bool inline_config)
{
	if (inline_config)
		rl_memory_check_inline();
	else
		rl_memory_require();
}

const RlStoreOps rl_memory_store = {
	.name = "memory",
	.writes_table = false,
	.locks_rows = false,
	.check_use = memory_check_use,
	.peek = memory_peek,
	.current = memory_current,
	.consume = memory_consume,
	.wait_can_grant = memory_wait_can_grant,
	.may_hold = memory_may_hold,
	.hold = memory_hold,
	.lock = memory_lock,
	.decide = memory_decide,
	.write = memory_write,
	.unlock = memory_unlock,
	.adjust = memory_adjust,
	.reset = memory_reset,
	.reset_inline = memory_reset_inline,
};
