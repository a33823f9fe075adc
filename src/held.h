/*-------------------------------------------------------------------------
 *
 * held.h
 *	  Which shards of which (name, key) the current transaction holds.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_HELD_H
#define RATELIMIT_HELD_H

#include "postgres.h"

extern void rl_held_note(text *name, text *key, int16 shard);
extern int	rl_held_shards(text *name, text *key, int16 *shards, int max);
extern int	rl_held_highest(text *name, text *key, int nshards);
extern void rl_held_mark(text *name, text *key);
extern bool rl_held_maybe(text *name, text *key);

#endif							/* RATELIMIT_HELD_H */
