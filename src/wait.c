/*-------------------------------------------------------------------------
 *
 * wait.c
 *	  rl_limit(..., wait => interval): a refused call that would be granted
 *	  within the wait sleeps, holding no row lock, and takes its tokens
 *	  then.
 *
 * A refusal's retry_after is exact: the call would be granted at that
 * time if nothing else took the tokens meanwhile.  So a waiting call
 * sleeps exactly that long and tries again, until it is granted, or the
 * next retry_after falls past the end of its wait (then it is refused, at
 * once, without sleeping through a wait that cannot succeed).
 *
 * No row lock is held while sleeping.  The limit is first asked without a
 * lock (rl_peek): while it refuses, the call sleeps.  When it says yes,
 * the call tries to consume (rl_consume_try); a memory limit holds nothing
 * after a refusal, and a table limit's try runs in a subtransaction of its
 * own: if another transaction took the tokens first, the refusal came
 * from the locked row, and rolling the subtransaction back releases that
 * lock.  Such a lost race is not a refusal: the call goes back to waiting
 * for the next retry_after, and the try is neither counted in rl_stats nor
 * blocks the key (block_for).
 *
 * Only when the wait cannot end in a grant is the call refused: it then
 * consumes as a call without wait does (rl_consume), and that answer is
 * the call's own: counted once, and blocking its key under block_for like
 * any refusal.  A transaction that already holds the key's row (it took
 * from the key before, table store) does not wait at all: it would sleep
 * holding the lock every other caller of the key needs.  On the memory
 * store, a transaction whose own pending takes refuse the call even with
 * the key otherwise full does not wait either: nothing but its end can
 * give those back.
 *
 * A call that is granted within its wait was never refused, so block_for
 * blocks only a call whose wait ran out.  Shadow mode grants at once.  The
 * wait is real time (ratelimit.now_override does not move while
 * sleeping), never longer than lock_timeout when that is set, and a
 * cancel or statement_timeout interrupts it as any statement.  Waiters of
 * one key are not queued: each wakes at its retry_after, and the first to
 * take the tokens has them (docs/policies.md measures how fair that is).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "held.h"
#include "limit.h"
#include "storage.h"
#include "wait.h"

/*
 * Sleep until real time until (at most), answering cancels and
 * statement_timeout.
 */
static void
sleep_until(TimestampTz until)
{
	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		long		ms;

		if (now >= until)
			return;
		ms = (long) ((until - now + 999) / 1000);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Whether a try's refusal (it blocked nothing) is worth waiting for:
 * granted, if nothing else takes the tokens, at or before deadline.  Sets
 * *until to that time.
 */
static bool
worth_waiting(const RlAnswer *answer, TimestampTz deadline, TimestampTz *until)
{
	TimestampTz now = GetCurrentTimestamp();

	if (answer->ok || !answer->has_retry ||
		answer->retry_after > deadline - now)
		return false;
	*until = now + answer->retry_after;
	return true;
}

/*
 * Try to consume inside a subtransaction: kept when granted; rolled back
 * when refused, releasing the row lock the refusal may hold (the call
 * then waits again, or is refused by a consuming call of its own).  An
 * error rolls it back and goes on up.
 */
static void
try_in_subtransaction(RlTarget *target, double count, bool reserve,
					  RlAnswer *answer)
{
	MemoryContext caller = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	rl_storage_connect();
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(caller);
	PG_TRY();
	{
		rl_consume_try(target, count, reserve, answer);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(caller);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(caller);
		CurrentResourceOwner = owner;
		ReThrowError(edata);
	}
	PG_END_TRY();
	if (answer->ok)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(caller);
	CurrentResourceOwner = owner;
}

/*
 * Consume count tokens, waiting up to wait microseconds (> 0) of real
 * time for them.  Each try is either a grant, the call's answer, or a
 * refusal that is not counted and blocks nothing (rl_peek's, or a lost
 * race's); when no sleep can end in a grant, the call's own answer is
 * rl_consume's: counted, and blocking its key under block_for.
 */
void
rl_consume_waiting(RlTarget *target, double count, bool reserve, int64 wait,
				   bool blocks, RlAnswer *answer)
{
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz deadline = start + wait;
	TimestampTz until;
	bool		slept = false;

	if (LockTimeout > 0)
		deadline = Min(deadline, start + (int64) LockTimeout * 1000);

	for (;;)
	{
		/*
		 * After a sleep, the definition in force now: a memory limit holds
		 * nothing a change would wait for, so the call would otherwise
		 * decide under the policy it read before sleeping (a lowered rate
		 * or capacity, shadow mode switched off, granted as before).
		 * Shadow mode grants at once, as the lists answer at once.  A transaction holding the key's row
		 * (table store) must not sleep on it: every other caller of the key
		 * would wait for it too (a row a rolled-back try locked is not
		 * held).
		 */
		if (slept)
			rl_target_recheck(target, count, reserve);
		if (target->policy.shadow || (!slept && rl_may_hold(target)) ||
			rl_target_listed(target))
			break;
		slept = true;
		rl_target_check_count(target, count, reserve);
		rl_peek(target, count, reserve, answer);
		if (answer->ok)
		{
			if (target->store->locks_rows)
				try_in_subtransaction(target, count, reserve, answer);
			else
				rl_consume_try(target, count, reserve, answer);
			if (answer->ok)
				return;
		}
		if (!worth_waiting(answer, deadline, &until) ||
			!rl_wait_can_grant(target, count, reserve))
			break;
		sleep_until(until);
	}
	/* no use waiting: the call's own answer (counted, blocking) */
	rl_consume(target, count, reserve, blocks, answer);
}
