/*-------------------------------------------------------------------------
 *
 * memory_file.c
 *	  The memory store's state file (pg_stat/ratelimit_memory.state, format
 *	  "RLM2"): written by the postmaster at a normal exit, checked (magic
 *	  number, major, entry size, every entry sane, CRC-32C) and read back at
 *	  the next start; the marker of a running server that tells a start
 *	  after a crash from a clean one; and ratelimit.memory_after_crash.
 *
 * The file is the header (MemFileHeader), count entries as a shutdown
 * saves them (saved_entry: nothing pending, held or owed), then the
 * store's empty_since and a CRC-32C of everything before it.  It is
 * written to a temporary name and renamed with durable_rename
 * (rl_shmem_write_file), so a crash while it is written leaves no file
 * that looks valid; it is removed once read, so that a crash later never
 * brings back state older than the crash.  The marker
 * (pg_stat/ratelimit_memory.running) is made at start and removed only
 * once the file is durably in place.
 *
 * Locking.  None: the file is written by the postmaster after every
 * backend is gone (shmem.c's exit callback), and read by the postmaster
 * while it makes the store, before any backend starts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pgstat.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "memory_internal.h"
#include "shmem.h"

#define MEM_STATE_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/ratelimit_memory.state"
#define MEM_RUNNING_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/ratelimit_memory.running"
#define MEM_FILE_MAGIC 0x524c4d32	/* "RLM2" */

static bool postmaster_started = false;

/*
 * The state file: this header, count entries, then the trailer: the
 * store's empty_since and a CRC-32C of everything before it.
 */
typedef struct MemFileHeader
{
	uint32		magic;
	uint32		pg_major;		/* PG_VERSION_NUM / 100 */
	uint32		entry_size;		/* sizeof(MemEntry) */
	uint32		count;
} MemFileHeader;

/*
 * An entry as the state file keeps it (saved, from e): nothing pending,
 * held or owed.
 */
static void
saved_entry(MemShared *s, const MemEntry *e, MemEntry *saved)
{
	*saved = *e;
	/* a judgement of the last epoch stays good in the next run's first */
	saved->judged = saved->judged ==
		pg_atomic_read_u64(&mem_epoch_of(s, saved->dbid)->epoch) ?
		0 : PG_UINT64_MAX;

	/*
	 * What is owed lands with no policy to refill under: taken from
	 * the state as it was at its latest commit, never refilled, and a
	 * refund owed dropped (fail closed); judged in no epoch.
	 */
	if (saved->owed != 0)
	{
		if (saved->owed > 0)
		{
			saved->committed.value -= saved->owed;
			saved->committed.ts = Max(saved->committed.ts, saved->owed_at);
		}
		saved->owed = 0;
		saved->judged = PG_UINT64_MAX;
	}

	/*
	 * Entries still held: only an immediate shutdown leaves them.
	 * Takes of transactions it cut off are kept, taken now: the
	 * store cannot tell one whose commit record is already flushed
	 * (recovery keeps it; it may be waiting for a synchronous
	 * standby) from one recovery aborts, and losing a committed take
	 * would let its tokens be granted twice.  Taken from the state as
	 * it was, never refilled, at the latest of its time, now and the
	 * last take's (a clock ahead of this one, or stepped back): never
	 * more tokens than the real take would leave.  Its idle_at,
	 * computed before those takes (or other commits while it was
	 * held), is replaced by the bound mem_hold_note kept; judged in no
	 * epoch, so a defined limit's entry waits for a call or rl_gc
	 * under the policy then in force.
	 */
	if (saved->holders > 0)
	{
		TimestampTz latest = saved->idle_at;
		int64		bound = (int64) e->judged;

		if (saved->pending > 0 || saved->block_held)
		{
			TimestampTz now = GetCurrentTimestamp();

			saved->committed.value -= saved->pending;
			saved->committed.ts = Max(saved->committed.ts, Max(now, latest));
			saved->untouched = false;
		}

		/*
		 * A block queued by a cut-off transaction is kept too, for
		 * the same reason: nothing until the latest time mem_hold_note
		 * kept, which is at least the block's, and from empty then.
		 */
		if (saved->block_held)
			saved->committed.value = fmin(saved->committed.value, 0);
		saved->idle_at = bound >= MEM_NEVER - Max(saved->committed.ts, 0) ?
			MEM_NEVER : saved->committed.ts + bound;
		saved->judged = PG_UINT64_MAX;
	}
	saved->pending = 0;
	saved->holders = 0;
	saved->block_held = false;
}

/*
 * The state file's contents (rl_shmem_write_file's writer): the header,
 * every entry linked, the trailer; false when a write failed.
 */
static bool
write_state(FILE *file, void *arg)
{
	MemShared  *s = arg;
	MemFileHeader header = {
		.magic = MEM_FILE_MAGIC,
		.pg_major = PG_VERSION_NUM / 100,
		.entry_size = sizeof(MemEntry),
	};
	pg_crc32c	crc;
	MemEntry   *entries = mem_entries(s);
	int32	   *buckets = mem_buckets(s);

	/* the entries linked (used counts one a killed backend left unlinked) */
	for (uint32 b = 0; b < s->nbuckets; b++)
		for (int32 i = buckets[b]; i >= 0; i = entries[i].next)
			header.count++;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &header, sizeof(header));
	if (fwrite(&header, sizeof(header), 1, file) != 1)
		return false;
	for (uint32 b = 0; b < s->nbuckets; b++)
		for (int32 i = buckets[b]; i >= 0; i = entries[i].next)
		{
			MemEntry	saved;

			saved_entry(s, &entries[i], &saved);
			COMP_CRC32C(crc, &saved, sizeof(MemEntry));
			if (fwrite(&saved, sizeof(MemEntry), 1, file) != 1)
				return false;
		}

	/*
	 * After a crash with memory_after_crash = 'empty', a key with no entry
	 * counts as emptied at that restart: it still does after this shutdown.
	 */
	COMP_CRC32C(crc, &s->empty_since, sizeof(s->empty_since));
	FIN_CRC32C(crc);
	return fwrite(&s->empty_since, sizeof(s->empty_since), 1, file) == 1 &&
		fwrite(&crc, sizeof(crc), 1, file) == 1;
}

/*
 * Write every entry to the state file: the postmaster, exiting normally
 * (code 0; shmem.c).  After a crash, or a shutdown that failed (a PANIC, a
 * child killed), it exits with code 1 and nothing is written.  Takes of
 * transactions that never ended are kept.  The marker of a running server
 * goes only once the file is durably in place: a shutdown that could not
 * save the store leaves it, and the next start is one after a crash.
 */
void
mem_state_dump(void *ptr)
{
	if (rl_shmem_write_file(MEM_STATE_FILE, write_state, ptr))
		unlink(MEM_RUNNING_FILE);
}

/* Put an entry read back from the state file into the store. */
static void
store_restore(MemShared *s, const MemEntry *saved)
{
	uint32		bucket;
	int32		e;
	int			slot = MEM_DB_SHARED;
	MemEntry   *entry;

	bucket = mem_bucket_hash(s, saved->id) & (s->nbuckets - 1);
	if (mem_entry_find(s, saved->id, bucket, NULL) != NULL)
		return;
	SpinLockAcquire(&s->mutex);
	e = s->free_head;
	if (e >= 0)
	{
		slot = mem_db_slot(s, saved->dbid);
		s->free_head = mem_entries(s)[e].next;
		s->used++;
		s->dbs[slot].used++;
	}
	SpinLockRelease(&s->mutex);
	if (e < 0)
		return;
	entry = &mem_entries(s)[e];
	*entry = *saved;
	entry->dbslot = slot;
	entry->next = mem_buckets(s)[bucket];
	mem_buckets(s)[bucket] = e;
}

/* Apply ratelimit.memory_after_crash to a store that starts after a crash. */
void
mem_start_after_crash(MemShared *s)
{
	if (memory_after_crash == AFTER_CRASH_EMPTY)
		s->empty_since = GetCurrentTimestamp();
}

/*
 * Whether an entry read from the state file holds only values a shutdown
 * writes: finite amounts, nothing pending or owed, times a timestamptz can
 * hold.
 */
static bool
entry_sane(const MemEntry *e)
{
	uint8		flags[3];

	/* read as bytes: a bool holding anything but 0 or 1 is undefined */
	memcpy(&flags[0], &e->is_inline, 1);
	memcpy(&flags[1], &e->untouched, 1);
	memcpy(&flags[2], &e->block_held, 1);
	return isfinite(e->committed.value) &&
		!isinf(e->committed.prev) &&
		e->committed.ts >= RL_MIN_TIME && e->committed.ts < RL_END_TIME &&
		e->pending == 0 && e->holders == 0 && e->owed == 0 &&
		(e->owed_at == 0 ||
		 (e->owed_at >= RL_MIN_TIME && e->owed_at < RL_END_TIME)) &&
		flags[0] <= 1 && flags[1] <= 1 && flags[2] == 0 &&
		(e->judged == 0 || e->judged == PG_UINT64_MAX);
}

/*
 * Check the state file, open at its start, before anything in it is
 * trusted: this build's magic number, major and entry size, as many entries
 * as the header says, each sane, the trailer, a matching checksum, and
 * nothing after it.  NULL when it is valid (then *header and *empty_since
 * are set), otherwise why not, a sentence for errdetail.
 */
static const char *
state_file_problem(FILE *file, MemFileHeader *header, TimestampTz *empty_since)
{
	pg_crc32c	crc;
	pg_crc32c	saved_crc;
	bool		sane = true;

	if (fread(header, sizeof(*header), 1, file) != 1)
		return "It is shorter than its header.";
	if (header->magic != MEM_FILE_MAGIC ||
		header->pg_major != PG_VERSION_NUM / 100 ||
		header->entry_size != sizeof(MemEntry))
		return "It was written by another version of ratelimit or PostgreSQL, or its header is damaged.";
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, header, sizeof(*header));
	for (uint32 i = 0; i < header->count; i++)
	{
		MemEntry	saved;

		if (fread(&saved, sizeof(MemEntry), 1, file) != 1)
			return "It is truncated.";
		COMP_CRC32C(crc, &saved, sizeof(MemEntry));
		sane = sane && entry_sane(&saved);
	}
	if (fread(empty_since, sizeof(*empty_since), 1, file) != 1 ||
		fread(&saved_crc, sizeof(saved_crc), 1, file) != 1)
		return "It is truncated.";
	COMP_CRC32C(crc, empty_since, sizeof(*empty_since));
	FIN_CRC32C(crc);
	if (!EQ_CRC32C(crc, saved_crc))
		return "Its checksum does not match its contents.";
	if (fgetc(file) != EOF)
		return "It has bytes after its end.";
	if (!sane || (*empty_since != 0 &&
				  (*empty_since < RL_MIN_TIME || *empty_since >= RL_END_TIME)))
		return "It holds values a shutdown never writes.";
	return NULL;
}

/*
 * Read back what the last clean shutdown wrote, then remove the file, so
 * that a crash later never brings back state older than the crash.  A file
 * that cannot be read, or is not valid, restores nothing: the start is
 * one after a crash (ratelimit.memory_after_crash decides).  No file is a
 * first start.
 */
static void
memory_load(MemShared *s)
{
	FILE	   *file = AllocateFile(MEM_STATE_FILE, PG_BINARY_R);
	MemFileHeader header;
	const char *problem;
	uint32		lost = 0;
	TimestampTz empty_since;
	TimestampTz now = rl_clock_now();

	if (file == NULL)
	{
		if (errno == ENOENT)
			return;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", MEM_STATE_FILE),
				 errdetail("The memory store starts as after a crash.")));
		unlink(MEM_STATE_FILE);
		mem_start_after_crash(s);
		return;
	}
	problem = state_file_problem(file, &header, &empty_since);
	if (problem != NULL)
	{
		ereport(LOG,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("ignoring ratelimit memory store file \"%s\"",
						MEM_STATE_FILE),
				 errdetail("%s Nothing is restored from it, and the memory store starts as after a crash.",
						   problem)));
		FreeFile(file);
		unlink(MEM_STATE_FILE);
		mem_start_after_crash(s);
		return;
	}

	/*
	 * Entries that still mean something first, then the idle ones (which
	 * mean the same as none, as mem_droppable judges them) while there is room:
	 * a store made smaller since loses idle entries before live ones.
	 */
	for (int pass = 0; pass < 2; pass++)
	{
		if (fseek(file, sizeof(header), SEEK_SET) != 0)
			break;
		for (uint32 i = 0; i < header.count; i++)
		{
			MemEntry	saved;
			bool		idle;

			if (fread(&saved, sizeof(MemEntry), 1, file) != 1)
				break;
			idle = saved.untouched ||
				(saved.idle_at <= now && (saved.is_inline || saved.judged == 0));
			if (idle != (pass == 1))
				continue;
			if (s->used < s->max_keys)
				store_restore(s, &saved);
			else if (!idle)
				lost++;
		}
	}
	s->empty_since = empty_since;
	if (lost > 0)
		ereport(LOG,
				(errmsg("%u keys of the ratelimit memory store that were not idle were not restored", lost),
				 errdetail("ratelimit.memory_max_keys is %d.", s->max_keys)));
	FreeFile(file);
	unlink(MEM_STATE_FILE);
}

/* Note that the server runs, so that a start after a crash can tell. */
static void
mark_running(void)
{
	FILE	   *file = AllocateFile(MEM_RUNNING_FILE, PG_BINARY_W);

	if (file == NULL || FreeFile(file) != 0)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", MEM_RUNNING_FILE)));
}

/*
 * The store, just made in the main segment by the postmaster (at start,
 * and after a backend crash, when it is a restart after a crash): filled
 * from the state file after a clean shutdown, or started as after a crash.
 */
void
mem_state_start(void *ptr)
{
	MemShared  *s = ptr;
	struct stat st;
	bool		crashed = postmaster_started ||
		stat(MEM_RUNNING_FILE, &st) == 0;

	postmaster_started = true;
	if (crashed)
	{
		unlink(MEM_STATE_FILE);
		mem_start_after_crash(s);
	}
	else
		memory_load(s);
	mark_running();
}
