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
 * consumption rolls back with it.  The arguments are checked when the
 * trigger first fires in a statement, as PostgreSQL cannot check trigger
 * arguments sooner, and what they resolve to is kept for the statement's
 * other rows.
 *
 * One value of the key column must be one key, whatever the session that
 * writes it, or a limit of one order a day grants one order per DateStyle.
 * So the key is not the type's output text when that depends on settings:
 * date, timestamp and timestamptz are written in ISO form (timestamptz in
 * UTC, "+00"), bytea in hex, numeric without trailing fractional zeros
 * beyond its declared scale; for the default settings (DateStyle ISO,
 * TimeZone UTC, bytea_output hex) that is the text the output function
 * gives.  Types whose output is one text per value keep it; every other
 * type is refused.  A float count column is read as its value, not as the
 * text extra_float_digits may shorten.
 *
 * On a partitioned table, an UPDATE that moves a row to another partition
 * is run as a DELETE from the old partition and an INSERT into the new
 * one: BEFORE UPDATE row triggers fire on the old partition, then BEFORE
 * DELETE there and BEFORE INSERT on the new one; AFTER UPDATE does not
 * fire, AFTER DELETE and AFTER INSERT do.  A trigger BEFORE INSERT OR
 * UPDATE, cloned from the partitioned root to every partition, would so
 * count a moved row twice: the INSERT of a row whose UPDATE it just
 * counted is not counted again (moved_row).  AFTER INSERT OR UPDATE counts
 * a moved row once, as its INSERT.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "common/shortest_dec.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
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

/*
 * A stored generated column is computed after BEFORE triggers: such a
 * trigger would see it NULL on INSERT (every row keyed by the limit shared
 * by the whole name) and as it was on UPDATE.  An AFTER trigger sees it.
 */
static void
refuse_generated(Relation rel, Trigger *trigger, AttrNumber attnum)
{
	Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(rel), attnum - 1);

	if (attr->attgenerated != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rl_enforce() cannot read generated column \"%s\" in a BEFORE trigger",
						NameStr(attr->attname)),
				 errdetail("Generated columns are computed after BEFORE triggers run; trigger \"%s\" would see the value before it.",
						   trigger->tgname),
				 errhint("Create the trigger AFTER INSERT OR UPDATE.")));
}

/* How a key column's value becomes the key's text. */
typedef enum KeyForm
{
	KEY_OUTPUT,					/* the output function: one text per value */
	KEY_BPCHAR_TRIMMED,			/* bpchar of no length: no trailing blanks */
	KEY_NUMERIC,				/* no trailing fractional zeros past the scale */
	KEY_DATE,					/* ISO */
	KEY_TIMESTAMP,				/* ISO */
	KEY_TIMESTAMPTZ,			/* ISO, in UTC, with its "+00" */
	KEY_BYTEA					/* hex */
} KeyForm;

/* How the count a row consumes is found. */
typedef enum CountForm
{
	COUNT_CONSTANT,				/* the trigger argument */
	COUNT_FLOAT8,				/* a float8 column's value */
	COUNT_FLOAT4,				/* a real column's shortest exact decimal */
	COUNT_OUTPUT				/* a column's output text, as a number */
} CountForm;

/*
 * What a trigger's arguments resolve to, kept in fn_extra for the rest of
 * the statement (each trigger of a relation has its own FmgrInfo there).
 */
typedef struct EnforceCache
{
	Oid			tgoid;			/* the trigger and relation resolved for */
	Oid			relid;
	AttrNumber	key_attnum;
	KeyForm		key_form;
	int			key_scale;		/* KEY_NUMERIC: declared scale, or 0 */
	FmgrInfo	key_output;		/* KEY_OUTPUT, KEY_BPCHAR_TRIMMED */
	CountForm	count_form;
	double		count;			/* COUNT_CONSTANT */
	AttrNumber	count_attnum;	/* the other forms */
	const char *count_column;
	FmgrInfo	count_output;	/* COUNT_OUTPUT */
	bool		family_known;	/* family looked up */
	Oid			family;			/* the root's trigger, or InvalidOid */
} EnforceCache;

/*
 * A row's UPDATE counted on a partition by a trigger of a family (the
 * clones of one trigger on the partitioned root): if the row then moves,
 * the INSERT of it into its new partition, the next time the family fires,
 * is not counted again.
 */
typedef struct CountedUpdate
{
	Oid			family;			/* InvalidOid: a free slot */
	Oid			source;			/* the old partition */
	ItemPointerData tid;		/* the row's version there */
	LocalTransactionId lxid;	/* the transaction and statement */
	CommandId	cid;
	double		count;
	bool		key_is_null;
	char	   *key;			/* in TopMemoryContext */
} CountedUpdate;

#define COUNTED_UPDATES 8

static CountedUpdate counted_updates[COUNTED_UPDATES];

/* Parse a whole string as a number; false when it is not one. */
static bool
parse_number(const char *s, double *value)
{
	char	   *end;

	errno = 0;
	*value = strtod(s, &end);
	return end != s && *end == '\0' && errno == 0;
}

/*
 * The scale a numeric typmod declares, or 0 for none (a negative scale
 * rounds to tens or more: no fractional digits either).
 */
static int
numeric_declared_scale(int32 typmod)
{
	int			scale;

	if (typmod < (int32) VARHDRSZ)
		return 0;
	/* the low 11 bits of typmod - VARHDRSZ, sign-extended */
	scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
	return Max(scale, 0);
}

/*
 * How the key column's values become keys; refuses a type whose text is
 * not one per value whatever the settings, and a collation under which
 * values of different text are equal.
 */
static void
resolve_key(EnforceCache *cache, Relation rel, const char *column,
			MemoryContext mcxt)
{
	Form_pg_attribute attr;
	int32		typmod;
	Oid			type;
	Oid			output;
	bool		varlena;

	cache->key_attnum = argument_column(rel, column);
	attr = TupleDescAttr(RelationGetDescr(rel), cache->key_attnum - 1);
	typmod = attr->atttypmod;
	type = getBaseTypeAndTypmod(attr->atttypid, &typmod);
	cache->key_scale = 0;
	switch (type)
	{
		case TEXTOID:
		case VARCHAROID:
		case NAMEOID:
		case CHAROID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case UUIDOID:
		case INETOID:
		case BOOLOID:
			cache->key_form = KEY_OUTPUT;
			break;
		case BPCHAROID:
			/* with a length, every value is blank-padded to it */
			cache->key_form = typmod >= (int32) VARHDRSZ ?
				KEY_OUTPUT : KEY_BPCHAR_TRIMMED;
			break;
		case NUMERICOID:
			cache->key_form = KEY_NUMERIC;
			cache->key_scale = numeric_declared_scale(typmod);
			break;
		case DATEOID:
			cache->key_form = KEY_DATE;
			break;
		case TIMESTAMPOID:
			cache->key_form = KEY_TIMESTAMP;
			break;
		case TIMESTAMPTZOID:
			cache->key_form = KEY_TIMESTAMPTZ;
			break;
		case BYTEAOID:
			cache->key_form = KEY_BYTEA;
			break;
		default:
			if (!type_is_enum(type))
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("rl_enforce() cannot key rows by column \"%s\" of type %s",
								column, format_type_be(attr->atttypid)),
						 errdetail("One value must be one key whatever the session's settings, so the key column must be of type text, varchar, char, name, \"char\", smallint, integer, bigint, oid, uuid, inet, boolean, an enum, numeric, date, timestamp, timestamptz or bytea, or of a domain over one of them."),
						 errhint("Key the trigger on a column of one of those types, for example a generated column computed from this one.")));
			cache->key_form = KEY_OUTPUT;
			break;
	}
	if (OidIsValid(attr->attcollation) &&
		!get_collation_isdeterministic(attr->attcollation))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rl_enforce() cannot key rows by column \"%s\" of nondeterministic collation \"%s\"",
						column, get_collation_name(attr->attcollation)),
				 errdetail("Values the collation calls equal would count under different keys."),
				 errhint("Key the trigger on a column with a deterministic collation, for example a generated column holding a normalized form of this one.")));
	getTypeOutputInfo(type, &output, &varlena);
	fmgr_info_cxt(output, &cache->key_output, mcxt);
}

/* How the count argument, a number or a column name, is read. */
static void
resolve_count(EnforceCache *cache, Relation rel, const char *arg,
			  MemoryContext mcxt)
{
	Form_pg_attribute attr;
	Oid			type;
	Oid			output;
	bool		varlena;

	if (parse_number(arg, &cache->count))
	{
		cache->count_form = COUNT_CONSTANT;
		return;
	}
	cache->count_attnum = argument_column(rel, arg);
	cache->count_column = MemoryContextStrdup(mcxt, arg);
	attr = TupleDescAttr(RelationGetDescr(rel), cache->count_attnum - 1);
	type = getBaseType(attr->atttypid);
	if (type == FLOAT8OID)
		cache->count_form = COUNT_FLOAT8;
	else if (type == FLOAT4OID)
		cache->count_form = COUNT_FLOAT4;
	else
	{
		cache->count_form = COUNT_OUTPUT;
		getTypeOutputInfo(type, &output, &varlena);
		fmgr_info_cxt(output, &cache->count_output, mcxt);
	}
}

/* The trigger's resolved arguments: from fn_extra, or resolved now. */
static EnforceCache *
enforce_cache(FunctionCallInfo fcinfo, Trigger *trigger, Relation rel)
{
	EnforceCache *cache = (EnforceCache *) fcinfo->flinfo->fn_extra;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;

	if (cache != NULL && cache->tgoid == trigger->tgoid &&
		cache->relid == RelationGetRelid(rel))
		return cache;
	cache = MemoryContextAllocZero(mcxt, sizeof(EnforceCache));
	resolve_key(cache, rel, trigger->tgargs[1], mcxt);
	if (trigger->tgnargs == 3)
		resolve_count(cache, rel, trigger->tgargs[2], mcxt);
	else
	{
		cache->count_form = COUNT_CONSTANT;
		cache->count = 1;
	}
	if (TRIGGER_FOR_BEFORE(trigger->tgtype))
	{
		refuse_generated(rel, trigger, cache->key_attnum);
		if (cache->count_form != COUNT_CONSTANT)
			refuse_generated(rel, trigger, cache->count_attnum);
	}
	cache->tgoid = trigger->tgoid;
	cache->relid = RelationGetRelid(rel);
	fcinfo->flinfo->fn_extra = cache;
	return cache;
}

/*
 * A numeric's shortest text (numeric_normalize drops trailing fractional
 * zeros, so 1.0 and 1.00 are "1"), padded with zeros to the declared
 * scale: a numeric(10,2) column's 1.5 stays "1.50", its output text.
 */
static char *
numeric_key(Datum value, int scale)
{
	char	   *str = numeric_normalize(DatumGetNumeric(value));
	size_t		len = strlen(str);
	char	   *point;
	int			digits;
	StringInfoData buf;

	/* NaN and the infinities end in a letter */
	if (scale == 0 || !isdigit((unsigned char) str[len - 1]))
		return str;
	point = strchr(str, '.');
	digits = point ? (int) (len - (point - str) - 1) : 0;
	if (digits >= scale)
		return str;
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, str, len);
	if (point == NULL)
		appendStringInfoChar(&buf, '.');
	for (; digits < scale; digits++)
		appendStringInfoChar(&buf, '0');
	return buf.data;
}

/* A date as date_out writes it under DateStyle ISO. */
static char *
date_key(DateADT date)
{
	char		buf[MAXDATELEN + 1];
	struct pg_tm tm;

	if (DATE_NOT_FINITE(date))
		EncodeSpecialDate(date, buf);
	else
	{
		j2date(date + POSTGRES_EPOCH_JDATE,
			   &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
		EncodeDateOnly(&tm, USE_ISO_DATES, buf);
	}
	return pstrdup(buf);
}

/*
 * A timestamp as timestamp_out writes it under DateStyle ISO; with_zone, a
 * timestamptz as timestamptz_out writes it under TimeZone UTC as well.
 */
static char *
timestamp_key(Timestamp ts, bool with_zone)
{
	char		buf[MAXDATELEN + 1];
	struct pg_tm tm;
	fsec_t		fsec;

	if (TIMESTAMP_NOT_FINITE(ts))
		EncodeSpecialTimestamp(ts, buf);
	else if (timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	else
	{
		/* a zone known: UTC (timestamp2tm marks none without tzp) */
		tm.tm_isdst = 0;
		EncodeDateTime(&tm, fsec, with_zone, 0, NULL, USE_ISO_DATES, buf);
	}
	return pstrdup(buf);
}

/* A bytea as byteaout writes it under bytea_output hex. */
static char *
bytea_key(Datum value)
{
	static const char hex[] = "0123456789abcdef";
	bytea	   *bytes = DatumGetByteaPP(value);
	const unsigned char *data = (const unsigned char *) VARDATA_ANY(bytes);
	size_t		len = VARSIZE_ANY_EXHDR(bytes);
	char	   *result = palloc(2 * len + 3);
	char	   *out = result;

	*out++ = '\\';
	*out++ = 'x';
	for (size_t i = 0; i < len; i++)
	{
		*out++ = hex[data[i] >> 4];
		*out++ = hex[data[i] & 0xf];
	}
	*out = '\0';
	return result;
}

/* The key of a row: its key column's value as text, NULL for NULL. */
static text *
row_key(EnforceCache *cache, Relation rel, HeapTuple tuple)
{
	bool		isnull;
	Datum		value;
	char	   *key = NULL;

	value = heap_getattr(tuple, cache->key_attnum, RelationGetDescr(rel),
						 &isnull);
	if (isnull)
		return NULL;
	switch (cache->key_form)
	{
		case KEY_OUTPUT:
			key = OutputFunctionCall(&cache->key_output, value);
			break;
		case KEY_BPCHAR_TRIMMED:
			{
				size_t		len;

				/* bpchar compares values as if blank-trimmed */
				key = OutputFunctionCall(&cache->key_output, value);
				len = strlen(key);
				while (len > 0 && key[len - 1] == ' ')
					len--;
				key[len] = '\0';
				break;
			}
		case KEY_NUMERIC:
			key = numeric_key(value, cache->key_scale);
			break;
		case KEY_DATE:
			key = date_key(DatumGetDateADT(value));
			break;
		case KEY_TIMESTAMP:
			key = timestamp_key(DatumGetTimestamp(value), false);
			break;
		case KEY_TIMESTAMPTZ:
			key = timestamp_key(DatumGetTimestampTz(value), true);
			break;
		case KEY_BYTEA:
			key = bytea_key(value);
			break;
	}
	return cstring_to_text(key);
}

/* The count a row consumes: a constant, or a numeric column's value. */
static double
row_count(EnforceCache *cache, Relation rel, HeapTuple tuple)
{
	bool		isnull;
	Datum		value;
	char		shortest[FLOAT_SHORTEST_DECIMAL_LEN];
	char	   *str;
	double		count;

	if (cache->count_form == COUNT_CONSTANT)
		return cache->count;
	value = heap_getattr(tuple, cache->count_attnum, RelationGetDescr(rel),
						 &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("count column \"%s\" is null", cache->count_column)));
	switch (cache->count_form)
	{
		case COUNT_FLOAT8:
			return DatumGetFloat8(value);
		case COUNT_FLOAT4:
			/* as float4out wrote it by default: 1.4, not 1.39999997... */
			float_to_shortest_decimal_buf(DatumGetFloat4(value), shortest);
			str = shortest;
			break;
		default:
			str = OutputFunctionCall(&cache->count_output, value);
			break;
	}
	if (!parse_number(str, &count))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("count column \"%s\" does not hold a number: \"%s\"",
						cache->count_column, str)));
	return count;
}

/*
 * The family of a trigger: the trigger on the partitioned root that it is
 * a clone of, which every partition has a clone of; InvalidOid for a
 * trigger that is not a clone, or a clone of one on a partition (a row can
 * move out of that partition's subtree, to a partition without a clone).
 */
static Oid
trigger_family(EnforceCache *cache, Trigger *trigger)
{
	Relation	pg_trigger;
	Oid			oid = trigger->tgoid;
	Oid			family = InvalidOid;

	if (cache->family_known)
		return cache->family;
	if (trigger->tgisclone)
	{
		pg_trigger = table_open(TriggerRelationId, AccessShareLock);
		for (;;)
		{
			ScanKeyData skey;
			SysScanDesc scan;
			HeapTuple	tuple;
			Form_pg_trigger form;
			Oid			parent = InvalidOid;
			Oid			relid = InvalidOid;

			ScanKeyInit(&skey, Anum_pg_trigger_oid, BTEqualStrategyNumber,
						F_OIDEQ, ObjectIdGetDatum(oid));
			scan = systable_beginscan(pg_trigger, TriggerOidIndexId, true,
									  NULL, 1, &skey);
			tuple = systable_getnext(scan);
			if (HeapTupleIsValid(tuple))
			{
				form = (Form_pg_trigger) GETSTRUCT(tuple);
				parent = form->tgparentid;
				relid = form->tgrelid;
			}
			systable_endscan(scan);
			if (!OidIsValid(relid))
				break;
			if (!OidIsValid(parent))
			{
				if (!get_rel_relispartition(relid))
					family = oid;
				break;
			}
			oid = parent;
		}
		table_close(pg_trigger, AccessShareLock);
	}
	cache->family = family;
	cache->family_known = true;
	return family;
}

/* Whether a row trigger counts both a row's INSERT and its UPDATE, BEFORE. */
static bool
before_insert_or_update(Trigger *trigger)
{
	return TRIGGER_FOR_ROW(trigger->tgtype) &&
		TRIGGER_FOR_BEFORE(trigger->tgtype) &&
		TRIGGER_FOR_INSERT(trigger->tgtype) &&
		TRIGGER_FOR_UPDATE(trigger->tgtype);
}

/* The command id of the running statement, as its snapshot carries it. */
static CommandId
statement_cid(void)
{
	return ActiveSnapshotSet() ? GetActiveSnapshot()->curcid :
		InvalidCommandId;
}

/* The slot of a family's counted update, or NULL. */
static CountedUpdate *
counted_update(Oid family)
{
	for (int i = 0; i < COUNTED_UPDATES; i++)
		if (counted_updates[i].family == family)
			return &counted_updates[i];
	return NULL;
}

/* Free a slot. */
static void
forget_counted_update(CountedUpdate *u)
{
	if (u->key)
		pfree(u->key);
	u->key = NULL;
	u->family = InvalidOid;
}

/*
 * Remember that the UPDATE of the row version tid of a partition was
 * counted, under key and count.  When no slot is free nothing is kept:
 * the INSERT of a moved row is then counted too, never less.
 */
static void
note_counted_update(Oid family, Relation rel, ItemPointer tid, text *key,
					double count)
{
	CountedUpdate *u = counted_update(family);

	if (u == NULL)
		u = counted_update(InvalidOid);
	if (u == NULL)
		return;
	forget_counted_update(u);
	u->family = family;
	u->source = RelationGetRelid(rel);
	u->tid = *tid;
	u->lxid = compat_my_lxid();
	u->cid = statement_cid();
	u->count = count;
	u->key_is_null = key == NULL;
	if (key)
		u->key = MemoryContextStrdup(TopMemoryContext, text_to_cstring(key));
}

/*
 * Whether the version tid of relation relid was deleted by this
 * transaction when it moved the row to another partition (heap only: the
 * version's ctid then says so).
 */
static bool
moved_by_us(Oid relid, ItemPointer tid)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	bool		moved = false;

	if (rel == NULL)
		return false;
	if (rel->rd_rel->relkind == RELKIND_RELATION &&
		rel->rd_rel->relam == HEAP_TABLE_AM_OID &&
		ItemPointerGetBlockNumber(tid) < RelationGetNumberOfBlocks(rel))
	{
		Buffer		buf = ReadBuffer(rel, ItemPointerGetBlockNumber(tid));
		Page		page;
		OffsetNumber off = ItemPointerGetOffsetNumber(tid);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (off >= FirstOffsetNumber && off <= PageGetMaxOffsetNumber(page))
		{
			ItemId		lp = PageGetItemId(page, off);

			if (ItemIdIsNormal(lp))
			{
				HeapTupleHeader htup = (HeapTupleHeader) PageGetItem(page, lp);

				moved = !(htup->t_infomask & HEAP_XMAX_INVALID) &&
					!HEAP_XMAX_IS_LOCKED_ONLY(htup->t_infomask) &&
					ItemPointerIndicatesMovedPartitions(&htup->t_ctid) &&
					TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetUpdateXid(htup));
			}
		}
		UnlockReleaseBuffer(buf);
	}
	relation_close(rel, AccessShareLock);
	return moved;
}

/*
 * Whether the row a BEFORE INSERT trigger fires for is a row whose UPDATE
 * the family counted, moving here: the family's last counted update is of
 * this statement, under the same key and count, and the version it
 * updated was since deleted by this transaction moving the row.  The
 * family's note is spent either way, so a later INSERT always counts.
 */
static bool
moved_row(Oid family, text *key, double count)
{
	CountedUpdate *u = counted_update(family);
	bool		moved;

	if (u == NULL)
		return false;
	moved = u->lxid == compat_my_lxid() && u->cid == statement_cid() &&
		u->count == count && u->key_is_null == (key == NULL) &&
		(key == NULL || strcmp(u->key, text_to_cstring(key)) == 0) &&
		moved_by_us(u->source, &u->tid);
	forget_counted_update(u);
	return moved;
}

/* rl_enforce(name, key_column [, count]): the trigger function. */
Datum
rl_enforce(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	HeapTuple	tuple;
	EnforceCache *cache;
	double		count;
	text	   *key;
	Oid			family;
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

	cache = enforce_cache(fcinfo, trigger, rel);
	count = row_count(cache, rel, tuple);
	key = row_key(cache, rel, tuple);
	family = rel->rd_rel->relispartition && before_insert_or_update(trigger) ?
		trigger_family(cache, trigger) : InvalidOid;
	if (OidIsValid(family) && TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) &&
		moved_row(family, key, count))
		return PointerGetDatum(tuple);
	rl_target_init(&target, cstring_to_text(trigger->tgargs[0]), key);

	rl_storage_begin_writing(get_func_namespace(fcinfo->flinfo->fn_oid),
							 "rl_enforce()");
	rl_target_resolve(&target, NULL);
	rl_consume(&target, count, false, false, &answer);
	rl_storage_end();

	if (!answer.ok && target.denied)
		rl_raise_denied(target.label, target.address, answer.has_retry,
						answer.retry_after);
	if (!answer.ok)
		rl_raise_exceeded(target.label, target.key_is_null ? NULL : target.key,
						  count, answer.remaining, answer.retry_after);
	if (OidIsValid(family) && TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		note_counted_update(family, rel, &trigdata->tg_trigtuple->t_self, key,
							count);
	return PointerGetDatum(tuple);
}
