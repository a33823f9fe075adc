/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The shared-memory setup of the statistics (stats.c) and the memory
 *	  store (memory.c): one request for their space, one startup hook that
 *	  makes or finds their areas, one exit callback that dumps them, their
 *	  segments in the DSM registry, and the one way a dump file is written.
 *
 * Where the areas live depends on how the library was loaded, decided
 * once, by the first area registered from _PG_init:
 *
 * - shared_preload_libraries = 'ratelimit': in the main segment.  The
 *   request hook asks for every area's space at the size its setting has
 *   then; the startup hook makes each (in the postmaster, at start and
 *   again after a crash) or finds it (in every other process), in the
 *   order they were registered.  In the postmaster, a made area then gets
 *   its postmaster_start (reading back its dump file), and at the
 *   postmaster's normal exit (code 0: a smart, fast or immediate shutdown)
 *   its dump, in the reverse order; after a crash (code 1) nothing is
 *   dumped.
 * - Not preloaded, PostgreSQL 17 and later: each area in a segment of the
 *   DSM registry, made by the first backend that attaches it, at the size
 *   its setting has in that backend.  The size is kept in a segment of its
 *   own first, so that a backend whose setting differs (after a reload)
 *   asks for the segment at the size it has.  Nothing is dumped.
 * - Not preloaded, 15 and 16: nowhere; rl_shmem_attach returns NULL.
 *
 * An area's LWLocks get a tranche made with it; its id is kept in a header
 * in front of the area, so that every process can name it (compat.h).
 *
 * Locking.  AddinShmemInitLock is held while an area in the main segment
 * is found or made (and initialised), as ShmemInitStruct wants; the DSM
 * registry holds its own lock while it makes a segment.  Nothing here
 * takes an area's own locks: what they protect is its owner's business.
 * The exit callback runs in the postmaster alone, once every backend is
 * gone, so a dump needs no lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "compat.h"
#include "shmem.h"

#define RL_SHMEM_MAX_AREAS 4

/* In front of every area: what each process needs to use it. */
typedef struct RlShmemHeader
{
	int			tranche;		/* its LWLocks' tranche, when it has one */
} RlShmemHeader;

static const char *const storage_names[] = {
	[RL_SHMEM_NONE] = "unavailable",
	[RL_SHMEM_MAIN] = "shared memory",
	[RL_SHMEM_DSM] = "dsm registry",
};

static RlShmemStorage storage = RL_SHMEM_NONE;
static bool storage_chosen = false;
static RlShmemArea *areas[RL_SHMEM_MAX_AREAS];
static int	nareas = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* The bytes of an area sized n, with its header. */
static Size
area_bytes(const RlShmemArea *area, int32 n)
{
	return add_size(MAXALIGN(sizeof(RlShmemHeader)), area->size(n));
}

/* The area behind a header. */
static void *
area_body(RlShmemHeader *header)
{
	return (char *) header + MAXALIGN(sizeof(RlShmemHeader));
}

/* A new area sized n behind header: its tranche, then its owner's init. */
static void
area_init(const RlShmemArea *area, RlShmemHeader *header, int32 n,
		  bool in_dsm)
{
	header->tranche = area->tranche_name ?
		compat_lwlock_new_tranche(area->tranche_name) : 0;
	area->init(area_body(header), n, header->tranche, in_dsm);
}

/* This process found or made an area: name its tranche, note where it is. */
static void
area_attached(const RlShmemArea *area, RlShmemHeader *header)
{
	if (area->tranche_name)
		compat_lwlock_register_tranche(header->tranche, area->tranche_name);
	*area->attached = area_body(header);
}

/* shmem_request_hook: room for every area in the main segment. */
static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (int i = 0; i < nareas; i++)
		RequestAddinShmemSpace(area_bytes(areas[i], *areas[i]->size_setting));
}

/*
 * on_shmem_exit in the postmaster: every area dumped, at a normal exit
 * (code 0) only.  Every backend is gone by then.
 */
static void
shmem_exit_dump(int code, Datum arg)
{
	if (code != 0)
		return;
	for (int i = nareas - 1; i >= 0; i--)
		if (areas[i]->dump != NULL && *areas[i]->attached != NULL)
			areas[i]->dump(*areas[i]->attached);
}

/*
 * shmem_startup_hook: every area, made in the postmaster (at start, and
 * after a backend crash) and started there, found in other processes.
 */
static void
shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	for (int i = 0; i < nareas; i++)
	{
		const RlShmemArea *area = areas[i];
		int32		n = *area->size_setting;
		RlShmemHeader *header;
		bool		found;

		LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
		header = ShmemInitStruct(area->name, area_bytes(area, n), &found);
		if (!found)
			area_init(area, header, n, false);
		LWLockRelease(AddinShmemInitLock);
		area_attached(area, header);
		if (!IsUnderPostmaster && !found && area->postmaster_start)
			area->postmaster_start(area_body(header));
	}
	/* shmem_exit forgets it when shared memory is reinitialised */
	if (!IsUnderPostmaster)
		on_shmem_exit(shmem_exit_dump, (Datum) 0);
}

/*
 * Register an area (from _PG_init, after the setting that sizes it is
 * defined).  The first one decides where they all live, and, preloaded,
 * installs the hooks.
 */
void
rl_shmem_register(RlShmemArea *area)
{
	if (nareas >= RL_SHMEM_MAX_AREAS)
		elog(ERROR, "too many ratelimit shared memory areas");
	areas[nareas++] = area;
	if (storage_chosen)
		return;
	storage_chosen = true;
	if (process_shared_preload_libraries_in_progress)
	{
		storage = RL_SHMEM_MAIN;
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = shmem_startup;
	}
#ifdef COMPAT_HAS_DSM_REGISTRY
	else
		storage = RL_SHMEM_DSM;
#endif
}

/* Where the areas live. */
RlShmemStorage
rl_shmem_storage(void)
{
	return storage;
}

/* How rl_stats_info names where something lives. */
const char *
rl_shmem_storage_name(RlShmemStorage where)
{
	return storage_names[where];
}

#ifdef COMPAT_HAS_DSM_REGISTRY
/*
 * The area a DSM registry segment is being made for, and its size: the
 * registry's init callbacks take no argument before 19 (compat.h).
 */
static const RlShmemArea *dsm_area = NULL;
static int32 dsm_n;

static void
init_dsm_size(void *ptr)
{
	*(int32 *) ptr = *dsm_area->size_setting;
}

static void
init_dsm_area(void *ptr)
{
	area_init(dsm_area, ptr, dsm_n, true);
}
#endif

/*
 * An area, attached if needed: made in the DSM registry by the first
 * backend that asks, at the size that backend's setting has.  NULL when
 * this server has none (15 and 16, not preloaded).
 */
void *
rl_shmem_attach(RlShmemArea *area)
{
#ifdef COMPAT_HAS_DSM_REGISTRY
	if (*area->attached == NULL && storage == RL_SHMEM_DSM)
	{
		bool		found;
		int32	   *size;
		RlShmemHeader *header;

		dsm_area = area;
		size = compat_get_named_dsm_segment(area->dsm_size_name,
											sizeof(int32), init_dsm_size,
											&found);
		dsm_n = *size;
		header = compat_get_named_dsm_segment(area->dsm_name,
											  area_bytes(area, dsm_n),
											  init_dsm_area, &found);
		area_attached(area, header);
	}
#endif
	return *area->attached;
}

/*
 * Write a dump file: to path.tmp first, by write (false: an fwrite
 * failed), then closed and renamed over path with durable_rename, which
 * fsyncs the file, renames it and fsyncs the directory.  A crash or a
 * failure at any point before the rename leaves whatever was at path as
 * it was; a failure is logged and path.tmp removed.  True once the file
 * is durably at path.
 */
bool
rl_shmem_write_file(const char *path, bool (*write) (FILE *file, void *arg),
					void *arg)
{
	char		tmp[MAXPGPATH];
	FILE	   *file;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	file = AllocateFile(tmp, PG_BINARY_W);
	if (file == NULL || !write(file, arg))
		goto error;
	if (FreeFile(file))
	{
		file = NULL;
		goto error;
	}
	/* it fsyncs the file and the directory, and logs a failure */
	if (durable_rename(tmp, path, LOG) != 0)
	{
		unlink(tmp);
		return false;
	}
	return true;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", tmp)));
	if (file)
		FreeFile(file);
	unlink(tmp);
	return false;
}
