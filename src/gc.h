/*-------------------------------------------------------------------------
 *
 * gc.h
 *	  Idle-key cleanup (rl_gc).
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_GC_H
#define RATELIMIT_GC_H

#include "postgres.h"

extern uint64 rl_gc_run(uint64 max_rows);

extern uint64 rl_gc_run_memory(Oid nspid, uint64 max_rows);

#endif							/* RATELIMIT_GC_H */
