/*-------------------------------------------------------------------------
 *
 * target.c
 *	  The limit a call addresses: its name and key checked, its policy found
 *	  (a definition, an inline config, a key's override) and read again
 *	  once the call holds its state, and the store that keeps its state.
 *
 * Part of the decision: it reads definitions, never a store.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "access.h"
#include "definitions.h"
#include "names.h"
#include "policy.h"
#include "store.h"
#include "target.h"

/* Check a name and key (NULL for the shared key) and store them. */
void
rl_target_init(RlTarget *target, text *name, text *key)
{
	int			len = VARSIZE_ANY_EXHDR(name);

	rl_check_name_bytes(len, "rate limit name");
	if (memchr(VARDATA_ANY(name), RL_INLINE_SEPARATOR, len) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rate limit name must not contain the character U+001F"),
				 errdetail("It separates a name from its inline policy in stored state.")));
	target->name = name;
	target->label = name;
	target->address = NULL;
	target->address_prefix = 0;
	target->denied = false;
	target->partial = false;
	target->allowed = false;
	target->deny_has_until = false;
	target->deny_until = 0;
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

/*
 * The window phase of a target whose policy is known (none for a
 * concurrency limit, which has no window: rl_reset resolves one).
 */
static void
set_origin(RlTarget *target)
{
	if (RL_KIND_IS_CONCURRENCY(target->policy.kind))
	{
		target->origin = 0;
		return;
	}
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
apply_override(RlTarget *target, bool lenient)
{
	RlPolicy	p = target->policy;
	const char *problem;

	if (!target->defined || !p.overrides || target->key_is_null ||
		RL_KIND_IS_CONCURRENCY(p.kind) ||
		!rl_override_lookup(target->label, target->key, &p))
		return;
	problem = rl_policy_problem(&p);
	if (problem && lenient)
		return;
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
	apply_override(&target, false);
	*policy = target.policy;
	return true;
}

/*
 * Find the policy: the stored definition, or the inline config (NULL for
 * none) for a name that has none; an inline config's state is its own
 * (rl_inline_row_name); an overridden key's policy has its override in
 * (apply_override).  for_reset (rl_reset, which only forgets state): false,
 * changing nothing else, for a name with no definition and no config; a
 * concurrency limit, and a key whose override its definition no longer
 * admits, are not refused (the override is left out).
 * Needs rl_storage_begin.
 */
static bool
resolve(RlTarget *target, HeapTupleHeader config, bool for_reset)
{
	bool		defined;

	defined = rl_definition_lookup_at(target->label, &target->policy,
									  &target->epoch);
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
		rl_store_of(&target->policy)->check_use(true);
	}
	else if (!defined && for_reset)
		return false;
	else if (!defined)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit \"%s\" does not exist",
						text_to_cstring(target->label)),
				 errdetail("No limit of that name is defined, and the call's config is NULL."),
				 errhint("Define it with rl_define(), or pass an inline config.")));
	if (!for_reset)
		rl_target_require_rate(target);
	if (config != NULL)
		target->name = rl_inline_row_name(target->label, &target->policy);
	else
	{
		/* an address key's network, before anything reads the key */
		rl_target_address(target);
		apply_override(target, for_reset);
	}
	set_origin(target);
	target->store = rl_store_of(&target->policy);
	return true;
}

/* resolve: a name with no definition and no config is an error. */
void
rl_target_resolve(RlTarget *target, HeapTupleHeader config)
{
	(void) resolve(target, config, false);
}

/*
 * The same, but false, resolving nothing, for a name with no definition
 * and no config (rl_reset).
 */
bool
rl_target_resolve_defined(RlTarget *target, HeapTupleHeader config)
{
	return resolve(target, config, true);
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
	target->address = NULL;
	target->address_prefix = 0;
	target->denied = false;
	target->allowed = false;
	target->deny_has_until = false;
	target->deny_until = 0;
	target->policy = *policy;
	target->defined = true;
	target->epoch = PG_UINT64_MAX;
	target->partial = false;
	set_origin(target);
	target->store = rl_store_of(&target->policy);
}

/*
 * Once a call holds its rows: look at the name's definition again, since
 * it may have changed or gone while the call waited for a lock.  rl_define
 * and rl_undefine commit, and send the invalidation the lookup accepts,
 * before they release their locks, so a call that waited for them sees
 * their change here.  A call never decides under a definition that no
 * longer exists, nor re-creates state for an undefined name; a changed
 * policy (the key's override's too) is adopted, unless its shard count
 * changed, which would change the rows the call should hold, or its
 * store, or the key its address counts under (40001: retry); its lists
 * are judged again (rl_target_readdress).  The count is checked by
 * rl_target_reread_count.
 * store_may_change: the call holds nothing (rl_target_recheck), and takes
 * the store of the policy now in force.  new_epoch: the target takes the
 * epoch read before the policy, too.
 */
static void
reread(RlTarget *target, bool store_may_change, bool new_epoch)
{
	RlPolicy	current;
	bool		defined;

	if (new_epoch)
		defined = rl_definition_lookup_at(target->label, &current,
										  &target->epoch);
	else
		defined = rl_definition_lookup(target->label, &current);
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
	if (!store_may_change && rl_store_of(&current) != target->store)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("rate limit \"%s\" was redefined while the call waited for its state",
						text_to_cstring(target->label)),
				 errdetail("It no longer keeps its state in the %s store.",
						   target->store->name),
				 errhint("Retry the transaction.")));
	target->policy = current;
	rl_target_require_rate(target);
	rl_target_readdress(target, &current);
	apply_override(target, false);
	set_origin(target);
	target->store = rl_store_of(&target->policy);
}

/* reread, for a call that holds its state, or is about to. */
void
rl_target_reread(RlTarget *target)
{
	reread(target, false, false);
}

/*
 * The same, with the epoch read again first: for a call that read its
 * policy before the epoch was known (rl_definition_lookup_at).
 */
void
rl_target_reread_epoch(RlTarget *target)
{
	reread(target, false, true);
}

/* rl_target_reread, then the count under the policy now in force. */
void
rl_target_reread_count(RlTarget *target, double count, bool reserve)
{
	reread(target, false, false);
	rl_target_check_count(target, count, reserve);
}

/*
 * A call that slept (rl_limit's wait) before it decides: its definition
 * read again, as the table store does once a row is held (a
 * memory limit holds nothing to wait for, so only this sees a change made
 * while it slept: a lowered rate or capacity, shadow mode switched off).
 * The epoch is read first, so that the policy is never older than it.
 */
void
rl_target_recheck(RlTarget *target, double count, bool reserve)
{
	if (!target->defined)
		return;
	reread(target, true, true);
	rl_target_check_count(target, count, reserve);
}

/*
 * Refuse a count the limit can never grant.  A partial call asks for at
 * most what a full key holds, so its count may exceed the capacity; it
 * decides on what the key holds, which a sharded call does not see.
 */
void
rl_target_check_count(const RlTarget *target, double count, bool reserve)
{
	const RlPolicy *p = &target->policy;
	const char *problem;

	if (target->partial && p->shards > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a sharded limit cannot grant part of a call"),
				 errdetail("Limit \"%s\" has %d shards; a call takes from one or two of them, so what the key holds is not what a call could take.",
						   text_to_cstring(target->label), p->shards)));
	if (target->partial && count > p->capacity && count <= RL_MAX_AMOUNT)
		count = p->capacity;
	problem = rl_count_problem(p, count, reserve);

	if (problem == NULL)
		return;
	if (p->has_max_debt)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", problem),
				 reserve ?
				 errdetail("Under max_debt a call may take the key below zero without a reservation.") :
				 errdetail("The count is %g; the capacity is %g and max_debt is %g.",
						   count, p->capacity, p->max_debt)));
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

