/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every PG_VERSION_NUM guard of the extension, and nowhere else.
 *
 * The extension is built and tested against PostgreSQL 15; the guards
 * below keep the calls whose signatures changed in later majors in one
 * place.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RATELIMIT_COMPAT_H
#define RATELIMIT_COMPAT_H

#include "postgres.h"

#include "utils/datetime.h"
#include "utils/guc.h"

#if PG_VERSION_NUM < 130000
#error "ratelimit requires PostgreSQL 13 or later"
#endif

/* MarkGUCPrefixReserved replaced EmitWarningsOnPlaceholders in 15. */
#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/* DecodeDateTime gained an error-detail argument in PostgreSQL 16. */
static inline int
compat_decode_datetime(char **field, int *ftype, int nf, int *dtype,
					   struct pg_tm *tm, fsec_t *fsec, int *tzp)
{
#if PG_VERSION_NUM >= 160000
	DateTimeErrorExtra extra;

	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp, &extra);
#else
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp);
#endif
}

/* Uniform random draws: pg_prng arrived in PostgreSQL 15. */
#if PG_VERSION_NUM >= 150000
#include "common/pg_prng.h"

static inline double
compat_random_double(void)
{
	return pg_prng_double(&pg_global_prng_state);
}

static inline uint64
compat_random_below(uint64 n)
{
	return pg_prng_uint64_range(&pg_global_prng_state, 0, n - 1);
}
#else
static inline double
compat_random_double(void)
{
	return (double) random() / ((double) MAX_RANDOM_VALUE + 1);
}

static inline uint64
compat_random_below(uint64 n)
{
	return (uint64) (compat_random_double() * n);
}
#endif

#endif							/* RATELIMIT_COMPAT_H */
