/*-------------------------------------------------------------------------
 *
 * names.h
 *	  What every layer may know of a limit's name and key: their bounds,
 *	  the separator of an inline config's stored name, comparing them, and
 *	  the stored name of an inline config (names.c).
 *
 * The bottom of the house: it includes only the algebra and compat.h, and
 * any file may include it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_NAMES_H
#define RATELIMIT_NAMES_H

#include "postgres.h"

#include "compat.h"

#include "algebra.h"

/* Bounds that keep a (name, key, shard) entry far below btree's limit. */
#define RL_MAX_NAME_BYTES	256
#define RL_MAX_KEY_BYTES	1024

/*
 * What separates a name from the policy in the stored name of a limit used
 * with an inline config (rl_inline_row_name); no name may contain it.
 * RL_INLINE_SEPARATOR_SQL is the same character as an E'' string literal.
 */
#define RL_INLINE_SEPARATOR		'\x1f'
#define RL_INLINE_SEPARATOR_SQL	"E'\\x1f'"

/* Bytewise order of two texts, shorter first on a shared prefix. */
static inline int
rl_text_cmp(const text *a, const text *b)
{
	int			la = VARSIZE_ANY_EXHDR(a);
	int			lb = VARSIZE_ANY_EXHDR(b);
	int			c = memcmp(VARDATA_ANY(a), VARDATA_ANY(b), Min(la, lb));

	return c != 0 ? c : (la > lb) - (la < lb);
}

/* Whether two texts hold the same bytes. */
static inline bool
rl_text_equal(const text *a, const text *b)
{
	int			la = VARSIZE_ANY_EXHDR(a);

	return la == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), la) == 0;
}

extern void rl_check_name_bytes(int len, const char *what);
extern text *rl_inline_row_name(text *name, const RlPolicy *given);
extern bool rl_inline_row(text *stored, RlPolicy *policy);

#endif							/* RATELIMIT_NAMES_H */
