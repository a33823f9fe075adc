/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Per-limit statistics: cumulative counters in shared memory, one entry
 *	  per (database, limit name), read through the view rl_stats.
 *
 * Where the counters live depends on how the library was loaded (shmem.c
 * makes, finds and dumps the table, as it does the memory store):
 *
 * - shared_preload_libraries = 'ratelimit' (any major): in the main shared
 *   memory segment, sized at postmaster start.  The postmaster writes them
 *   to pg_stat/ratelimit.stat when it exits normally and reads (then
 *   removes) that file at the next start, as pg_stat_statements does.  An
 *   immediate shutdown (pg_ctl stop -m immediate) is a normal exit of the
 *   postmaster too: it stops the other processes with SIGQUIT, skips the
 *   shutdown checkpoint, then exits with code 0, so the counters are kept,
 *   though a call under way at that instant may be counted only in part.
 *   After a crash (a server process dies and the postmaster reinitialises
 *   shared memory, or the postmaster itself is killed) they start from
 *   zero.
 * - Not preloaded, PostgreSQL 17 and later: in a segment of the DSM
 *   registry, created by the first backend that counts a call.  It lives
 *   until the server stops; nothing is written at shutdown, since no
 *   process of ours runs in the postmaster.
 * - Not preloaded, PostgreSQL 15 and 16: nowhere.  Calls are not counted,
 *   and rl_stats is empty with a NOTICE saying why.
 *
 * Counters are statistics, not transactional state: a call is counted
 * when it ends, whether its transaction later commits or rolls back.
 *
 * Concurrency.  One spinlock guards the whole table.  A call holds it to
 * find its entry (an open-addressing hash of entry numbers), add its
 * deltas and let go: a few hundred instructions, no allocation, no I/O.
 * Entries are never removed one by one (rl_stats_reset(name) zeroes
 * them), only all together by rl_stats_reset(), so an entry number stays
 * valid as long as the lock is held.  At most ratelimit.stats_max_names
 * entries exist; a call on a further name is not counted for its name,
 * only in untracked_calls (rl_stats_info).
 *
 * Lock waits are measured where a call can wait for a row lock: storage.c
 * first tries the lock without waiting, and only when that would block
 * calls rl_stats_lock_wait_start, then waits, then rl_stats_lock_wait_end.
 * The call in progress says, through rl_stats_attribute, which limit its
 * waits belong to.
 *
 * Which keys are refused most is refused.c's (rl_refused): fed by the same
 * refusals, emptied by the same rl_stats_reset, attached with this table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/htup_details.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "clock.h"
#include "compat.h"
#include "names.h"
#include "memory.h"
#include "refused.h"
#include "shmem.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(rl_stats_rows);
PG_FUNCTION_INFO_V1(rl_stats_info);
PG_FUNCTION_INFO_V1(rl_stats_reset);

#define STATS_DUMP_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/ratelimit.stat"
#define STATS_FILE_MAGIC 0x524c5331 /* "RLS1" */
#define STATS_DSM_NAME "ratelimit_stats"
#define STATS_DSM_SIZE_NAME "ratelimit_stats_size"

/* One (database, name) and its counters. */
typedef struct RlStatsEntry
{
	Oid			dbid;
	int32		name_len;
	char		name[RL_MAX_NAME_BYTES];
	double		values[RL_STAT_COUNT];
	bool		has_refusal;
	TimestampTz last_refusal;
	TimestampTz stats_reset;
} RlStatsEntry;

/*
 * The table, followed in memory by nslots int32 slots (an entry number,
 * or -1 for none) and max_names entries.
 */
typedef struct RlStatsShared
{
	slock_t		mutex;
	int32		max_names;
	int32		nslots;			/* a power of two, at least 2 * max_names */
	int32		used;			/* entries 0 .. used - 1 are in use */
	int64		untracked_calls;
	TimestampTz stats_reset;
} RlStatsShared;

static bool track_stats = true;
static int	stats_max_names = 1000;

static RlStatsShared *shared = NULL;
static bool notice_given = false;

/* The call in progress: whom its waits belong to, and a wait under way. */
static RlStatsCall *attributed = NULL;
static bool waiting = false;
static instr_time wait_start;

static int32 *
table_slots(RlStatsShared *s)
{
	return (int32 *) ((char *) s + MAXALIGN(sizeof(RlStatsShared)));
}

static RlStatsEntry *
table_entries(RlStatsShared *s)
{
	return (RlStatsEntry *) ((char *) table_slots(s) +
							 MAXALIGN(sizeof(int32) * s->nslots));
}

/* The number of hash slots for max_names entries. */
static int32
slots_for(int32 max_names)
{
	int32		n = 1;

	while (n < 2 * max_names)
		n <<= 1;
	return n;
}

/* The bytes of a table of max_names entries. */
static Size
table_size(int32 max_names)
{
	Size		size = MAXALIGN(sizeof(RlStatsShared));

	size = add_size(size, MAXALIGN(mul_size(sizeof(int32), slots_for(max_names))));
	return add_size(size, mul_size(sizeof(RlStatsEntry), max_names));
}

/* An empty table, counting from now. */
static void
table_init(RlStatsShared *s, int32 max_names)
{
	SpinLockInit(&s->mutex);
	s->max_names = max_names;
	s->nslots = slots_for(max_names);
	s->used = 0;
	s->untracked_calls = 0;
	s->stats_reset = rl_clock_now();
	memset(table_slots(s), 0xff, sizeof(int32) * s->nslots);
}

/* Forget every entry (the mutex held, or no one else attached). */
static void
table_clear(RlStatsShared *s, TimestampTz now)
{
	s->used = 0;
	s->untracked_calls = 0;
	s->stats_reset = now;
	memset(table_slots(s), 0xff, sizeof(int32) * s->nslots);
}

static uint32
entry_hash(Oid dbid, const char *name, int len)
{
	return hash_combine(hash_bytes_uint32(dbid),
						hash_bytes((const unsigned char *) name, len));
}

/*
 * The entry of (dbid, name), created when create and there is room; -1
 * when there is none.  The mutex must be held.
 */
static int32
table_find(RlStatsShared *s, Oid dbid, const char *name, int len,
		   uint32 hash, bool create, TimestampTz now)
{
	int32	   *slots = table_slots(s);
	RlStatsEntry *entries = table_entries(s);
	uint32		mask = (uint32) s->nslots - 1;

	for (uint32 i = hash & mask;; i = (i + 1) & mask)
	{
		int32		e = slots[i];
		RlStatsEntry *entry;

		if (e < 0)
		{
			if (!create || s->used >= s->max_names)
				return -1;
			e = s->used++;
			entry = &entries[e];
			memset(entry, 0, sizeof(RlStatsEntry));
			entry->dbid = dbid;
			entry->name_len = len;
			memcpy(entry->name, name, len);
			entry->stats_reset = now;
			slots[i] = e;
			return e;
		}
		entry = &entries[e];
		if (entry->dbid == dbid && entry->name_len == len &&
			memcmp(entry->name, name, len) == 0)
			return e;
	}
}

/* Put an entry read back from the dump file into the table. */
static void
table_restore(RlStatsShared *s, const RlStatsEntry *saved)
{
	int32		e;

	if (saved->name_len <= 0 || saved->name_len > RL_MAX_NAME_BYTES)
		return;
	e = table_find(s, saved->dbid, saved->name, saved->name_len,
				   entry_hash(saved->dbid, saved->name, saved->name_len),
				   true, saved->stats_reset);
	if (e >= 0)
		table_entries(s)[e] = *saved;
}

/* The dump file's contents (rl_shmem_write_file's writer). */
static bool
write_table(FILE *file, void *arg)
{
	RlStatsShared *s = arg;
	uint32		header[3] = {STATS_FILE_MAGIC, RL_STAT_COUNT, sizeof(RlStatsEntry)};

	return fwrite(header, sizeof(header), 1, file) == 1 &&
		fwrite(&s->untracked_calls, sizeof(int64), 1, file) == 1 &&
		fwrite(&s->stats_reset, sizeof(TimestampTz), 1, file) == 1 &&
		fwrite(&s->used, sizeof(int32), 1, file) == 1 &&
		(s->used == 0 ||
		 fwrite(table_entries(s), sizeof(RlStatsEntry), s->used,
				file) == (size_t) s->used);
}

/*
 * Write the table to the dump file: the postmaster, exiting normally (code
 * 0) after a smart, fast or immediate shutdown (shmem.c).  After a crash
 * it exits with code 1, before it reinitialises shared memory or exits,
 * and nothing is written.  Every backend is gone by then, so no lock is
 * needed.
 */
static void
stats_dump(void *ptr)
{
	(void) rl_shmem_write_file(STATS_DUMP_FILE, write_table, ptr);
}

/*
 * Read back what the last clean shutdown wrote, then remove the file, so
 * that a crash later never brings back counters older than the crash.
 */
static void
stats_load(void *ptr)
{
	RlStatsShared *s = ptr;
	FILE	   *file = AllocateFile(STATS_DUMP_FILE, PG_BINARY_R);
	uint32		header[3];
	int64		untracked;
	TimestampTz reset;
	int32		n;

	if (file == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", STATS_DUMP_FILE)));
		return;
	}
	if (fread(header, sizeof(header), 1, file) != 1 ||
		header[0] != STATS_FILE_MAGIC || header[1] != RL_STAT_COUNT ||
		header[2] != sizeof(RlStatsEntry) ||
		fread(&untracked, sizeof(int64), 1, file) != 1 ||
		fread(&reset, sizeof(TimestampTz), 1, file) != 1 ||
		fread(&n, sizeof(int32), 1, file) != 1)
	{
		ereport(LOG,
				(errmsg("ignoring ratelimit statistics file \"%s\": it was written by another version",
						STATS_DUMP_FILE)));
		goto done;
	}
	s->untracked_calls = untracked;
	s->stats_reset = reset;
	for (int32 i = 0; i < n; i++)
	{
		RlStatsEntry saved;

		if (fread(&saved, sizeof(RlStatsEntry), 1, file) != 1)
		{
			ereport(LOG,
					(errmsg("ratelimit statistics file \"%s\" is truncated",
							STATS_DUMP_FILE)));
			break;
		}
		table_restore(s, &saved);
	}
	if (n > s->max_names)
		ereport(LOG,
				(errmsg("ratelimit statistics of %d limit names were not restored",
						n - s->max_names),
				 errdetail("ratelimit.stats_max_names is %d.", s->max_names)));
done:
	FreeFile(file);
	unlink(STATS_DUMP_FILE);
}

/* A new table (shmem.c): counting from now. */
static void
table_area_init(void *ptr, int32 max_names, int tranche, bool in_dsm)
{
	table_init(ptr, max_names);
}

/*
 * The table in shared memory, sized by ratelimit.stats_max_names.  In the
 * main segment it is filled from the dump file when the postmaster makes
 * it (at start and after a crash).  Without preloading, its size is fixed
 * by the first backend that creates it: ratelimit.stats_max_names can
 * differ in a backend started after a reload (shmem.c).
 */
static RlShmemArea table_area = {
	.name = "ratelimit statistics",
	.dsm_name = STATS_DSM_NAME,
	.dsm_size_name = STATS_DSM_SIZE_NAME,
	.size_setting = &stats_max_names,
	.size = table_size,
	.init = table_area_init,
	.postmaster_start = stats_load,
	.dump = stats_dump,
	.attached = (void **) &shared,
};

/*
 * The table, attached if needed, and rl_refused's sketches with it, so
 * that a call that counts a refusal never has to; NULL when statistics are
 * unavailable.
 */
static RlStatsShared *
stats_table(void)
{
	if (shared == NULL && rl_shmem_attach(&table_area) != NULL)
		(void) rl_refused_attach();
	return shared;
}

/* Define the settings and find where the counters live; from _PG_init. */
void
rl_stats_init(void)
{
	DefineCustomBoolVariable("ratelimit.track_stats",
							 "Counts calls per limit name in rl_stats.",
							 NULL,
							 &track_stats,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	/* read when the table is made: at server start, or by the first user */
	DefineCustomIntVariable("ratelimit.stats_max_names",
							"Sets the most limit names rl_stats tracks.",
							"Read when the statistics table is created (preloaded: at server start, a change needs a restart); calls on further names are counted only in rl_stats_info.untracked_calls.",
							&stats_max_names,
							1000,
							10,
							100000,
							rl_sizing_context(),
							0,
							NULL, NULL, NULL);

	rl_shmem_register(&table_area);
	rl_refused_init();
}

/* Whether calls are being counted. */
bool
rl_stats_tracking(void)
{
	return track_stats && rl_shmem_storage() != RL_SHMEM_NONE;
}

/*
 * The call in progress counts its waits into call from now on (NULL:
 * nowhere).  Attaches the table, so that counting at the end of a call,
 * possibly in an error, never has to.
 */
void
rl_stats_attribute(RlStatsCall *call)
{
	if (call != NULL && stats_table() == NULL)
		call = NULL;
	attributed = call;
	waiting = false;
}

/* The call is about to wait for a row lock. */
void
rl_stats_lock_wait_start(void)
{
	if (attributed == NULL)
		return;
	attributed->values[RL_STAT_lock_waits] += 1;
	INSTR_TIME_SET_CURRENT(wait_start);
	waiting = true;
}

/* Add the time of the wait under way, if any, in milliseconds. */
static void
end_wait(void)
{
	instr_time	elapsed;

	if (!waiting || attributed == NULL)
		return;
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, wait_start);
	attributed->values[RL_STAT_lock_wait_time] += INSTR_TIME_GET_MILLISEC(elapsed);
	waiting = false;
}

/* The call holds the row lock it waited for. */
void
rl_stats_lock_wait_end(void)
{
	end_wait();
}

/* The lock the call was about to wait for turned out to be no row at all. */
void
rl_stats_lock_wait_cancel(void)
{
	if (!waiting || attributed == NULL)
		return;
	attributed->values[RL_STAT_lock_waits] -= 1;
	waiting = false;
}

/* A sharded call found both shards it picked busy. */
void
rl_stats_both_shards_busy(void)
{
	if (attributed != NULL)
		attributed->values[RL_STAT_both_shards_busy] += 1;
}

/*
 * Add what one call did to one limit to the limit's counters, at time
 * now.  Safe in an error path: it neither allocates nor raises.
 */
void
rl_stats_record(text *name, RlStatsCall *call, RlStatsOutcome outcome,
				TimestampTz now)
{
	RlStatsShared *s = shared;
	const char *data = VARDATA_ANY(name);
	int			len = VARSIZE_ANY_EXHDR(name);
	uint32		hash;
	int32		e;

	if (attributed == call)
	{
		end_wait();
		attributed = NULL;
	}
	if (s == NULL || len <= 0 || len > RL_MAX_NAME_BYTES)
		return;
	call->values[RL_STAT_calls] = outcome != RL_STATS_CHECKED;
	switch (outcome)
	{
		case RL_STATS_GRANTED:
			call->values[RL_STAT_granted] = 1;
			break;
		case RL_STATS_REFUSED:
			call->values[RL_STAT_refused] = 1;
			call->refused = true;
			break;
		case RL_STATS_ERROR:
			call->values[RL_STAT_errors] = 1;
			break;
		case RL_STATS_CHECKED:
			break;
	}
	hash = entry_hash(MyDatabaseId, data, len);

	SpinLockAcquire(&s->mutex);
	e = table_find(s, MyDatabaseId, data, len, hash, true, now);
	if (e < 0)
		s->untracked_calls += outcome != RL_STATS_CHECKED;
	else
	{
		RlStatsEntry *entry = &table_entries(s)[e];

#define RL_STAT_ADD_COUNT(id) entry->values[id] += call->values[id]
#define RL_STAT_ADD_SUM(id) entry->values[id] += call->values[id]
#define RL_STAT_ADD_MAX(id) entry->values[id] = Max(entry->values[id], call->values[id])
#define RL_STAT_ADD(name, kind) RL_STAT_ADD_##kind(RL_STAT_##name);
		RL_STATS_COUNTERS(RL_STAT_ADD)
#undef RL_STAT_ADD
		if (call->refused)
		{
			entry->has_refusal = true;
			entry->last_refusal = now;
		}
	}
	SpinLockRelease(&s->mutex);
}

/* Say once per session why there are no statistics (also rl_refused). */
void
rl_stats_notice_unavailable(void)
{
	if (notice_given)
		return;
	notice_given = true;
	ereport(NOTICE,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("ratelimit statistics are not available"),
			 errdetail("On PostgreSQL 15 and 16 they need shared_preload_libraries = 'ratelimit'."),
			 errhint("Add ratelimit to shared_preload_libraries and restart the server.")));
}

/* rl_stats_rows(): one row per (database, name) tracked. */
Datum
rl_stats_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RlStatsShared *s = stats_table();
	int32		used;

	InitMaterializedSRF(fcinfo, 0);
	if (s == NULL)
	{
		rl_stats_notice_unavailable();
		return (Datum) 0;
	}
	SpinLockAcquire(&s->mutex);
	used = s->used;
	SpinLockRelease(&s->mutex);

	for (int32 e = 0; e < used; e++)
	{
		RlStatsEntry entry;
		Datum		values[RL_STAT_COUNT + 4];
		bool		nulls[RL_STAT_COUNT + 4] = {false};

		/* a reset may have emptied the table meanwhile */
		SpinLockAcquire(&s->mutex);
		if (e >= s->used)
		{
			SpinLockRelease(&s->mutex);
			break;
		}
		entry = table_entries(s)[e];
		SpinLockRelease(&s->mutex);

		values[0] = ObjectIdGetDatum(entry.dbid);
		values[1] = PointerGetDatum(cstring_to_text_with_len(entry.name,
															 entry.name_len));
#define RL_STAT_POS(id) (2 + (id) + ((id) >= RL_STATS_V12_COUNTERS ? 2 : 0))
#define RL_STAT_OUT_COUNT(id) Int64GetDatum((int64) entry.values[id])
#define RL_STAT_OUT_SUM(id) Float8GetDatum(entry.values[id])
#define RL_STAT_OUT_MAX(id) Float8GetDatum(entry.values[id])
#define RL_STAT_OUT(name, kind) \
		values[RL_STAT_POS(RL_STAT_##name)] = RL_STAT_OUT_##kind(RL_STAT_##name);
		RL_STATS_COUNTERS(RL_STAT_OUT)
#undef RL_STAT_OUT
		nulls[2 + RL_STATS_V12_COUNTERS] = !entry.has_refusal;
		values[2 + RL_STATS_V12_COUNTERS] = TimestampTzGetDatum(entry.last_refusal);
		values[3 + RL_STATS_V12_COUNTERS] = TimestampTzGetDatum(entry.stats_reset);
		/* a schema at 1.2 returns fewer columns: the ones after are unread */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * rl_stats_info(): where the counters live, the bound on names, how many
 * are tracked, calls on names past the bound, and when rl_stats_reset()
 * last emptied the table (or it was created).
 */
Datum
rl_stats_info(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	RlStatsShared *s = stats_table();
	RlMemoryInfo memory;
	Datum		values[10];
	bool		nulls[10] = {false, true, true, true, true,
	false, true, true, true, true};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(rl_shmem_storage_name(s ? rl_shmem_storage() :
															 RL_SHMEM_NONE));
	if (s != NULL)
	{
		SpinLockAcquire(&s->mutex);
		values[1] = Int32GetDatum(s->max_names);
		values[2] = Int32GetDatum(s->used);
		values[3] = Int64GetDatum(s->untracked_calls);
		values[4] = TimestampTzGetDatum(s->stats_reset);
		SpinLockRelease(&s->mutex);
		nulls[1] = nulls[2] = nulls[3] = nulls[4] = false;
	}
	rl_memory_info(&memory);
	values[5] = CStringGetTextDatum(memory.storage);
	if (strcmp(memory.storage, "unavailable") != 0)
	{
		values[6] = Int64GetDatum(memory.max_keys);
		values[7] = Int64GetDatum(memory.keys);
		values[8] = Int64GetDatum(memory.full_errors);
		values[9] = TimestampTzGetDatum(memory.empty_since);
		nulls[6] = nulls[7] = nulls[8] = false;
		nulls[9] = memory.empty_since == 0;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/*
 * rl_stats_reset(name): zero one name's counters in this database, or,
 * for NULL, forget every entry of every database; rl_refused's alike.
 */
Datum
rl_stats_reset(PG_FUNCTION_ARGS)
{
	RlStatsShared *s = stats_table();
	TimestampTz now = rl_clock_now();

	if (s == NULL)
	{
		rl_stats_notice_unavailable();
		PG_RETURN_VOID();
	}
	rl_refused_reset(PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0));
	if (PG_ARGISNULL(0))
	{
		SpinLockAcquire(&s->mutex);
		table_clear(s, now);
		SpinLockRelease(&s->mutex);
	}
	else
	{
		text	   *name = PG_GETARG_TEXT_PP(0);
		const char *data = VARDATA_ANY(name);
		int			len = VARSIZE_ANY_EXHDR(name);
		uint32		hash = entry_hash(MyDatabaseId, data, len);
		int32		e;

		if (len <= 0 || len > RL_MAX_NAME_BYTES)
			PG_RETURN_VOID();
		SpinLockAcquire(&s->mutex);
		e = table_find(s, MyDatabaseId, data, len, hash, false, now);
		if (e >= 0)
		{
			RlStatsEntry *entry = &table_entries(s)[e];

			memset(entry->values, 0, sizeof(entry->values));
			entry->has_refusal = false;
			entry->stats_reset = now;
		}
		SpinLockRelease(&s->mutex);
	}
	PG_RETURN_VOID();
}
