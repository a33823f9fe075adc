/*-------------------------------------------------------------------------
 *
 * http.c
 *	  rl_headers: an answer of rl_limit or rl_check, with its limit's
 *	  policy, as the HTTP fields RateLimit-Policy, RateLimit and
 *	  Retry-After of draft-ietf-httpapi-ratelimit-headers (revision 11).
 *
 * The numbers and their rounding are the algebra's (rl_http_fields); this
 * file spells them: the policy is named by a structured-field String, the
 * limit's name with anything a String cannot hold replaced, and the three
 * fields come back as one jsonb object, field name to field value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "executor/executor.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "algebra.h"
#include "fields.h"
#include "clock.h"
#include "limit.h"
#include "policy.h"
#include "storage.h"

PG_FUNCTION_INFO_V1(rl_headers);

/* rl_headers(name, result, config) */
#define ARG_NAME	0
#define ARG_RESULT	1
#define ARG_CONFIG	2
#define ARG_HEADERS_KEY 3		/* from 1.3 */

/*
 * A name as a structured-field String (RFC 9651 3.3.3): printable ASCII,
 * with '"' and '\' escaped; any other byte (control characters, UTF-8
 * sequences) becomes '_'.
 */
static void
append_sf_string(StringInfo buf, text *name)
{
	const char *p = VARDATA_ANY(name);
	int			len = VARSIZE_ANY_EXHDR(name);

	appendStringInfoChar(buf, '"');
	for (int i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) p[i];

		if (c == '"' || c == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, (c >= 0x20 && c <= 0x7e) ? (char) c : '_');
	}
	appendStringInfoChar(buf, '"');
}

/* One column of the rl_result argument; false when it is NULL. */
static bool
result_column(HeapTupleHeader result, const char *column, Datum *value)
{
	bool		isnull;

	*value = GetAttributeByName(result, column, &isnull);
	return !isnull;
}

/* A required column of the rl_result argument. */
static Datum
required_column(HeapTupleHeader result, const char *column)
{
	Datum		value;

	if (!result_column(result, column, &value))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("result.%s must not be null", column)));
	return value;
}

/* An interval of a result in microseconds, a negative one counting as 0. */
static int64
result_usecs(Datum value)
{
	double		usecs = rl_interval_usecs(DatumGetIntervalP(value));

	if (!(usecs > 0))
		return 0;
	return usecs >= (double) RL_MAX_WAIT ? RL_MAX_WAIT : (int64) ceil(usecs);
}

/* Add "field": "value" to a JSON object under construction. */
static void
append_field(StringInfo json, const char *field, const char *value)
{
	if (json->len > 1)
		appendStringInfoString(json, ", ");
	escape_json(json, field);
	appendStringInfoString(json, ": ");
	escape_json(json, value);
}

/*
 * rl_headers(name, result, config, key): the HTTP fields for an answer of
 * rl_limit or rl_check on name, whose policy is its definition (or the
 * override of key, when given) or, for a name with none, config.
 */
Datum
rl_headers(PG_FUNCTION_ARGS)
{
	RlTarget	target;
	HeapTupleHeader result;
	Datum		retry;
	bool		has_retry;
	RlHttpFields f;
	StringInfoData policy;
	StringInfoData limit;
	StringInfoData json;
	char		number[64];

	if (PG_ARGISNULL(ARG_NAME))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name must not be null")));
	if (PG_ARGISNULL(ARG_RESULT))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("result must not be null")));
	/* the key (1.3 on): an overridden key's policy is its own */
	rl_target_init(&target, PG_GETARG_TEXT_PP(ARG_NAME),
				   PG_NARGS() > ARG_HEADERS_KEY && !PG_ARGISNULL(ARG_HEADERS_KEY) ?
				   PG_GETARG_TEXT_PP(ARG_HEADERS_KEY) : NULL);
	result = PG_GETARG_HEAPTUPLEHEADER(ARG_RESULT);
	has_retry = result_column(result, "retry_after", &retry);

	rl_storage_begin(get_func_namespace(fcinfo->flinfo->fn_oid));
	rl_target_resolve(&target, PG_ARGISNULL(ARG_CONFIG) ? NULL :
					  PG_GETARG_HEAPTUPLEHEADER(ARG_CONFIG));
	rl_storage_end();

	/* calendar windows: w is the length of the window now is in */
	target.policy.period = rl_window_length(&target.policy, target.origin,
											rl_clock_now());
	rl_http_fields(&target.policy,
				   DatumGetBool(required_column(result, "ok")),
				   has_retry, has_retry ? result_usecs(retry) : 0,
				   DatumGetFloat8(required_column(result, "remaining")),
				   result_usecs(required_column(result, "reset_after")),
				   &f);

	initStringInfo(&policy);
	append_sf_string(&policy, target.label);
	initStringInfo(&limit);
	appendStringInfoString(&limit, policy.data);
	appendStringInfo(&policy, ";q=" INT64_FORMAT ";w=" INT64_FORMAT,
					 f.quota, f.window);
	appendStringInfo(&limit, ";r=" INT64_FORMAT ";t=" INT64_FORMAT,
					 f.remaining, f.reset);

	initStringInfo(&json);
	appendStringInfoChar(&json, '{');
	append_field(&json, "RateLimit-Policy", policy.data);
	append_field(&json, "RateLimit", limit.data);
	if (f.has_retry_after)
	{
		snprintf(number, sizeof(number), INT64_FORMAT, f.retry_after);
		append_field(&json, "Retry-After", number);
	}
	appendStringInfoChar(&json, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data)));
}
