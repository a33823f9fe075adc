/*-------------------------------------------------------------------------
 *
 * store_table.c
 *	  The table store: a limit's state in rows of rate_limits, locked and
 *	  written in the caller's transaction (store.h's operations).
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
 * Locking: a row lock lasts until the transaction ends.  rl_limit_all
 * locks its limits in canonical order (limit.c), and everything that waits
 * for several shards of one key waits in ascending shard order, so calls
 * queue instead of deadlocking.  Rows are read and written through
 * storage.c (the direct path or SPI).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/pg_prng.h"
#include "miscadmin.h"
#include "tcop/utility.h"

#include "clock.h"
#include "held.h"
#include "stats.h"
#include "storage.h"
#include "store.h"

/* A uniform draw from 0 .. n - 1 (n > 0), for picking shards. */
static inline int
random_below(int n)
{
	return (int) pg_prng_uint64_range(&pg_global_prng_state, 0, (uint64) n - 1);
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
/* Decide over what a call holds, at a time read after its locks. */
static void
decide_held(const RlTarget *target, RlHeld *held, double count, bool reserve,
			RlAnswer *answer)
{
	held->now = rl_clock_now();
	rl_decide_held(target, held, count, reserve, answer);
}

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
	RlPolicy	policy = rl_target_row_policy(target);
	TimestampTz now = rl_clock_now();
	RlState		full;

	rl_check_status(rl_initial_state(&policy, target->origin, now, &full), now);
	rl_check_state_time(&full, now);
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
	RlPolicy	policy = rl_target_row_policy(target);
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
 * have waited (see rl_target_reread_count).
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
	rl_target_reread_count(call->target, call->count, call->reserve);
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
	RlPolicy	policy = rl_target_row_policy(call->target);

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
	RlPolicy	policy = rl_target_row_policy(target);
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
	RlPolicy	policy = rl_target_row_policy(target);
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
	RlPolicy	policy = rl_target_row_policy(target);
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
			rl_check_status(rl_initial_state(&policy, target->origin,
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
		rl_target_reread_count(call->target, call->count, call->reserve);
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
		rl_target_reread_count(call->target, call->count, call->reserve);
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
table_consume(RlTarget *target, double count, bool reserve, RlAnswer *answer)
{
	RlRowKey	row = {target->name, target->key, 0};
	RlHeld		held;
	UnlockedCall call = {target, count, reserve, answer, false, {-1, -1}};

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
		rl_target_reread_count(target, count, reserve);
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
		rl_target_reread_count(target, count, reserve);
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

/* The refilled value of a shard, a missing one counting as full. */
static double
shard_value(const RlTarget *target, const RlPolicy *policy, bool found,
			RlState state, TimestampTz now)
{
	return found ? rl_refill(policy, target->origin, state, now).value :
		policy->capacity;
}

/* A sharded key's shards as table_peek read them, for table_hold. */
typedef struct ShardsRead
{
	RlState    *states;
	bool	   *found;			/* false: no row (a full shard) */
	int16		pair[2];		/* the two fullest */
} ShardsRead;

/*
 * The rows rl_consume would decide on, read without a lock.  A sharded
 * limit answers as if the call had picked its two fullest shards; what was
 * read of every shard is kept for table_hold (store_data).
 */
static void
table_peek(const RlTarget *target, RlHeld *held)
{
	int			nshards = target->policy.shards;

	held->nbusy = 0;
	held->store_data = NULL;
	if (nshards == 1)
	{
		RlRowKey	row = {target->name, target->key, 0};

		held->n = 1;
		held->stored[0] = rl_storage_read(&row, &held->state[0]);
	}
	else
	{
		RlPolicy	policy = rl_target_row_policy(target);
		RlState    *states = palloc(sizeof(RlState) * nshards);
		bool	   *found = palloc(sizeof(bool) * nshards);
		TimestampTz now = rl_clock_now();
		int			best[2] = {-1, -1};
		double		value[2] = {0, 0};
		ShardsRead *read;

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
		read = palloc(sizeof(ShardsRead));
		held->n = 2;
		for (int i = 0; i < 2; i++)
		{
			held->stored[i] = found[best[i]];
			held->state[i] = states[best[i]];
		}
		read->states = states;
		read->found = found;
		read->pair[0] = (int16) best[0];
		read->pair[1] = (int16) best[1];
		held->store_data = read;
	}
	held->now = rl_clock_now();
}

/*
 * Hold the rows rl_consume_all decides on for one limit, whose shards, if
 * it has more than one, table_peek read (read).  Of the shards that by that read
 * serve the call alone, those the transaction holds first, the rest in
 * random order, up to RL_SHARD_PROBES are locked without waiting, and the
 * first that still serves is held.  Otherwise the two fullest are held
 * (hold_shards): the pair rl_check decides on, so that a call is granted
 * whenever rl_check says it would be, as a single call is.
 */
static void
table_hold(RlTarget *target, double count, RlHeld *held)
{
	const ShardsRead *read = held->store_data;
	int			nshards = target->policy.shards;
	RlPolicy	policy = rl_target_row_policy(target);
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
static RlState
table_current(const RlTarget *target)
{
	RlPolicy	policy = rl_target_row_policy(target);
	int			nshards = target->policy.shards;
	RlState    *states = palloc(sizeof(RlState) * nshards);
	bool	   *found = palloc(sizeof(bool) * nshards);
	TimestampTz now = rl_clock_now();
	RlState		total;

	rl_storage_read_shards(target->name, target->key, nshards, states, found);
	if (nshards == 1 && found[0])
	{
		total = rl_refill(&policy, target->origin, states[0], now);
		total.value = rl_available(&policy, target->origin, states[0], now);
	}
	else
	{
		rl_check_status(rl_initial_state(&policy, target->origin, now, &total),
					   now);
		total.value = 0;
		for (int s = 0; s < nshards; s++)
			total.value += shard_value(target, &policy, found[s], states[s], now);
	}
	rl_check_state_time(&total, now);
	return total;
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

/*
 * Refund, penalize, block, charge or return to a key: hold its row (every
 * shard of a sharded limit), then compute each new state at a time read
 * after the locks and write them all, only once every one is known to be
 * valid.  A sharded refund or return is spread over the shards in equal
 * parts, none above its own capacity; a penalty or charge takes count
 * from the fullest shards first (rl_take_spread; *charged: the sum
 * taken), and a block blocks each.  A
 * move caps each shard at what it holds (brought forward to now under the
 * old policy by the caller), amount unused: the shards need not hold the
 * same.
 * blocked: an automatic block (rl_adjust_key): a key that is blocked once
 * its row is held is left as it is (*blocked then receives false, and true
 * when the block was written), and the block lasts block_for escalated by
 * the key's offences (rl_escalated_block_for) rather than duration.
 */
static RlState
table_adjust(RlTarget *target, RlAdjustment kind, double amount,
			 int64 duration, bool *blocked, double *charged)
{
	RlPolicy	policy;
	double		took;
	double		taken = 0;
	int			nshards = target->policy.shards;
	RlState    *states;
	RlState    *next;
	ItemPointerData *tids;
	TimestampTz now;
	RlState		total;

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
	rl_target_reread(target);
	policy = rl_target_row_policy(target);
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
			rl_check_state_time(&total, now);
			return total;
		}
		/* the automatic block's length, escalated by the key's offences */
		if (nshards == 1)
			duration = rl_escalated_block_for(&policy, &states[0], now);
	}

	if ((kind == RL_ADJUST_REFUND || kind == RL_ADJUST_RETURN) && nshards > 1)
	{
		double	   *values = palloc(sizeof(double) * nshards);
		double		give = amount;

		for (int s = 0; s < nshards; s++)
		{
			rl_adjust_state(&policy, target->origin, kind, &states[s], now, 0, 0,
					   &next[s], &took);
			values[s] = next[s].value;
			/* a return gives nothing to a blocked key (rl_adjust_state) */
			if (kind == RL_ADJUST_RETURN &&
				rl_state_is_blocked(&policy, target->origin, states[s], now))
				give = 0;
		}
		rl_refund_spread(policy.capacity, nshards, values, give);
		for (int s = 0; s < nshards; s++)
			next[s].value = values[s];
	}
	else if ((kind == RL_ADJUST_PENALIZE || kind == RL_ADJUST_CHARGE) &&
			 nshards > 1 && amount > 0)
	{
		double	   *values = palloc(sizeof(double) * nshards);

		/* each shard's share, the fullest first (rl_take_spread) */
		for (int s = 0; s < nshards; s++)
		{
			rl_adjust_state(&policy, target->origin, kind, &states[s], now, 0, 0,
					   &next[s], &took);
			values[s] = next[s].value;
		}
		rl_take_spread(nshards, values, amount);
		for (int s = 0; s < nshards; s++)
		{
			rl_adjust_state(&policy, target->origin, kind, &states[s], now,
					   next[s].value - values[s], duration, &next[s], &took);
			taken += took;
		}
	}
	else
	{
		for (int s = 0; s < nshards; s++)
		{
			rl_adjust_state(&policy, target->origin, kind, &states[s], now,
					   kind == RL_ADJUST_MOVE && nshards > 1 ? states[s].value :
					   amount / nshards, duration, &next[s], &took);
			taken += took;
		}
	}
	if (charged != NULL)
		*charged = taken;

	for (int s = 0; s < nshards; s++)
		rl_storage_update(&tids[s], &next[s]);

	if (nshards == 1)
		return next[0];
	rl_check_status(rl_initial_state(&policy, target->origin, now, &total), now);
	total.value = 0;
	for (int s = 0; s < nshards; s++)
		total.value += rl_refill(&policy, target->origin, next[s], now).value;
	return total;
}


/* Decide over the rows table_hold held (store.h: rl_limit_all). */
static void
table_decide(const RlTarget *target, RlHeld *held, double count,
			 bool reserve, RlAnswer *answer)
{
	decide_hold(target, held, count, reserve, answer);
}

/* Write what rl_limit_all decided in the rows table_hold held. */
static void
table_write(const RlTarget *target, const RlHeld *held, double count,
			const RlAnswer *answer)
{
	write_held(held, answer);
}

/* Row locks are held from table_hold until the transaction ends. */
static void
table_lock(RlHeld *const *held, int n)
{
}

static void
table_unlock(void)
{
}

/*
 * rl_reset: delete the key's rows, all shards, in the caller's
 * transaction; every_inline: also the key's rows under every inline config
 * of the name (target->name is then the name as given).
 */
static uint64
table_reset_inline(text *name, text *key)
{
	PreventCommandIfReadOnly("rl_reset()");
	return rl_storage_delete(name, key);
}

static void
table_reset(RlTarget *target, bool every_inline)
{
	if (every_inline)
	{
		(void) table_reset_inline(target->name, target->key);
		return;
	}
	PreventCommandIfReadOnly("rl_reset()");
	rl_storage_delete_stored(target->name, target->key);
}

/*
 * A table limit's own takes are in its row, which a transaction that took
 * them holds, and does not wait on (wait.c): waiting may always grant.
 */
static bool
table_wait_can_grant(const RlTarget *target, double count, bool reserve)
{
	return true;
}

/* Whether the transaction may hold one of the key's rows already. */
static bool
table_may_hold(const RlTarget *target)
{
	return rl_held_maybe(target->name, target->key);
}

/* Every policy can keep its state in rows. */
static void
table_check_use(bool inline_config)
{
}

const RlStoreOps rl_table_store = {
	.name = "table",
	.writes_table = true,
	.locks_rows = true,
	.check_use = table_check_use,
	.peek = table_peek,
	.current = table_current,
	.consume = table_consume,
	.wait_can_grant = table_wait_can_grant,
	.may_hold = table_may_hold,
	.hold = table_hold,
	.lock = table_lock,
	.decide = table_decide,
	.write = table_write,
	.unlock = table_unlock,
	.adjust = table_adjust,
	.reset = table_reset,
	.reset_inline = table_reset_inline,
};
