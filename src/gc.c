/*-------------------------------------------------------------------------
 *
 * gc.c
 *	  Idle-key cleanup: deleting state rows that no decision can tell from
 *	  a missing row.
 *
 * A missing row means a full bucket (or a full window), and a fixed
 * window's phase comes from a hash of the name and key, not from the row.
 * So a row that has refilled to full, counted at the instant a new row
 * would be, can go without changing any later answer (rl_state_is_idle).
 * A row with a reservation outstanding is below zero and never idle.
 *
 * The scan reads a fresh snapshot without locking, a batch at a time.  A
 * row that looks idle is then locked with SKIP LOCKED, so rl_gc never
 * waits for a caller and never makes one wait long; the locked version is
 * checked again at a time read after the lock, and deleted only if still
 * idle under its name's newest committed definition (the scan's join may
 * have read an older one: a redefinition can make a full row a refilling
 * one).  The deletions commit with the caller's transaction, and a call
 * that was waiting for the row finds none and starts from a full bucket,
 * which is what the row held.
 *
 * A limit used with an inline config stores its state under a name that
 * holds its policy (rl_inline_row), so its rows are judged like the others,
 * by a policy that never changes.  A key with an override (rl_overrides)
 * keeps its state in its own row, judged under the definition with the
 * override in, as a call reads it: never under the bare definition, under
 * which a drained key of a larger override could look full.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "clock.h"
#include "definitions.h"
#include "gc.h"
#include "limit.h"
#include "memory.h"
#include "storage.h"

/*
 * Whether a defined name's row that does not look idle under the scan's
 * definition does under its key's override (a row of a key with none is
 * judged by the definition alone, which a broken hand edit of another
 * column cannot stop).
 */
static bool
idle_under_override(const RlScanRow *row)
{
	RlPolicy	p;
	RlTarget	target;

	if (!row->key_overridden || !rl_key_policy(row->name, row->key, &p) ||
		RL_KIND_IS_CONCURRENCY(p.kind))
		return false;
	rl_target_for_row(&target, row->name, row->key, &p);
	return rl_row_is_idle(&target, row->state);
}

/*
 * Delete up to max_rows idle state rows; returns how many went.  Needs
 * rl_storage_begin.
 */
uint64
rl_gc_run(uint64 max_rows)
{
	RlScan	   *scan = rl_storage_scan_begin();
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext per_row;
	RlScanRow	row;
	uint64		removed = 0;

	/*
	 * What one row needs (its decoded definition, a detoasted name or key,
	 * a lock attempt) lives in per_row and is gone before the next row, so
	 * memory follows the batch, not the table.  Every SPI statement leaves
	 * SPI's own context current, so per_row is made current again per row.
	 */
	per_row = AllocSetContextCreate(outer, "rl_gc row", ALLOCSET_DEFAULT_SIZES);
	while (removed < max_rows)
	{
		RlTarget	target;
		RlRowKey	key;
		RlState		locked;
		RlPolicy	current;
		ItemPointerData tid;
		bool		inline_row;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(per_row);
		MemoryContextSwitchTo(per_row);
		if (!rl_storage_scan_next(scan, &row))
			break;
		key.name = row.name;
		key.key = row.key;
		key.shard = row.shard;
		/* its policy is in its name; a hand-made name that is not is kept */
		inline_row = !row.defined;
		if (inline_row && !rl_inline_row(row.name, &row.policy))
			continue;
		/* a concurrency limit has no tokens: rows left from a rate are kept */
		if (RL_KIND_IS_CONCURRENCY(row.policy.kind))
			continue;
		rl_target_for_row(&target, row.name, row.key, &row.policy);
		if (!rl_row_is_idle(&target, row.state) &&
			(inline_row || !idle_under_override(&row)))
			continue;
		if (rl_storage_lock_nowait(&key, true, &locked, &tid) != RL_ROW_LOCKED)
			continue;
		/*
		 * Judge the locked row by the newest definition, with its key's
		 * override in, as a call would; an inline policy never changes.
		 */
		if (inline_row)
			current = row.policy;
		else if (!rl_key_policy(row.name, row.key, &current))
			continue;
		rl_target_for_row(&target, row.name, row.key, &current);
		if (row.shard >= current.shards || !rl_row_is_idle(&target, locked))
			continue;
		rl_storage_delete_row(&tid);
		removed++;
	}
	MemoryContextSwitchTo(outer);
	MemoryContextDelete(per_row);
	rl_storage_scan_end(scan);
	return removed;
}

/*
 * rl_gc's pass over the memory store: idle entries, including those of
 * this database's memory limits that a definition change left for a call
 * (or this pass) to judge under the new policy, and those of names no
 * longer defined.  Needs rl_storage_begin.  Nothing when the store is not
 * attached in this backend and no memory limit is defined here (so a
 * server that uses none never makes it).
 */
uint64
rl_gc_run_memory(Oid nspid, uint64 max_rows)
{
	List	   *defs;
	RlMemoryName *names;
	uint64		epoch;
	int			n = 0;
	ListCell   *lc;

	/* not attached here and no memory limit defined: never make the store */
	if (!rl_memory_available() ||
		(!rl_memory_attached() &&
		 rl_storage_memory_definitions() == NIL))
		return 0;
	/* the store attached, its epoch, then the definitions (memory.c) */
	rl_memory_attach();
	epoch = rl_memory_gc_epoch();
	defs = rl_storage_memory_definitions();
	names = palloc(sizeof(RlMemoryName) * Max(list_length(defs), 1));
	foreach(lc, defs)
	{
		RlDefinitionRow *row = lfirst(lc);

		rl_memory_name_id(rl_storage_definitions_relid(), row->name,
						  names[n].name_id);
		names[n].policy = row->policy;
		n++;
	}
	return rl_memory_gc(rl_storage_definitions_relid(), names, n, epoch,
						rl_clock_now(), max_rows);
}
