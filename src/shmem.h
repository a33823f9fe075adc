/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  The shared-memory setup of the statistics and the memory store: where
 *	  their areas live, making and finding them, and writing a dump file
 *	  (shmem.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_SHMEM_H
#define RATELIMIT_SHMEM_H

#include "postgres.h"

#include <stdio.h>

#include "utils/guc.h"

/* Where the areas live: decided once, by how the library was loaded. */
typedef enum RlShmemStorage
{
	RL_SHMEM_NONE,				/* 15 and 16, not preloaded: nowhere */
	RL_SHMEM_MAIN,				/* preloaded: the main segment */
	RL_SHMEM_DSM				/* 17 and later, not preloaded: the DSM
								 * registry */
} RlShmemStorage;

/*
 * One area in shared memory: a fixed-size table made once, sized by a
 * setting read when it is made.  Its owner fills this in and registers it
 * from _PG_init (rl_shmem_register); shmem.c makes it, or finds it, and
 * sets *attached.
 */
typedef struct RlShmemArea
{
	const char *name;			/* in the main segment (ShmemInitStruct) */
	const char *dsm_name;		/* its segment in the DSM registry */
	const char *dsm_size_name;	/* the segment holding the size it has */
	const char *tranche_name;	/* its LWLocks' tranche; NULL: none */
	int		   *size_setting;	/* what sizes it, read when it is made */
	Size		(*size) (int32 n);	/* its bytes when sized n */
	/* an empty area sized n; in_dsm: made in the DSM registry */
	void		(*init) (void *ptr, int32 n, int tranche, bool in_dsm);
	/* the main segment, made in the postmaster (at start, after a crash) */
	void		(*postmaster_start) (void *ptr);
	/* the main segment, at the postmaster's normal exit; may be NULL */
	void		(*dump) (void *ptr);
	void	  **attached;		/* where its owner keeps its address */
} RlShmemArea;

extern void rl_shmem_register(RlShmemArea *area);
extern RlShmemStorage rl_shmem_storage(void);
extern const char *rl_shmem_storage_name(RlShmemStorage storage);
extern void *rl_shmem_attach(RlShmemArea *area);
extern bool rl_shmem_write_file(const char *path,
								bool (*write) (FILE *file, void *arg),
								void *arg);

#endif							/* RATELIMIT_SHMEM_H */
