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
 * Redefinitions.  Slots are numbered per definition, so a holder from
 * before a change sits in a slot the new definition may not look at: after
 * 2 permits became 1, the holder of slot 1 and a newcomer in slot 0 would
 * be two.  So every call also takes the name's lock (one more tag, the
 * name alone) in ShareLock until its transaction ends, and reads the
 * definition after it has it; a change that could leave more holders than
 * the new definition allows (lowering, undefining, another kind or name)
 * takes it in ExclusiveLock first, and so waits, as a lock waits, for
 * every transaction holding permits of the name to end, while new calls
 * are refused (they do not wait in the lock manager: a call with wait
 * tries again after its sleep).  Raising waits for no one: every holder
 * is then in a slot the new definition counts.  rl_define_concurrency and
 * rl_undefine do this before they write, and the row trigger on
 * rl_definitions for any change, by hand too (a TRUNCATE, for every name).
 * A transaction that holds permits of a name cannot lower or drop it: it
 * would wait for itself.  Leases are rows and count whatever the
 * definition, so a lease limit lowered counts the leases taken before;
 * rl_undefine keeps the held ones (they count again if the name is defined
 * once more), and a name cannot become a limit of permits while leases of
 * it are held, since rl_acquire does not read rl_leases.  rl_lease takes
 * the name's lock too (waiting for it), so that a change waits for leases
 * being taken to commit before it looks at them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "common/pg_prng.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/rel.h"
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

/*
 * ratelimit.max_lease_ttl, in minutes: the longest lease rl_lease grants.
 * rl_lease is granted to PUBLIC, and a lease holds permits of a key others
 * share until it expires, so how long is the superuser's choice (per role
 * with ALTER ROLE ... SET), not the caller's.
 */
#define MAX_LEASE_TTL_DEFAULT_MIN	(24 * 60)	/* 1 day */
#define MAX_LEASE_TTL_MAX_MIN	((int) (RL_MAX_PERIOD / USECS_PER_MINUTE))
static int	max_lease_ttl_min = MAX_LEASE_TTL_DEFAULT_MIN;

/* Define ratelimit.max_lease_ttl; from _PG_init. */
void
rl_concurrency_init(void)
{
	DefineCustomIntVariable("ratelimit.max_lease_ttl",
							"Sets the longest ttl rl_lease accepts.",
							"A lease holds permits of a key until it expires; a longer ttl is refused.",
							&max_lease_ttl_min,
							MAX_LEASE_TTL_DEFAULT_MIN,
							1,
							MAX_LEASE_TTL_MAX_MIN,
							PGC_SUSET,
							GUC_UNIT_MIN,
							NULL, NULL, NULL);
}

/*
 * Refuse a lease ttl (in microseconds, and the interval argument it came
 * from) longer than ratelimit.max_lease_ttl.
 */
void
rl_lease_check_ttl(int64 ttl, Datum ttl_arg)
{
	if (ttl <= (int64) max_lease_ttl_min * USECS_PER_MINUTE)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("ttl exceeds ratelimit.max_lease_ttl"),
			 errdetail("The ttl is %s; ratelimit.max_lease_ttl is %s.",
					   DatumGetCString(DirectFunctionCall1(interval_out, ttl_arg)),
					   GetConfigOptionByName("ratelimit.max_lease_ttl", NULL, false)),
			 errhint("A lease holds permits of a key others share. A superuser can allow longer leases, for one role with ALTER ROLE ... SET ratelimit.max_lease_ttl.")));
}

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

/* The lock tag of a name's definition lock. */
static void
name_tag(text *name, LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, rl_lock_hash(name), 0,
						 RL_LOCK_NAME_FIELD4);
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
 * Slots run from 0 to the number of permits.  A definition may also say
 * that holders sit in slots up to a higher number (max_reserved, which
 * 1.2 kept when it lowered the permits without waiting for the holders,
 * and which a hand edit may still set): then every slot is counted, those
 * above included, and permits are granted only while all holders together
 * stay within the permits.  Last, the definition is looked at again: a
 * change committed meanwhile (by a 1.2 library in another backend, which
 * does not take the name's lock) refuses the try.
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
 * One try under the name's lock: none while a change of the definition
 * holds it or waits for it; else the newest definition, read again now
 * that no change that matters can commit, and a try of its slots.  The
 * name's lock is kept with the permits, and given back without them (a
 * transaction that already held it keeps it).
 */
static bool
try_under_name(RlTarget *target, int32 permits)
{
	LOCKTAG		tag;

	name_tag(target->name, &tag);
	if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	refresh_target(target, permits);
	if (try_permits(target, permits))
		return true;
	LockRelease(&tag, ShareLock, false);
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

	if (try_under_name(&current, permits))
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
		if (try_under_name(&current, permits))
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

	name_tag(current.name, &tag);
	(void) LockAcquire(&tag, ShareLock, false, false);
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

/*
 * The slots a definition counts the holders of: its permits, or up to
 * max_reserved, which 1.2 kept on a lowered definition of permits (see
 * try_permits); for leases, the permits.
 */
static double
slots_in_use(const RlPolicy *policy)
{
	if (policy->kind == RL_CONCURRENCY && policy->has_max_reserved)
		return Max(policy->capacity, policy->max_reserved);
	return policy->capacity;
}

/*
 * What a change of a definition, from before under before_name to after
 * under after_name (either NULL: none), must do before it commits.  When
 * before was a concurrency limit, and after is not the same one counting
 * at least the slots before counted, take the name's lock in
 * ExclusiveLock, waiting for every transaction holding its permits (or
 * taking its leases) to end; in a transaction holding permits of it,
 * refuse rather than wait for itself.  When after is a limit of permits
 * and before was not, refuse while leases of the name are held.  nspid is
 * the extension's schema.
 */
void
rl_concurrency_definition_change(Oid nspid, text *before_name,
								 const RlPolicy *before, text *after_name,
								 const RlPolicy *after)
{
	bool		same = before != NULL && after != NULL &&
		rl_text_equal(before_name, after_name) &&
		before->kind == after->kind;

	if (before != NULL && RL_KIND_IS_CONCURRENCY(before->kind) &&
		!(same && slots_in_use(after) >= slots_in_use(before)))
	{
		LOCKTAG		tag;

		name_tag(before_name, &tag);
		if (before->kind == RL_CONCURRENCY &&
			compat_lock_held_by_me(&tag, ShareLock))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cannot change concurrency limit \"%s\" while this transaction holds its permits",
							text_to_cstring(before_name)),
					 errdetail("A change that lowers or drops the limit waits until every transaction holding its permits has ended."),
					 errhint("Change it in a transaction that has not called rl_acquire() on it.")));
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	}
	if (after != NULL && after->kind == RL_CONCURRENCY && !same)
	{
		int64		held = rl_storage_name_leases_held(nspid, after_name,
													   rl_clock_now());

		if (held > 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("concurrency limit \"%s\" still has leases held",
							text_to_cstring(after_name)),
					 errdetail("Leases of the name hold %lld permits until released or expired, and permits held until the transaction ends would not count them.",
							   (long long) held),
					 errhint("Release them with rl_release(), wait until their ttl passes, or use another name.")));
	}
}

/* The name and, as far as concurrency cares, the policy of a row. */
static text *
definition_row(HeapTuple tuple, TupleDesc desc, RlPolicy *policy)
{
	bool		isnull;
	Datum		name = heap_getattr(tuple, SPI_fnumber(desc, "name"), desc,
									&isnull);
	Datum		kind = heap_getattr(tuple, SPI_fnumber(desc, "kind"), desc,
									&isnull);
	Datum		d;

	if (!rl_kind_parse(TextDatumGetCString(kind), &policy->kind))
		policy->kind = RL_TOKEN_BUCKET;
	d = heap_getattr(tuple, SPI_fnumber(desc, "capacity"), desc, &isnull);
	policy->capacity = isnull ? 0 : DatumGetFloat8(d);
	d = heap_getattr(tuple, SPI_fnumber(desc, "max_reserved"), desc, &isnull);
	policy->has_max_reserved = !isnull;
	policy->max_reserved = isnull ? 0 : DatumGetFloat8(d);
	return DatumGetTextPP(name);
}

PG_FUNCTION_INFO_V1(rl_definitions_guard);

/*
 * Row trigger (AFTER INSERT, UPDATE, DELETE) and statement trigger (BEFORE
 * TRUNCATE) on rl_definitions: every change, by hand too, does what
 * rl_concurrency_definition_change says before it commits.  After the
 * row's change, so the row has passed the table's checks.
 */
Datum
rl_definitions_guard(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	desc;
	Oid			nspid;
	RlPolicy	before;
	RlPolicy	after;
	text	   *before_name = NULL;
	text	   *after_name = NULL;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rl_definitions_guard() must be called as a trigger")));
	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	nspid = RelationGetNamespace(rel);

	if (TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
	{
		List	   *rows = rl_storage_concurrency_definitions(rel);
		ListCell   *lc;

		foreach(lc, rows)
		{
			RlDefinitionRow *row = lfirst(lc);

			CHECK_FOR_INTERRUPTS();
			rl_concurrency_definition_change(nspid, row->name, &row->policy,
											 NULL, NULL);
		}
		return PointerGetDatum(NULL);
	}
	if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rl_definitions_guard() must fire for each row, or for TRUNCATE")));
	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		after_name = definition_row(trigdata->tg_trigtuple, desc, &after);
	else
	{
		before_name = definition_row(trigdata->tg_trigtuple, desc, &before);
		if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
			after_name = definition_row(trigdata->tg_newtuple, desc, &after);
	}
	rl_concurrency_definition_change(nspid, before_name,
									 before_name ? &before : NULL,
									 after_name, after_name ? &after : NULL);
	return PointerGetDatum(NULL);
}
