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

#endif							/* RATELIMIT_DEFINITIONS_H */
