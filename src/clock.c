/*-------------------------------------------------------------------------
 *
 * clock.c
 *	  The server clock, or the time pinned by ratelimit.now_override.
 *
 * Callers read the clock after their row lock is held, so the time a
 * decision uses is never older than the state it decides on.  The real
 * clock is the wall clock at the moment of the call (not the transaction
 * start time), so a long transaction sees tokens refill.
 *
 * ratelimit.now_override is PGC_SUSET: only a superuser can pin the clock,
 * since a pinned clock lets a session refill or starve any limit.  Its
 * value is parsed once, in the check hook, without throwing.  It must be
 * an absolute time: a word like 'now' or 'tomorrow' would be resolved
 * again, to another time, wherever the setting is re-applied (a parallel
 * worker, a reload), so the clock would not be pinned at all.
 *
 * A parallel worker restores the leader's settings before its own time
 * zone abbreviations, and PostgreSQL's date parser does not survive every
 * zone it may then meet ('Z').  The leader has checked the value, and no
 * function of the extension runs in a worker (none but the pure policy
 * constructors is parallel safe), so a worker starting up keeps the text
 * and parses it only if its clock is ever read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "compat.h"

static char *now_override_string = NULL;
static bool now_override_set = false;
static bool now_override_deferred = false;
static TimestampTz now_override_value = 0;

/* What the check hook leaves for the assign hook. */
typedef struct NowOverride
{
	bool		deferred;		/* not parsed yet: a parallel worker starting */
	TimestampTz value;
} NowOverride;

/* The first word of a parsed value that names a time relative to the clock. */
static const char *
relative_word(char **field, int *ftype, int nf)
{
	for (int i = 0; i < nf; i++)
	{
		int			val;

		/* fields come lower-cased; DecodeDateTime looks words up the same way */
		if ((ftype[i] == DTK_STRING || ftype[i] == DTK_SPECIAL) &&
			DecodeSpecial(i, field[i], &val) == RESERV &&
			(val == DTK_NOW || val == DTK_TODAY || val == DTK_TOMORROW ||
			 val == DTK_YESTERDAY))
			return field[i];
	}
	return NULL;
}

/* Accept '' (the real clock) or a finite, absolute timestamptz literal. */
static bool
check_now_override(char **newval, void **extra, GucSource source)
{
	char		workbuf[MAXDATELEN + MAXDATEFIELDS];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	int			tz;
	struct pg_tm tt;
	fsec_t		fsec;
	TimestampTz result = 0;
	NowOverride *parsed;
	bool		valid = true;
	const char *relative;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	if (InitializingParallelWorker)
	{
		parsed = compat_guc_malloc(sizeof(NowOverride));
		if (parsed == NULL)
			return false;
		parsed->deferred = true;
		parsed->value = 0;
		*extra = parsed;
		return true;
	}
	if (strlen(*newval) > MAXDATELEN ||
		ParseDateTime(*newval, workbuf, sizeof(workbuf), field, ftype,
					  MAXDATEFIELDS, &nf) != 0)
		valid = false;
	else if ((relative = relative_word(field, ftype, nf)) != NULL)
	{
		GUC_check_errdetail("The word \"%s\" is relative to the clock; the value must be empty or an absolute timestamp with time zone.",
							relative);
		return false;
	}
	else if (compat_decode_datetime(field, ftype, nf, &dtype, &tt, &fsec, &tz) != 0)
		valid = false;
	else if (dtype == DTK_EPOCH)
		result = SetEpochTimestamp();
	else if (dtype != DTK_DATE || tm2timestamp(&tt, fsec, &tz, &result) != 0)
		valid = false;
	if (!valid || !IS_VALID_TIMESTAMP(result))
	{
		GUC_check_errdetail("The value must be empty or a finite timestamp with time zone.");
		return false;
	}
	parsed = compat_guc_malloc(sizeof(NowOverride));
	if (parsed == NULL)
		return false;
	parsed->deferred = false;
	parsed->value = result;
	*extra = parsed;
	return true;
}

/* Install the value check_now_override parsed. */
static void
assign_now_override(const char *newval, void *extra)
{
	const NowOverride *parsed = extra;

	now_override_set = parsed != NULL;
	now_override_deferred = parsed != NULL && parsed->deferred;
	now_override_value = parsed ? parsed->value : 0;
}

/* Define the extension's settings; called from _PG_init. */
void
rl_clock_init(void)
{
	DefineCustomStringVariable("ratelimit.now_override",
							   "Pins the time rate limits are computed at.",
							   "Empty means the real server clock. For deterministic tests only.",
							   &now_override_string,
							   "",
							   PGC_SUSET,
							   0,
							   check_now_override,
							   assign_now_override,
							   NULL);
}

/* The time decisions are made at. */
TimestampTz
rl_clock_now(void)
{
	if (now_override_deferred)
	{
		/* a parallel worker's first read: its settings are all restored */
		now_override_value = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
																	 CStringGetDatum(now_override_string),
																	 ObjectIdGetDatum(InvalidOid),
																	 Int32GetDatum(-1)));
		now_override_deferred = false;
	}
	return now_override_set ? now_override_value : GetCurrentTimestamp();
}
