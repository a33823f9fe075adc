/*-------------------------------------------------------------------------
 *
 * memory_xact.c
 *	  What a transaction has pending in the memory store, and what commit
 *	  and abort make of it: takes pending at once, refunds, blocks and
 *	  resets queued for commit, what is owed when a definition changed
 *	  meanwhile (owe, catch_up, fold_owed), and the transaction,
 *	  subtransaction and resource-release callbacks.
 *
 * A call takes its tokens at once: the entry's pending grows and the entry
 * is pinned (holders), so it is never dropped while the transaction runs.
 * Each change is noted in this backend's list (mem_changes), with the
 * subtransaction that made it, the policy its call decided under and the
 * epoch it read before that policy.  At commit each change becomes part
 * of the committed state (finish_change); at abort, or a rollback to a
 * savepoint, it is undone: a take leaves pending, the rest is dropped.
 * A change whose policy may be stale (policy_in_force: a definition change
 * committed or is committing since its epoch) is not applied under it: it
 * is owed, and lands under the policy of whoever reads the entry.
 *
 * Locking.
 * - The change list is this backend's own: no lock.
 * - A take is made with its partition held by the call (rl_memory_lock);
 *   rl_memory_at_commit pins its entry under the partition itself, so
 *   that commit, where nothing may fail, finds it.
 * - Commit and abort take each change's partition on its own, exclusively,
 *   one at a time, and hold nothing else meanwhile; they must not fail, so
 *   they neither allocate nor raise under it.  An abort first forgets the
 *   partitions the failed call held (mem_forget_held): LWLockReleaseAll
 *   already let go of them.
 * - A transaction that changed a definition takes every partition once
 *   before commit (mem_epoch_barrier, memory_names.c) and again after
 *   (mem_finish_names), one at a time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "clock.h"
#include "memory_internal.h"

MemChange  *mem_changes = NULL;
int			mem_nchanges = 0;
static int	maxchanges = 0;
bool		mem_names_changed = false;

/*
 * Whether the policy a change of this transaction (or a call) read is the
 * one in force, its partition held: an inline policy never changes;
 * otherwise no definition change may have committed or be committing
 * since the epoch it read before its policy (mem_epoch_barrier orders the
 * check against a change becoming visible).  On a hot standby a replayed
 * change bumps no epoch, nor does a hand edit while rl_definitions'
 * trigger is disabled: there the policy read counts as in force (or every
 * commit would be owed, and never folded).
 */
static bool
policy_in_force(MemShared *s, const MemEntry *e, uint64 epoch)
{
	return e->is_inline || RecoveryInProgress() ||
		epoch == RL_MEMORY_EPOCH_UNTRACKED ||
		(epoch != PG_UINT64_MAX &&
		 epoch == pg_atomic_read_u64(&mem_epoch_of(s, e->dbid)->epoch) &&
		 pg_atomic_read_u32(&mem_epoch_of(s, e->dbid)->changing) == 0);
}

/* Fold what is owed into the committed state, under the policy in force. */
static void
fold_owed(MemEntry *e, const RlPolicy *policy, int64 origin)
{
	if (e->owed == 0)
		return;
	e->committed = mem_landed(e, policy, origin);
	e->owed = 0;
}

/* Something owed, committed at at, under a policy that may be stale. */
static void
owe(MemEntry *e, double amount, TimestampTz at)
{
	e->owed += amount;
	e->owed_at = Max(e->owed_at, at);
	e->untouched = false;
}

/*
 * A take or refund that commits after a definition change: the committed
 * state first brought forward to the call's time under the policy the call
 * decided under, as the table store wrote the row at the time of the call
 * (a take committed after a rate was raised lands from the time of the
 * take, never refilling at the new rate the time before it), whether or
 * not a change was already committing at the call.  At commit only: a
 * call that rolls back leaves the state as it was, as the table store's
 * rollback does.
 */
static void
catch_up(MemEntry *e, const MemChange *c)
{
	if (e->committed.ts < c->at)
		e->committed = rl_refill(&c->policy, c->origin, e->committed, c->at);
}

/* Room for one more change of this transaction, before anything changes. */
MemChange *
mem_next_change(void)
{
	if (mem_nchanges >= maxchanges)
	{
		int			n = Max(16, maxchanges * 2);

		if (mem_changes == NULL)
			mem_changes = MemoryContextAlloc(TopMemoryContext, sizeof(MemChange) * n);
		else
			mem_changes = repalloc(mem_changes, sizeof(MemChange) * n);
		maxchanges = n;
	}
	memset(&mem_changes[mem_nchanges], 0, sizeof(MemChange));
	return &mem_changes[mem_nchanges];
}

/* Note a change, and pin its key's entry when it has one. */
static void
add_change(MemChangeKind kind, const RlMemoryKey *k, const RlPolicy *policy,
		   int64 origin, TimestampTz now, double amount, int64 duration,
		   uint64 epoch)
{
	MemChange  *c = mem_next_change();

	c->kind = kind;
	c->subid = GetCurrentSubTransactionId();
	c->key = *k;
	if (policy)
		c->policy = *policy;
	c->origin = origin;
	c->at = now;
	c->amount = amount;
	c->duration = duration;
	c->epoch = epoch;
	mem_nchanges++;
}

/*
 * Take count tokens, granted at now on the state rl_memory_get returned
 * (the partition still held): seen by every session at once, final at
 * commit, returned by a rollback.  epoch: rl_memory_epoch before the
 * policy was read.
 *
 * A take of nothing still brings an entry's committed state to now under
 * policy, when that is known to be in force, as a table limit's row is
 * written by a penalty of 0: a plan move settles a key so under its old
 * policy, which the new one must not then refill for the time before the
 * move.  Under the same policy no reader sees a difference: each brings
 * the state forward to its own time first, and a commit of a take that
 * finds the state moved past its window takes it at commit, which never
 * leaves more (rl_commit_take).
 */
void
rl_memory_take(const RlMemoryKey *k, const RlPolicy *policy, int64 origin,
			   TimestampTz now, double count, uint64 epoch)
{
	MemShared  *s = mem_store();
	MemEntry   *e;

	Assert(mem_holds(k->partition));
	if (count <= 0)
	{
		e = mem_entry_find(s, k->id, k->bucket, NULL);
		if (e != NULL && policy_in_force(s, e, epoch))
		{
			fold_owed(e, policy, origin);
			if (e->committed.ts < now)
				e->committed = rl_refill(policy, origin, e->committed, now);
		}
		return;
	}
	(void) mem_next_change();
	e = mem_entry_pin(s, k, policy, origin, now, epoch);
	if (policy_in_force(s, e, epoch))
		fold_owed(e, policy, origin);
	e->pending += count;
	mem_hold_note(e, policy, now, false);
	add_change(CHANGE_TAKE, k, policy, origin, now, count, 0, epoch);
}

/* Change a key when the transaction commits (refund, block, reset). */
void
rl_memory_at_commit(const RlMemoryKey *k, const RlPolicy *policy,
					int64 origin, RlMemoryLater what, double amount,
					int64 duration, uint64 epoch)
{
	MemShared  *s = mem_store();
	MemChangeKind kind = (what == RL_MEMORY_REFUND ||
						  what == RL_MEMORY_RETURN) ? CHANGE_REFUND :
		what == RL_MEMORY_RESET ? CHANGE_RESET : CHANGE_BLOCK;

	(void) mem_next_change();
	/* after an 'empty' crash a key with no entry is not full: pin one */
	if (kind != CHANGE_RESET || s->empty_since != 0)
	{
		MemEntry   *e;
		RlState		blocked;

		/* the entry is there to change at commit, where nothing may fail */
		rl_memory_lock(k, 1);
		if (kind == CHANGE_REFUND &&
			mem_entry_find(s, k->id, k->bucket, NULL) == NULL)
		{
			/* a key with no entry is full: a refund changes nothing */
			rl_memory_unlock();
			return;
		}
		e = mem_entry_pin(s, k, policy, origin, rl_clock_now(), epoch);

		/*
		 * A block: what it would store, for an immediate shutdown that
		 * saves the entry still held (mem_state_dump).
		 */
		if (kind == CHANGE_BLOCK &&
			rl_block_state(policy, origin, &e->committed, rl_clock_now(),
						   duration, &blocked) == RL_DECIDED)
		{
			e->block_held = true;
			blocked.value = fmin(blocked.value, e->committed.value - e->pending);
			mem_hold_note(e, policy, blocked.ts, false);
			e->judged = Max(e->judged,
							(uint64) mem_refill_bound(policy, blocked.value));
		}
		rl_memory_unlock();
	}
	add_change(kind, k, policy, origin, rl_clock_now(), amount, duration,
			   epoch);
	mem_changes[mem_nchanges - 1].unblocked_only =
		what == RL_MEMORY_BLOCK_UNBLOCKED || what == RL_MEMORY_RETURN;
	mem_changes[mem_nchanges - 1].pinned = kind == CHANGE_RESET && s->empty_since != 0;

}

/*
 * Whether this transaction has a block of the key pending (one that a
 * rollback to a savepoint has not dropped), and since when: block_for
 * does not queue a second one.
 */
bool
rl_memory_block_pending(const RlMemoryKey *k, TimestampTz *at)
{
	for (int i = 0; i < mem_nchanges; i++)
		if (mem_changes[i].kind == CHANGE_BLOCK &&
			memcmp(mem_changes[i].key.id, k->id, RL_MEMORY_ID_BYTES) == 0)
		{
			*at = mem_changes[i].at;
			return true;
		}
	return false;
}

/* The amounts of this transaction's changes of a kind to the key. */
static double
own_amount(const RlMemoryKey *k, MemChangeKind kind)
{
	double		own = 0;

	for (int i = 0; i < mem_nchanges; i++)
		if (mem_changes[i].kind == kind &&
			memcmp(mem_changes[i].key.id, k->id, RL_MEMORY_ID_BYTES) == 0)
			own += mem_changes[i].amount;
	return own;
}

/*
 * What this transaction has taken from the key and not yet committed (a
 * rollback to a savepoint has dropped its takes).
 */
double
rl_memory_own_pending(const RlMemoryKey *k)
{
	return own_amount(k, CHANGE_TAKE);
}

/*
 * What this transaction's refunds of the key will give at commit (a
 * rollback to a savepoint has dropped its refunds).
 */
double
rl_memory_own_refunds(const RlMemoryKey *k)
{
	return own_amount(k, CHANGE_REFUND);
}

/*
 * An entry's idle_at once no transaction holds it, under the policy of the
 * change that let go of it, in the epoch that change read before its
 * policy (mem_droppable).
 */
static void
set_idle_at(MemEntry *e, const MemChange *c, TimestampTz now)
{
	int64		at;

	if (e->holders > 0)
	{
		mem_hold_note(e, &c->policy, now, false);
		return;
	}
	e->pending = 0;
	e->block_held = false;
	e->idle_at = rl_idle_at(&c->policy, c->origin, e->committed, now, &at) ?
		Max(at, mem_empty_refilled_at(mem_shared, &c->policy)) : MEM_NEVER;
	/*
	 * On a standby a replayed definition change bumps no epoch, so a
	 * judgement made there would stay fresh after a promotion: never.
	 */
	e->judged = RecoveryInProgress() ? PG_UINT64_MAX : c->epoch;
}

/* Make one change final (commit) or undo it (abort); must not fail. */
static void
finish_change(const MemChange *c, bool commit, TimestampTz now)
{
	MemShared  *s = mem_shared;
	LWLock	   *lock = &s->locks[c->key.partition].lock;
	int32	   *link;
	MemEntry   *e;
	RlState		next;

	if (c->kind == CHANGE_NAME)
		return;					/* memory_release_callback */
	if (c->kind == CHANGE_RESET && !commit && !c->pinned)
		return;
	LWLockAcquire(lock, LW_EXCLUSIVE);
	e = mem_entry_find(s, c->key.id, c->key.bucket, &link);
	if (e == NULL)
	{
		/* a reset's key with no entry; anything else was pinned */
		LWLockRelease(lock);
		return;
	}
	switch (c->kind)
	{
		case CHANGE_TAKE:
			/*
			 * The take enters the committed state before it leaves the
			 * pending amount: a backend killed in between (an immediate
			 * shutdown) leaves it counted twice in the state file, never
			 * lost.
			 */
			if (commit && policy_in_force(s, e, c->epoch))
			{
				fold_owed(e, &c->policy, c->origin);
				e->committed = rl_commit_take(&c->policy, c->origin,
											  e->committed, c->at, now,
											  c->amount);
				e->untouched = false;
			}
			else if (commit)
			{
				catch_up(e, c);
				owe(e, c->amount, now);
			}
			pg_compiler_barrier();
			e->pending -= c->amount;
			e->holders--;
			break;
		case CHANGE_REFUND:
			e->holders--;
			if (!commit)
				break;
			/* a settlement's return never lifts a block (rl_adjust_state) */
			if (c->unblocked_only &&
				rl_state_is_blocked(&c->policy, c->origin, e->committed, now))
				break;
			if (!policy_in_force(s, e, c->epoch))
			{
				catch_up(e, c);
				owe(e, -c->amount, now);
				break;
			}
			fold_owed(e, &c->policy, c->origin);
			if (rl_refund_state(&c->policy, c->origin, &e->committed, now,
								c->amount, &next) == RL_DECIDED)
			{
				e->committed = next;
				e->untouched = false;
			}
			break;
		case CHANGE_BLOCK:
			e->holders--;
			if (commit && policy_in_force(s, e, c->epoch))
				fold_owed(e, &c->policy, c->origin);
			if (commit &&
				!(c->unblocked_only &&
				  rl_state_is_blocked(&c->policy, c->origin, e->committed,
									  now)) &&
				rl_block_state(&c->policy, c->origin, &e->committed, c->at,
							   c->duration, &next) == RL_DECIDED)
			{
				e->committed = next;
				e->untouched = false;
			}
			break;
		case CHANGE_RESET:
			if (c->pinned)
			{
				/*
				 * After an 'empty' crash a missing key counts as emptied at
				 * the restart: the key is kept, full (set_idle_at keeps it
				 * until a missing key would be full too).
				 */
				e->holders--;
				if (commit &&
					rl_initial_state(&c->policy, c->origin, now,
									 &next) == RL_DECIDED)
				{
					e->committed = next;
					e->owed = 0;
					e->untouched = false;
				}
				break;
			}
			if (e->holders == 0)
			{
				mem_entry_remove(s, link);
				LWLockRelease(lock);
				return;
			}
			mem_missing_state(s, &c->policy, c->origin, now, &next);
			e->committed = next;
			e->owed = 0;
			e->untouched = true;
			break;
		case CHANGE_NAME:
			break;
	}
	set_idle_at(e, c, now);
	LWLockRelease(lock);
}

/* Forget this transaction's changes. */
static void
clear_changes(void)
{
	mem_names_clear();
	mem_nchanges = 0;
	mem_names_changed = false;
}

void
memory_xact_callback(XactEvent event, void *arg)
{
	TimestampTz now;

	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (mem_nchanges > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that used a memory rate limit"),
						 errdetail("Memory limits, and changes to how they are defined, are not kept in a prepared transaction.")));
			break;
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			if (mem_names_changed)
				mem_epoch_barrier();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			/* a transaction that took nothing from the store: no clock */
			if (mem_nchanges > 0)
			{
				now = rl_clock_now();
				for (int i = 0; i < mem_nchanges; i++)
					finish_change(&mem_changes[i], true, now);
			}
			if (!mem_names_changed)
				clear_changes();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			mem_forget_held();	/* LWLockReleaseAll let go */
			if (mem_nchanges > 0)
			{
				now = rl_clock_now();
				for (int i = mem_nchanges - 1; i >= 0; i--)
					finish_change(&mem_changes[i], false, now);
			}
			clear_changes();
			break;
		default:
			break;
	}
}

void
memory_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	TimestampTz now;

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			mem_forget_held();
			now = rl_clock_now();
			while (mem_nchanges > 0 && mem_changes[mem_nchanges - 1].subid == mySubid)
			{
				mem_nchanges--;
				finish_change(&mem_changes[mem_nchanges], false, now);
			}
			mem_names_changed = false;
			for (int i = 0; i < mem_nchanges; i++)
				if (mem_changes[i].kind == CHANGE_NAME)
					mem_names_changed = true;
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			for (int i = mem_nchanges - 1; i >= 0 && mem_changes[i].subid == mySubid; i--)
				mem_changes[i].subid = parentSubid;
			break;
		default:
			break;
	}
}

/* Changed definitions at commit, once their invalidation is sent. */
void
memory_release_callback(ResourceReleasePhase phase, bool isCommit,
						bool isTopLevel, void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel || !mem_names_changed)
		return;
	if (isCommit)
		mem_finish_names();
	clear_changes();
}
