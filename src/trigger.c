/*-------------------------------------------------------------------------
 *
 * trigger.c
 *	  rl_enforce(): a rate limit enforced where the rows are written.
 *
 *	  CREATE TRIGGER ... BEFORE INSERT ON messages FOR EACH ROW
 *	  EXECUTE FUNCTION rl_enforce('sendMessage', 'user_id' [, count]);
 *
 * Each row consumes from the named limit under the key in the given column
 * (a NULL column means the limit shared by the whole name).  The optional
 * count is a number or the name of a numeric column.  A refused row raises
 * SQLSTATE RL001, so the statement fails and the transaction's other
 * consumption rolls back with it.  Column names are checked when the
 * trigger first fires, as PostgreSQL cannot check trigger arguments sooner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "errors.h"
#include "limit.h"
#include "storage.h"

PG_FUNCTION_INFO_V1(rl_enforce);

/* The column number of a trigger argument naming a column, checked. */
static int
argument_column(Relation rel, const char *column)
{
	int			attnum = SPI_fnumber(RelationGetDescr(rel), column);

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, RelationGetRelationName(rel)),
				 errhint("Check the arguments of the rl_enforce() trigger.")));
	return attnum;
}

/* Parse a whole string as a number; false when it is not one. */
static bool
parse_number(const char *s, double *value)
{
	char	   *end;

	errno = 0;
	*value = strtod(s, &end);
	return end != s && *end == '\0' && errno == 0;
}

/* The count a row consumes: a constant, or a numeric column's value. */
static double
row_count(Relation rel, HeapTuple tuple, const char *arg)
{
	double		count;
	char	   *value;

	if (parse_number(arg, &count))
		return count;
	value = SPI_getvalue(tuple, RelationGetDescr(rel), argument_column(rel, arg));
	if (value == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("count column \"%s\" is null", arg)));
	if (!parse_number(value, &count))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("count column \"%s\" does not hold a number: \"%s\"",
						arg, value)));
	return count;
}

/* rl_enforce(name, key_column [, count]): the trigger function. */
Datum
rl_enforce(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	HeapTuple	tuple;
	char	   *key;
	double		count = 1;
	RlTarget	target;
	RlAnswer	answer;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rl_enforce() must be called as a trigger")));
	if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("rl_enforce() must be fired FOR EACH ROW")));
	trigger = trigdata->tg_trigger;
	rel = trigdata->tg_relation;
	if (trigger->tgnargs < 2 || trigger->tgnargs > 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rl_enforce() takes a limit name, a key column and an optional count"),
				 errdetail("Trigger \"%s\" passes %d arguments.",
						   trigger->tgname, trigger->tgnargs)));
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;

	key = SPI_getvalue(tuple, RelationGetDescr(rel),
					   argument_column(rel, trigger->tgargs[1]));
	if (trigger->tgnargs == 3)
		count = row_count(rel, tuple, trigger->tgargs[2]);
	rl_target_init(&target, cstring_to_text(trigger->tgargs[0]),
				   key ? cstring_to_text(key) : NULL);

	rl_storage_begin_writing(get_func_namespace(fcinfo->flinfo->fn_oid),
							 "rl_enforce()");
	rl_target_resolve(&target, NULL);
	rl_consume(&target, count, false, &answer);
	rl_storage_end();

	if (!answer.ok)
		rl_raise_exceeded(target.label, target.key_is_null ? NULL : target.key,
						  count, answer.remaining, answer.retry_after);
	return PointerGetDatum(tuple);
}
