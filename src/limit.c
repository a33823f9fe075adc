/*-------------------------------------------------------------------------
 *
 * limit.c
 *	  The decision over what the stores hold: shadow mode, automatic
 *	  blocks, statistics, and all or nothing over several limits.
 *
 * A limit's state is reached only through its store's operations
 * (store.h); nothing here asks which store that is.  rl_consume_all locks
 * every limit of a call in one canonical order (name, then key,
 * bytewise), store by store in their rank, decides them all, and writes
 * either all of them or none, so two calls naming the same limits in any
 * order cannot deadlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "access.h"
#include "clock.h"
#include "limit.h"
#include "refused.h"
#include "stats.h"
#include "store.h"

static RlState adjust_key(RlTarget *target, RlAdjustment kind, double amount,
						  int64 duration, bool *blocked);

/*
 * Shadow mode: a refusal of a limit in shadow mode becomes a grant that
 * takes nothing (the state stays as the refusal left it, so the limit goes
 * on refusing exactly what an enforcing one would).  The answer keeps the
 * refusal's retry_after: a grant with a retry_after, without reserve, is
 * what tells the caller, and granted the count it goes on with.  Resets
 * the flags of the options first.
 */
static void
apply_shadow(const RlTarget *target, double count, RlAnswer *answer)
{
	answer->shadowed = false;
	answer->blocked = false;
	if (answer->ok || !target->policy.shadow)
		return;
	answer->ok = true;
	answer->shadowed = true;
	answer->granted = count;
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
	/* now read after the state, which current brought forward to its now */
	state = target->store->current(target);
	now = rl_clock_now();
	if (rl_state_is_blocked(&target->policy, target->origin, state, now))
		return;
	/* adjust_key escalates block_for by the key's offences, if set */
	state = adjust_key(target, RL_ADJUST_BLOCK, 0, target->policy.block_for,
					   &blocked);
	policy = rl_target_row_policy(target);
	now = rl_clock_now();
	rl_check_status(rl_decide(&policy, target->origin, &state, now, count,
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
 * Count a refused call in its limit's statistics, and its key in
 * rl_refused.  Out of line, so that a granted call's path through
 * count_answer is what it was without rl_refused.
 */
static pg_noinline void
count_refusal(const RlTarget *target, RlStatsCall *call,
			  const RlAnswer *answer)
{
	rl_stats_record(target->label, call, RL_STATS_REFUSED, rl_clock_now());
	rl_refused_record(target->label, target->key, target->key_is_null,
					  1, answer->blocked);
}

/*
 * Count a decided call in the limit's statistics.  consumed: its tokens
 * were taken (false for a limit that granted inside an rl_limit_all call
 * another limit refused).
 */
static void
count_answer(const RlTarget *target, RlStatsCall *call,
			 const RlAnswer *answer, bool consumed)
{
	call->values[RL_STAT_shadow_refused] = answer->shadowed;
	call->values[RL_STAT_blocks] = answer->blocked;
	if (!answer->ok)
	{
		count_refusal(target, call, answer);
		return;
	}
	/* a call shadow mode granted took nothing, and reserved nothing */
	if (consumed && !answer->shadowed)
	{
		call->values[RL_STAT_tokens] = answer->granted;
		if (answer->has_retry)
		{
			call->values[RL_STAT_reservations] = 1;
			call->values[RL_STAT_deepest_reservation] = -answer->remaining;
		}
	}
	rl_stats_record(target->label, call, RL_STATS_GRANTED, rl_clock_now());
}

static bool listed(RlTarget *target, double count, RlAnswer *answer);

/*
 * consume_counted's decision: the lists (listed), or the state; true when
 * the lists decided, taking nothing.
 */
static bool
consume_decided(RlTarget *target, double count, bool reserve, bool final,
				bool blocks, RlAnswer *answer)
{
	rl_target_check_count(target, count, reserve);
	if (listed(target, count, answer))
		return true;
	target->store->consume(target, count, reserve, answer);
	apply_shadow(target, count, answer);
	if (final && blocks)
		apply_block(target, count, reserve, answer);
	return false;
}

/*
 * Consume count tokens from a limit whose policy is known, refusing a
 * count it can never grant, and count the call in its statistics.  final:
 * the answer is the call's own (granted, refused, or an error, whatever
 * raised it), and a refusal blocks its key under block_for when blocks.
 * Otherwise (a waiting call's try, wait.c) only a grant or an error is the
 * call's answer: a refusal is neither counted nor blocks.
 */
static void
consume_counted(RlTarget *target, double count, bool reserve, bool final,
				bool blocks, RlAnswer *answer)
{
	RlStatsCall call = {{0}};
	RlStatsCall *callp = &call;
	bool		by_lists = false;

	if (!rl_stats_tracking())
	{
		(void) consume_decided(target, count, reserve, final, blocks, answer);
		return;
	}
	rl_stats_attribute(callp);
	PG_TRY();
	{
		by_lists = consume_decided(target, count, reserve, final, blocks,
								   answer);
	}
	PG_CATCH();
	{
		rl_stats_record(target->label, callp, RL_STATS_ERROR, rl_clock_now());
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (final || answer->ok)
		count_answer(target, callp, answer, !by_lists);
	else
		rl_stats_attribute(NULL);
}

/*
 * The limit's allow and deny lists, before its state: true when an entry
 * decides the call, whose answer is then filled.  Denied: refused at
 * once, touching no state, retry_after the time until the address is no
 * longer denied (none: for ever).  Allowed: granted without consuming,
 * reporting what the key holds, and count as granted (the caller goes on
 * with it, as under shadow mode).  Shadow mode and block_for do not apply:
 * an entry is an operator's decision, not the limit's.
 */
static bool
listed(RlTarget *target, double count, RlAnswer *answer)
{
	TimestampTz now;
	TimestampTz until;
	bool		has_until;
	RlAccess	access;

	if (target->address == NULL || !target->policy.access_lists)
		return false;
	now = rl_clock_now();
	access = rl_access_of(target, now, &has_until, &until);
	if (access == RL_ACCESS_NONE)
		return false;
	if (access == RL_ACCESS_ALLOW)
	{
		rl_peek(target, 0, false, answer);
		answer->ok = true;
		answer->has_retry = false;
		answer->retry_after = 0;
		answer->shadowed = false;
		answer->blocked = false;
		answer->write[0] = answer->write[1] = false;
		answer->granted = count;
		return true;
	}
	memset(answer, 0, sizeof(*answer));
	target->denied = true;
	answer->has_retry = has_until;
	answer->retry_after = has_until ? Max(until - now, 1) : 0;
	return true;
}

/*
 * Whether the lists decide a call on the target now (wait.c: such a call
 * does not wait).
 */
bool
rl_target_listed(RlTarget *target)
{
	TimestampTz until;
	bool		has_until;

	return target->address != NULL && target->policy.access_lists &&
		rl_access_of(target, rl_clock_now(), &has_until, &until) !=
		RL_ACCESS_NONE;
}

/*
 * Consume count tokens from a limit: the call's answer (consume_counted).
 * blocks: false for a call that raises its refusal (throws => true,
 * rl_enforce), whose error would roll a block back: it then blocks
 * nothing, and its answer announces no block.
 */
void
rl_consume(RlTarget *target, double count, bool reserve, bool blocks,
		   RlAnswer *answer)
{
	consume_counted(target, count, reserve, true, blocks, answer);
}

/*
 * Count a refused rl_check: apart from the consuming calls, in
 * rl_stats.check_refused, and its key in rl_refused.
 */
static void
count_check_refusal(const RlTarget *target, bool blocked)
{
	RlStatsCall call = {{0}};

	if (!rl_stats_tracking())
		return;
	call.values[RL_STAT_check_refused] = 1;
	call.values[RL_STAT_blocks] = blocked;
	rl_stats_record(target->label, &call, RL_STATS_CHECKED, rl_clock_now());
	rl_refused_record(target->label, target->key, target->key_is_null, 1,
					  blocked);
}

/*
 * rl_check: what rl_consume would answer, taking nothing.  A refusal of a
 * limit with block_for blocks the key, as a refused consuming call does:
 * in the check-then-consume pattern the attempt a check refuses is the
 * offence.  Not when blocks is false (as rl_consume), nor in a read-only
 * transaction whose limit's store writes a table, which the check only
 * answers.  A check the deny list refuses counts as any refused check.
 */
void
rl_check_call(RlTarget *target, double count, bool reserve, bool blocks,
			  RlAnswer *answer)
{
	rl_target_check_count(target, count, reserve);
	if (listed(target, count, answer))
	{
		if (!answer->ok)
			count_check_refusal(target, false);
		return;
	}
	rl_peek(target, count, reserve, answer);
	if (blocks && !(XactReadOnly && target->store->writes_table))
		apply_block(target, count, reserve, answer);
	if (!answer->ok)
		count_check_refusal(target, answer->blocked);
}

/*
 * The same, for a try of a waiting call that goes on waiting when refused:
 * a refusal is not counted in rl_stats and does not block its key.
 */
void
rl_consume_try(RlTarget *target, double count, bool reserve,
			   RlAnswer *answer)
{
	consume_counted(target, count, reserve, false, false, answer);
}

/*
 * Whether waiting could ever grant the call while its transaction goes on
 * (a memory key's own pending takes can refuse it for good).
 */
bool
rl_wait_can_grant(const RlTarget *target, double count, bool reserve)
{
	return target->store->wait_can_grant(target, count, reserve);
}

/* Whether the transaction may hold the key's state already (wait.c). */
bool
rl_may_hold(const RlTarget *target)
{
	return target->store->may_hold(target);
}

/*
 * What rl_consume would answer, locking and writing nothing: shadow mode
 * included (a block is not: only a consuming call blocks).  A sharded
 * limit answers as if the call had picked its two fullest shards.
 */
void
rl_peek(const RlTarget *target, double count, bool reserve, RlAnswer *answer)
{
	RlHeld		held;

	target->store->peek(target, &held);
	rl_decide_held(target, &held, count, reserve, answer);
	apply_shadow(target, count, answer);
}

/*
 * A limit's tokens brought forward to now: the sum over its shards.  For a
 * sliding window, what a call could take now (rl_available), counted in
 * the window that starts at ts.
 */
RlState
rl_current(const RlTarget *target)
{
	return target->store->current(target);
}

/*
 * Whether one stored row (one shard) of a target is idle: refilled to
 * full, so that deleting it changes no later decision (rl_gc).
 */
bool
rl_row_is_idle(const RlTarget *target, RlState state)
{
	RlPolicy	policy = rl_target_row_policy(target);

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
	RlPolicy	policy = rl_target_row_policy(target);
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

/* One rl_limit_all call: its limits, each decided once (first). */
typedef struct AllCall
{
	RlTarget   *targets;
	const double *counts;
	double	   *total;			/* each limit's counts summed */
	int			n;
	bool		reserve;
	RlAnswer   *answers;
	const int  *first;			/* the index each limit merges into */
	const int  *order;			/* canonical order */
	RlStatsCall *calls;			/* NULL: statistics not tracked */
	RlHeld	   *held;
	bool		blocks;			/* a refusal blocks under block_for */
	bool	   *listed;			/* decided by the lists (listed) */
} AllCall;

static int	block_all(AllCall *call);

/* Whether the k-th limit in canonical order is decided, in store. */
static inline bool
decided_in(const AllCall *call, int k, const RlStoreOps *store)
{
	int			i = call->order[k];

	return call->first[i] == i && !call->listed[i] &&
		call->targets[i].store == store;
}

/* refused, or limit i when it refused with a longer retry_after. */
static int
longest_refusal(const AllCall *call, int i, int refused)
{
	const RlAnswer *answers = call->answers;

	if (answers[i].ok)
		return refused;
	if (refused < 0 || !answers[refused].has_retry)
		return refused < 0 ? i : refused;
	/* a deny for ever refuses longest */
	return !answers[i].has_retry ||
		answers[i].retry_after > answers[refused].retry_after ? i : refused;
}

/*
 * A call its committed state refuses is refused without a lock, as a
 * single limit's is (rl_storage_consume): each limit answers what rl_peek
 * answers, the most a call could get from it, and holders can only have
 * lowered that.  Returns the refusing limit with the longest retry_after,
 * or -1.
 */
static int
peek_all(AllCall *call)
{
	int			refused = -1;

	for (int k = 0; k < call->n; k++)
	{
		int			i = call->order[k];
		RlTarget   *target = &call->targets[i];

		CHECK_FOR_INTERRUPTS();
		if (call->first[i] != i)
			continue;
		rl_target_check_count(target, call->total[i], call->reserve);
		if (call->listed[i])
		{
			refused = longest_refusal(call, i, refused);
			continue;
		}
		rl_target_reread_count(target, call->total[i], call->reserve);
		target->store->peek(target, &call->held[i]);
		rl_decide_held(target, &call->held[i], call->total[i], call->reserve,
					   &call->answers[i]);
		apply_shadow(target, call->total[i], &call->answers[i]);
		refused = longest_refusal(call, i, refused);
	}
	return refused;
}

/*
 * One store's part of the call (store.h): hold each of its limits in
 * canonical order, read their definitions again, lock, decide.  Returns
 * how many limits the store holds; *refused is the refusal to report so
 * far.
 */
static int
decide_store(AllCall *call, const RlStoreOps *store, int *refused)
{
	RlHeld	  **mine = palloc(sizeof(RlHeld *) * call->n);
	int			nmine = 0;

	for (int k = 0; k < call->n; k++)
	{
		int			i = call->order[k];

		CHECK_FOR_INTERRUPTS();
		if (!decided_in(call, k, store))
			continue;
		rl_target_check_count(&call->targets[i], call->total[i],
							  call->reserve);
		if (call->calls)
			rl_stats_attribute(&call->calls[i]);
		store->hold(&call->targets[i], call->total[i], &call->held[i]);
		mine[nmine++] = &call->held[i];
	}
	if (call->calls)
		rl_stats_attribute(NULL);
	if (nmine == 0)
		return 0;

	/*
	 * Holding may have waited: each limit is decided under its definition
	 * read after that (shadow switched off, a capacity lowered).
	 */
	for (int k = 0; k < call->n; k++)
		if (decided_in(call, k, store))
			rl_target_reread_count(&call->targets[call->order[k]],
								   call->total[call->order[k]],
								   call->reserve);
	store->lock(mine, nmine);
	for (int k = 0; k < call->n; k++)
	{
		int			i = call->order[k];

		if (!decided_in(call, k, store))
			continue;
		store->decide(&call->targets[i], &call->held[i], call->total[i],
					  call->reserve, &call->answers[i]);
		apply_shadow(&call->targets[i], call->total[i], &call->answers[i]);
		*refused = longest_refusal(call, i, *refused);
	}
	pfree(mine);
	return nmine;
}

/*
 * Every store writes what was decided, in the reverse of their rank, and
 * lets go of its lock: all when every limit granted, else none.
 */
static void
write_stores(AllCall *call, const int *nheld, bool granted)
{
	for (int s = rl_nstores - 1; s >= 0; s--)
	{
		const RlStoreOps *store = rl_stores[s];

		if (nheld[s] == 0)
			continue;
		for (int k = 0; k < call->n && granted; k++)
		{
			int			i = call->order[k];

			CHECK_FOR_INTERRUPTS();
			if (decided_in(call, k, store) && !call->answers[i].shadowed)
				store->write(&call->targets[i], &call->held[i],
							 call->total[i], &call->answers[i]);
		}
		store->unlock();
	}
}

/*
 * Consume from n limits (at most RL_MAX_LIMITS_PER_CALL), all or nothing.
 * Limits named more than once consume their counts summed.  Returns the
 * index of the refusing limit with the longest retry_after, or -1 when
 * every limit granted.
 */
static int
consume_all(AllCall *call)
{
	int			n = call->n;
	int		   *nheld = palloc0(sizeof(int) * rl_nstores);
	int			refused;

	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		rl_target_check_count(&call->targets[i], call->counts[i],
							  call->reserve);
		call->total[call->first[i]] += call->counts[i];
	}
	/* the lists first: a denied limit refuses the call, holding nothing */
	for (int i = 0; i < n; i++)
		if (call->first[i] == i)
			call->listed[i] = listed(&call->targets[i], call->total[i],
									 &call->answers[i]);
	refused = peek_all(call);
	if (refused < 0)
	{
		for (int s = 0; s < rl_nstores; s++)
			nheld[s] = decide_store(call, rl_stores[s], &refused);
		write_stores(call, nheld, refused < 0);
	}
	if (refused >= 0 && call->blocks)
		refused = block_all(call);
	for (int i = 0; i < n; i++)
		if (call->first[i] != i)
			call->answers[i] = call->answers[call->first[i]];

	/*
	 * Counted only once every write is done: a write that fails makes the
	 * whole call one error for each limit (rl_consume_all), never a grant
	 * and an error.
	 */
	for (int i = 0; i < n && call->calls; i++)
		if (call->first[i] == i)
			count_answer(&call->targets[i], &call->calls[i],
						 &call->answers[i], refused < 0 && !call->listed[i]);
	return refused;
}

/*
 * block_for in a refused rl_limit_all call: each limit that refused by
 * itself blocks its key (apply_block), in canonical order.  Returns the
 * refusing limit with the longest retry_after once the blocks are known.
 */
static int
block_all(AllCall *call)
{
	int			refused = -1;

	for (int k = 0; k < call->n; k++)
	{
		int			i = call->order[k];

		if (call->first[i] != i || call->answers[i].ok)
			continue;
		if (!call->listed[i])
			apply_block(&call->targets[i], call->total[i], call->reserve,
						&call->answers[i]);
		refused = longest_refusal(call, i, refused);
	}
	return refused;
}

/*
 * Refund, penalize or block a key (the store's adjust): amount is the
 * count (refund, penalty), duration the block's length.  Returns the key's
 * state as rl_value would then report it.
 */
RlState
rl_adjust(RlTarget *target, RlAdjustment kind, double amount, int64 duration)
{
	return adjust_key(target, kind, amount, duration, NULL);
}

/*
 * rl_adjust; for a block, blocked (when not NULL) asks for an automatic
 * block (block_for): a key already blocked is left as it is (*blocked
 * then receives false, and true when the block was written), and the
 * block lasts block_for escalated by the key's offences
 * (rl_escalated_block_for) rather than duration.
 */
static RlState
adjust_key(RlTarget *target, RlAdjustment kind, double amount, int64 duration,
		   bool *blocked)
{
	return target->store->adjust(target, kind, amount, duration, blocked,
								 NULL);
}

/*
 * rl_settle: a call admitted on estimated turned out to cost actual.  The
 * difference is taken (a charge: below zero too, never past -max_debt)
 * or given back (a refund: never above capacity), in one step under the
 * key's lock, in the caller's transaction.  *unsettled receives what a
 * charge could not take at the bound of max_debt (0 otherwise).  Returns
 * the key's state as rl_value would then report it.
 */
RlState
rl_settle_key(RlTarget *target, double estimated, double actual,
			  double *unsettled)
{
	double		difference = actual - estimated;
	double		charged = 0;
	RlState		state;

	*unsettled = 0;
	if (difference > 0)
	{
		state = target->store->adjust(target, RL_ADJUST_CHARGE, difference,
									  0, NULL, &charged);
		if (target->policy.has_max_debt)
			*unsettled = difference - charged;
	}
	else if (difference < 0)
		state = adjust_key(target, RL_ADJUST_REFUND, -difference, 0, NULL);
	else
		state = rl_current(target);
	return state;
}

/*
 * rl_reset: forget one key's state, all shards.  With a config, the state
 * rl_limit with that config uses, and only it (a defined name refuses
 * it); without, a defined limit's key, or, for a name with no definition,
 * the key under every inline config of the name that a store finds by
 * name alone (an inline memory key is found by its config only).  A name
 * with no definition, no config and no such state is an error, as
 * rl_undefine's: a misspelt name would otherwise reset nothing, silently.
 */
void
rl_reset_key(RlTarget *target, HeapTupleHeader config)
{
	uint64		forgotten = 0;

	if (rl_target_resolve_defined(target, config))
	{
		target->store->reset(target, config == NULL);
		return;
	}
	for (int s = 0; s < rl_nstores; s++)
		forgotten += rl_stores[s]->reset_inline(target->name, target->key);
	if (forgotten == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist",
						text_to_cstring(target->label)),
				 errdetail("No limit of that name is defined, and no inline config of that name has state for the key."),
				 errhint("Reset a key of an inline config with storage 'memory' by passing its config.")));
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
			   bool blocks, RlAnswer *answers)
{
	int		   *order = palloc(sizeof(int) * n);
	int		   *first = palloc(sizeof(int) * n);	/* index merged into */
	AllCall		call;
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

	call.targets = targets;
	call.counts = counts;
	call.total = palloc0(sizeof(double) * n);
	call.n = n;
	call.reserve = reserve;
	call.answers = answers;
	call.first = first;
	call.order = order;
	call.calls = NULL;
	call.held = palloc0(sizeof(RlHeld) * n);
	call.blocks = blocks;
	call.listed = palloc0(sizeof(bool) * n);
	if (!rl_stats_tracking())
		return consume_all(&call);
	call.calls = palloc0(sizeof(RlStatsCall) * n);
	PG_TRY();
	{
		refused = consume_all(&call);
	}
	PG_CATCH();
	{
		TimestampTz now = rl_clock_now();

		for (int i = 0; i < n; i++)
			if (first[i] == i)
				rl_stats_record(targets[i].label, &call.calls[i],
								RL_STATS_ERROR, now);
		rl_stats_attribute(NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return refused;
}

