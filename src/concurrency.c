/*-------------------------------------------------------------------------
 *
 * concurrency.c
 *	  Concurrency limits: at most N holders of a (name, key) at once.
 *
 * Permits (rl_acquire) live in PostgreSQL's lock manager.  A limit of N
 * permits is N lock tags, slots 0 .. N-1 of the (name, key); taking a
 * permit is taking a free slot's lock, ExclusiveLock, without waiting, as
 * a transaction-level advisory lock is taken.  The lock manager then does
 * the rest: the permit goes when the transaction commits or rolls back,
 * when a savepoint it was taken under is rolled back, and when the backend
 * dies.  Taking one writes no row, assigns no transaction id and writes no
 * WAL.  Slots are tried from a random one onwards, so a key with free
 * permits is usually served at the first try.  A slot this transaction
 * already holds is another call's permit: it is passed over, not counted
 * twice.  A call that cannot take every permit it asked for gives back the
 * ones it took and is refused; with wait, it tries again after a sleep
 * that grows from 1 ms to 50 ms, until the wait is over (a lock wait on
 * one slot would queue behind a holder while another slot is free).
 *
 * The tags hash the name and the key (32 bits each).  Two keys whose
 * hashes collide share their permits: that can refuse a call that would
 * have been granted, never grant one beyond a limit.
 *
 * Leases (rl_lease) outlive the transaction, so they are rows of
 * rl_leases.  A call takes the key's lease lock (another tag, held until
 * its transaction ends), so leases of one key are taken one transaction at
 * a time; it then counts, with a fresh snapshot, the permits of the key's
 * leases neither released nor expired, and stores a new lease when the
 * limit has room.  Expiry is decided by the clock (ratelimit.now_override
 * included); a lease nobody released simply stops counting.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/hashfn.h"
#include "common/int.h"
#include "common/pg_prng.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "clock.h"
#include "compat.h"
#include "concurrency.h"
#include "definitions.h"
#include "storage.h"

/* The longest and shortest sleep between tries of a waiting rl_acquire. */
#define RETRY_SLEEP_MIN_MS	1
#define RETRY_SLEEP_MAX_MS	50

/* The 32-bit hash of a name or a key ('' for the NULL key) in lock tags. */
uint32
rl_lock_hash(text *t)
{
	return DatumGetUInt32(hash_any((const unsigned char *) VARDATA_ANY(t),
								   VARSIZE_ANY_EXHDR(t)));
}

/* The lock tag of one of a target's permit slots, or of its lease lock. */
static void
target_tag(const RlTarget *target, uint16 field4, LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, rl_lock_hash(target->name),
						 rl_lock_hash(target->key), field4);
}

/*
 * Resolve a target that must be a concurrency limit of the given kind:
 * its definition, or 42704; 42809 for a limit of another kind.
 */
void
rl_target_require_concurrency(const RlTarget *target, RlKind kind)
{
	const char *name = text_to_cstring(target->name);

	if (!target->defined)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist", name),
				 errhint("Define it with rl_define_concurrency().")));
	if (target->policy.kind == kind)
		return;
	if (!RL_KIND_IS_CONCURRENCY(target->policy.kind))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("rate limit \"%s\" is not a concurrency limit", name),
				 errhint("Call rl_limit() for a %s limit.",
						 rl_kind_name(target->policy.kind))));
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("concurrency limit \"%s\" is taken with %s", name,
					target->policy.kind == RL_CONCURRENCY ?
					"rl_acquire()" : "rl_lease()"),
			 errdetail("Its definition says %s.",
					   target->policy.kind == RL_CONCURRENCY ?
					   "permits held until the transaction ends" :
					   "leases held until released or expired")));
}

/* Refuse a number of permits the limit can never grant. */
void
rl_check_permits(const RlTarget *target, int32 permits)
{
	if (permits < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("permits must be at least 1"),
				 errdetail("permits is %d.", permits)));
	if (permits > target->policy.capacity)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("permits exceed the limit of concurrency limit \"%s\"",
						text_to_cstring(target->name)),
				 errdetail("The call asked for %d permits; the limit is %g.",
						   permits, target->policy.capacity)));
}

/*
 * Look the definition up again (it may have changed between tries or
 * while the call waited for a lock): still a concurrency limit of the same
 * kind, with room for the permits asked for.
 */
static void
refresh_target(RlTarget *target, int32 permits)
{
	RlKind		kind = target->policy.kind;

	target->defined = rl_definition_lookup(target->name, &target->policy);
	if (!target->defined)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist",
						text_to_cstring(target->name)),
				 errdetail("It was undefined while the call waited.")));
	rl_target_require_concurrency(target, kind);
	rl_check_permits(target, permits);
}

/* Release the permit slots taken[0 .. n - 1] of a target. */
static void
release_slots(const RlTarget *target, const uint16 *taken, int n)
{
	LOCKTAG		tag;

	for (int i = 0; i < n; i++)
	{
		target_tag(target, RL_LOCK_PERMIT_FIELD4 + taken[i], &tag);
		LockRelease(&tag, ExclusiveLock, false);
	}
}

/*
 * Whether a slot is held by a transaction (this one included), found
 * without waiting and without keeping it.
 */
static bool
slot_held(const RlTarget *target, int slot)
{
	LOCKTAG		tag;
	LockAcquireResult r;

	target_tag(target, RL_LOCK_PERMIT_FIELD4 + slot, &tag);
	r = LockAcquire(&tag, ExclusiveLock, false, true);
	if (r == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ExclusiveLock, false);
	return r != LOCKACQUIRE_OK;
}

/*
 * One try: take permits free slots, or none.  A slot this transaction
 * already holds is passed over (the lock manager only counted us twice).
 *
 * Slots run from 0 to the number of permits.  After the permits were
 * lowered, holders from before may still sit in slots up to the highest
 * number the limit had (kept in the policy's max_reserved): then every
 * slot is counted, those above included, and permits are granted only
 * while all holders together stay within the new number.  Last, the
 * definition is looked at again: a change committed meanwhile (whose
 * holders of higher slots this call could not have seen) refuses the try.
 */
static bool
try_permits(const RlTarget *target, int32 permits)
{
	int			n = (int) target->policy.capacity;
	int			hi = target->policy.has_max_reserved ?
		(int) target->policy.max_reserved : n;
	int			start = (int) pg_prng_uint64_range(&pg_global_prng_state, 0, n - 1);
	uint16	   *taken = palloc(sizeof(uint16) * permits);
	int			got = 0;
	int			held = 0;
	RlPolicy	now;
	LOCKTAG		tag;

	for (int i = 0; i < n && (got < permits || hi > n); i++)
	{
		uint16		slot = (uint16) ((start + i) % n);
		LockAcquireResult r;

		target_tag(target, RL_LOCK_PERMIT_FIELD4 + slot, &tag);
		if (got == permits)
		{
			held += slot_held(target, slot) ? 1 : 0;
			continue;
		}
		r = LockAcquire(&tag, ExclusiveLock, false, true);
		if (r == LOCKACQUIRE_NOT_AVAIL)
		{
			held++;
			continue;
		}
		if (r != LOCKACQUIRE_OK)
		{
			LockRelease(&tag, ExclusiveLock, false);
			held++;
			continue;
		}
		taken[got++] = slot;
	}
	for (int slot = n; slot < hi && got == permits; slot++)
	{
		CHECK_FOR_INTERRUPTS();
		held += slot_held(target, slot) ? 1 : 0;
	}
	if (got == permits && (hi == n || held + got <= n) &&
		rl_definition_lookup(target->name, &now) &&
		now.capacity == target->policy.capacity &&
		now.has_max_reserved == target->policy.has_max_reserved &&
		now.max_reserved == target->policy.max_reserved)
	{
		pfree(taken);
		return true;
	}
	release_slots(target, taken, got);
	pfree(taken);
	return false;
}

/*
 * Take permits of a concurrency limit until the transaction ends; false
 * when they are not free within wait_usecs (0: one try).  The wait sleeps
 * between tries and answers cancels and statement_timeout.
 */
bool
rl_permits_acquire(const RlTarget *target, int32 permits, int64 wait_usecs)
{
	RlTarget	current = *target;
	TimestampTz deadline;
	long		sleep_ms = RETRY_SLEEP_MIN_MS;

	if (try_permits(&current, permits))
		return true;
	if (wait_usecs <= 0)
		return false;
	deadline = GetCurrentTimestamp() + wait_usecs;
	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		long		left_ms;

		if (now >= deadline)
			return false;
		left_ms = (long) ((deadline - now + 999) / 1000);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(sleep_ms, left_ms), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		sleep_ms = Min(sleep_ms * 2, RETRY_SLEEP_MAX_MS);
		refresh_target(&current, permits);
		if (try_permits(&current, permits))
			return true;
	}
}

/*
 * Take a lease of permits for ttl microseconds: true with its id, false
 * when the limit has no room now.  Needs rl_storage_begin_writing.
 */
bool
rl_lease_take(const RlTarget *target, int32 permits, int64 ttl, Datum *id)
{
	RlTarget	current = *target;
	LOCKTAG		tag;
	TimestampTz now;
	TimestampTz expires;

	target_tag(&current, RL_LOCK_LEASE_FIELD4, &tag);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	refresh_target(&current, permits);

	now = rl_clock_now();
	if (pg_add_s64_overflow(now, ttl, &expires) || expires >= END_TIMESTAMP)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("lease would expire after the end of the timestamp range")));
	if (rl_storage_lease_held(current.name, current.key, now) + permits >
		current.policy.capacity)
		return false;
	*id = rl_storage_lease_insert(current.name, current.key, permits, now,
								  expires);
	return true;
}
