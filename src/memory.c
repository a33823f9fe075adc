/*-------------------------------------------------------------------------
 *
 * memory.c
 *	  The memory store: the state of limits defined with storage 'memory',
 *	  in shared memory, one entry per (database, extension, stored name,
 *	  key).  No row, no transaction id, no WAL, no vacuum: it works in
 *	  READ ONLY transactions and on hot standbys, each server on its own.
 *
 * An entry holds the committed state (value, ts) and what transactions
 * still in progress have taken from it (pending, and how many of them
 * hold the entry).  A call decides on the committed state brought forward
 * to now, less pending: so a grant takes its tokens at once, seen by every
 * session, and two sessions can never both take the last token.  When the
 * taking transaction commits, the take becomes part of the committed state
 * (rl_commit_take, at commit time, which never leaves more tokens than
 * taking at grant time would); when it rolls back, or rolls back to a
 * savepoint, the take just leaves pending: the committed state never saw
 * it, so the rollback returns exactly what the rolled-back work took.
 * A take (or refund) that commits after a definition change of its
 * database is not applied under the policy it was granted under: it is
 * owed, brought forward to its call's time under that policy as the table
 * store's row was, and lands under the policy of whoever reads the entry
 * (landed), until a call that knows its policy is in force folds it in.
 * What gives tokens (a refund, a block's end is not one, a reset, a
 * definition dropped) and blocks happen only at commit, so no session is
 * ever granted tokens that a transaction which later rolls back gave.
 * PREPARE TRANSACTION after any of these is refused.
 *
 * Where it lives:
 * - shared_preload_libraries = 'ratelimit': in the main segment, sized by
 *   ratelimit.memory_max_keys at start.  The postmaster writes every entry
 *   to pg_stat/ratelimit_memory.state when it exits normally (smart, fast
 *   or immediate shutdown; takes of transactions still open, which only an
 *   immediate shutdown leaves, are kept: one may have committed) and reads the
 *   file back at the next start, once its checksum and every entry are
 *   found valid.  A marker file, removed only once the file is durably
 *   written, tells a start after a crash (the postmaster killed, or a
 *   shutdown that failed) from a clean one; a reinitialisation after a
 *   backend crash is one too, and so is a start whose file is not valid,
 *   which restores nothing from it.  After a crash,
 *   ratelimit.memory_after_crash decides: 'full' (the default), every key
 *   starts full; 'empty', every key with no entry counts as emptied at the
 *   restart and refills from there.
 * - Not preloaded, PostgreSQL 17 and later: in a segment of the DSM
 *   registry, made by the first backend that uses a memory limit.  Nothing
 *   is saved at shutdown, so every start is treated as after a crash.
 * - Not preloaded, 15 and 16: unavailable; a memory limit is an error that
 *   names the setting.
 *
 * Entries.  An entry is addressed by a SHA-256 digest of (database,
 * extension, stored name, key): two different limits never share one,
 * whatever keys an attacker chooses.  A bucket array of chains, partitioned
 * by 128 LWLocks, so unrelated keys never contend on one lock.  At most
 * ratelimit.memory_max_keys entries exist.  An entry no transaction holds
 * whose state has refilled completely (idle_at passed) means the same as
 * no entry, and is dropped when room is needed; when none can be dropped,
 * a call on a new key is an error (53400), never an eviction of live state.
 * idle_at is computed under the policy that last wrote the entry; a change
 * to a memory limit's definition sets it to never for every entry of the
 * name, after the change's invalidation is sent (an epoch tells a commit
 * that raced with it), until a call under the new policy writes it.
 *
 * Locking.  A call holds the partitions of its keys exclusively (in
 * ascending order, so calls on several keys cannot deadlock) from reading
 * the state to taking the tokens; nothing in between reads a table or
 * waits for anything else.  Commit and abort take each partition on its
 * own.  Each file of the store states the rule of what it owns at its top.
 *
 * Files (memory_internal.h holds what they share):
 * - memory.c: the settings, attaching the store (its area in shmem.c),
 *   the addresses of keys and names, what rl_stats_info shows, and the
 *   check of inline memory configs.  It takes no lock of the store but
 *   the spinlock, for rl_stats_info's counters.
 * - memory_table.c: the shared hash, its partitions and locking,
 *   placement and the state a call decides on.
 * - memory_xact.c: a transaction's pending changes, commit and abort.
 * - memory_names.c: definition changes: epochs, the barrier, dropped names.
 * - memory_file.c: the state file and the start after a crash.
 * - memory_gc.c: rl_gc and rl_memory_forget on the store.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "compat.h"
#include "memory_internal.h"
#include "names.h"
#include "sha256.h"
#include "shmem.h"

#define MEM_DSM_NAME "ratelimit_memory"
#define MEM_DSM_SIZE_NAME "ratelimit_memory_size"
#define MEM_TRANCHE_NAME "ratelimit_memory"

static int	memory_max_keys = 100000;
int			memory_max_keys_per_database = -1;
static bool memory_inline = false;
int			memory_after_crash = AFTER_CRASH_FULL;

MemShared  *mem_shared = NULL;
static bool callbacks_registered = false;

/* A new store, in the main segment or the DSM registry (shmem.c). */
static void
store_area_init(void *ptr, int32 max_keys, int tranche, bool in_dsm)
{
	mem_store_init(ptr, max_keys, tranche);
	/* nothing was saved in the DSM registry: every start is after a crash */
	if (in_dsm)
		mem_start_after_crash(ptr);
}

/* The store in shared memory, sized by ratelimit.memory_max_keys. */
static RlShmemArea store_area = {
	.name = "ratelimit memory store",
	.dsm_name = MEM_DSM_NAME,
	.dsm_size_name = MEM_DSM_SIZE_NAME,
	.tranche_name = MEM_TRANCHE_NAME,
	.size_setting = &memory_max_keys,
	.size = mem_store_size,
	.init = store_area_init,
	.postmaster_start = mem_state_start,
	.dump = mem_state_dump,
	.attached = (void **) &mem_shared,
};

static const struct config_enum_entry after_crash_options[] = {
	{"full", AFTER_CRASH_FULL, false},
	{"empty", AFTER_CRASH_EMPTY, false},
	{NULL, 0, false}
};

/* The store, attached if needed; an error when it is unavailable. */
MemShared *
mem_store(void)
{
	if (mem_shared == NULL && rl_shmem_attach(&store_area) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the ratelimit memory store is not available"),
				 errdetail("On PostgreSQL 15 and 16 it needs the library preloaded."),
				 errhint("Add ratelimit to shared_preload_libraries and restart the server.")));
	if (!callbacks_registered)
	{
		RegisterXactCallback(memory_xact_callback, NULL);
		RegisterSubXactCallback(memory_subxact_callback, NULL);
		RegisterResourceReleaseCallback(memory_release_callback, NULL);
		CacheRegisterRelcacheCallback(memory_relcache_callback, (Datum) 0);
		callbacks_registered = true;
	}
	return mem_shared;
}

/*
 * The context of a setting that sizes shared memory.  Preloaded,
 * PGC_POSTMASTER: the postmaster asked for the memory at start and makes
 * it again at that size after a crash, so a reload must not change the
 * size it reads then.  Not preloaded, PGC_SIGHUP: a library loaded after
 * start may not define a PGC_POSTMASTER setting, and the first user sizes
 * the segment in the DSM registry for good anyway.
 */
GucContext
rl_sizing_context(void)
{
	return process_shared_preload_libraries_in_progress ?
		PGC_POSTMASTER : PGC_SIGHUP;
}

/* Define the settings and find where the store lives; from _PG_init. */
void
rl_memory_init(void)
{
	DefineCustomIntVariable("ratelimit.memory_max_keys",
							"Sets the most keys the memory store holds.",
							"Read when the store is created: at server start when preloaded (a change needs a restart), by the first memory call otherwise.",
							&memory_max_keys,
							100000,
							MEM_PARTITIONS,
							INT_MAX / 2,
							rl_sizing_context(),
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("ratelimit.memory_max_keys_per_database",
							"Sets the most keys of the memory store one database holds.",
							"-1: no bound but the store's own.",
							&memory_max_keys_per_database,
							-1,
							-1,
							INT_MAX / 2,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("ratelimit.inline_memory",
							 "Allows inline configs with storage 'memory'.",
							 "The memory store is shared by every database of the server: only a superuser, or a role granted SET on it, turns it on (for a role with ALTER ROLE ... SET).",
							 &memory_inline,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("ratelimit.memory_after_crash",
							 "Sets how memory limits start after a crash: every key full, or empty.",
							 "Read when the store is created after a crash (or, not preloaded, at its creation).",
							 &memory_after_crash,
							 AFTER_CRASH_FULL,
							 after_crash_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	mem_names_init();
	rl_shmem_register(&store_area);
}

/* Feed one length-prefixed field to a digest. */
static void
digest_field(RlSha256 *ctx, const void *data, uint32 len)
{
	rl_sha256_update(ctx, &len, sizeof(len));
	rl_sha256_update(ctx, data, len);
}

/*
 * SHA-256 of (what, database, space, name[, key]), every field prefixed
 * with its length, so that no two different tuples feed the same bytes.
 */
static void
digest(char what, Oid space, text *name, text *key, uint8 *out)
{
	RlSha256	ctx;
	Oid			db = MyDatabaseId;

	rl_sha256_init(&ctx);
	digest_field(&ctx, &what, 1);
	digest_field(&ctx, &db, sizeof(Oid));
	digest_field(&ctx, &space, sizeof(Oid));
	digest_field(&ctx, VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	if (key)
		digest_field(&ctx, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	rl_sha256_final(&ctx, out);
}

/*
 * The last stored name whose id this backend computed, and the id: calls
 * name one limit far more often than they change limits, and the id is a
 * function of (database, space, name) alone, so a hit is exact and never
 * stale.  Names longer than the buffer are not kept.
 */
#define NAME_ID_CACHE_BYTES 1024
static Oid	cached_name_space = InvalidOid;
static int	cached_name_len = -1;
static char *cached_name = NULL;
static uint8 cached_name_id[RL_MEMORY_NAME_ID_BYTES];

/* The id of a stored name, for changes to its definition. */
void
rl_memory_name_id(Oid space, text *name, uint8 *name_id)
{
	uint8		full[RL_SHA256_BYTES];
	int			len = VARSIZE_ANY_EXHDR(name);

	if (cached_name != NULL && space == cached_name_space &&
		len == cached_name_len &&
		memcmp(cached_name, VARDATA_ANY(name), len) == 0)
	{
		memcpy(name_id, cached_name_id, RL_MEMORY_NAME_ID_BYTES);
		return;
	}
	digest('n', space, name, NULL, full);
	memcpy(name_id, full, RL_MEMORY_NAME_ID_BYTES);
	if (len > NAME_ID_CACHE_BYTES)
		return;
	if (cached_name == NULL)
		cached_name = MemoryContextAlloc(TopMemoryContext,
										 NAME_ID_CACHE_BYTES);
	memcpy(cached_name, VARDATA_ANY(name), len);
	memcpy(cached_name_id, name_id, RL_MEMORY_NAME_ID_BYTES);
	cached_name_len = len;
	cached_name_space = space;
}

/*
 * The address of (stored name, key) in this database and extension
 * (space: the OID of its rl_definitions, which DROP and CREATE EXTENSION
 * change).  Attaches the store: an error when it is unavailable.
 */
void
rl_memory_key(Oid space, text *name, text *key, RlMemoryKey *k)
{
	MemShared  *s = mem_store();
	uint32		h;

	StaticAssertStmt(RL_MEMORY_ID_BYTES == RL_SHA256_BYTES,
					 "an id is a SHA-256 digest");
	digest('k', space, name, key, k->id);
	rl_memory_name_id(space, name, k->name_id);
	k->space = space;
	k->is_inline = memchr(VARDATA_ANY(name), RL_INLINE_SEPARATOR,
						  VARSIZE_ANY_EXHDR(name)) != NULL;
	h = mem_bucket_hash(s, k->id);
	k->bucket = h & (s->nbuckets - 1);
	k->partition = (int) (k->bucket % MEM_PARTITIONS);
}

/*
 * Raise the error of an unavailable store (15 and 16 not preloaded) when
 * this server has none, without making it: for rl_define.
 */
void
rl_memory_require(void)
{
	if (rl_shmem_storage() == RL_SHMEM_NONE)
		(void) mem_store();
}

/* Attach the store (an error when it is unavailable). */
void
rl_memory_attach(void)
{
	(void) mem_store();
}

/* Whether this backend has attached the store. */
bool
rl_memory_attached(void)
{
	return mem_shared != NULL;
}

/* Whether this server has a memory store (preloaded, or 17+). */
bool
rl_memory_available(void)
{
	return rl_shmem_storage() != RL_SHMEM_NONE;
}

/* The memory columns of rl_stats_info. */
void
rl_memory_info(RlMemoryInfo *info)
{
	memset(info, 0, sizeof(*info));
	info->storage = rl_shmem_storage_name(rl_shmem_storage());
	if (rl_shmem_storage() == RL_SHMEM_NONE)
		return;
	(void) mem_store();
	SpinLockAcquire(&mem_shared->mutex);
	info->max_keys = mem_shared->max_keys;
	info->keys = mem_shared->used;
	info->full_errors = mem_shared->full_errors;
	info->empty_since = mem_shared->empty_since;
	SpinLockRelease(&mem_shared->mutex);
}

/*
 * Refuse an inline config with storage 'memory' unless
 * ratelimit.inline_memory is on for the session or the role that called
 * (not the owner a SECURITY DEFINER function runs as) is a superuser: any
 * role can pass one, and the store is shared by every database.
 */
void
rl_memory_check_inline(void)
{
	if (memory_inline || superuser_arg(GetOuterUserId()))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to use an inline config with storage \"memory\""),
			 errdetail("The memory store is shared by every database of the server."),
			 errhint("Define the limit with rl_define(), or have an administrator turn ratelimit.inline_memory on for the role.")));
}
