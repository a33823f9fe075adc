/*-------------------------------------------------------------------------
 *
 * definitions.h
 *	  Named definitions, cached per backend.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_DEFINITIONS_H
#define RATELIMIT_DEFINITIONS_H

#include "postgres.h"

#include "algebra.h"

extern bool rl_definition_lookup(text *name, RlPolicy *policy);
extern bool rl_definition_lookup_at(text *name, RlPolicy *policy,
									uint64 *epoch);
extern bool rl_definition_tracked(void);
extern Oid	rl_definitions_relid(void);
extern bool rl_override_lookup(text *name, text *key, RlPolicy *policy);

struct RlAccessEntry;
extern int	rl_access_lookup(text *name, text *address,
							 struct RlAccessEntry **entries);

#endif							/* RATELIMIT_DEFINITIONS_H */
