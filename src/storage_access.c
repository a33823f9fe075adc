/*-------------------------------------------------------------------------
 *
 * storage_access.c
 *	  Reading and writing rl_access, the allow and deny lists of limits
 *	  (access.c), through SPI.
 *
 * Rare statements: the entries are read at a miss of the per-backend
 * cache (definitions.c), written by rl_allow, rl_deny and rl_unlist.  So
 * each is planned when it runs, in the schema of the run rl_storage_begin
 * started, spelling that schema and its operators as storage.c does.
 * Entries are read like definitions, with a fresh snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "access.h"
#include "storage.h"

#define EQ " OPERATOR(pg_catalog.=) "

/* Run one statement on rl_access (%s: the schema); SPI_tuptable holds rows. */
static void
run_access(const char *fmt, int nargs, Oid *types, Datum *args,
		   const char *nulls, bool fresh, int expected)
{
	Oid			nspid = get_rel_namespace(rl_storage_access_relid());
	char	   *sql = psprintf(fmt, quote_identifier(get_namespace_name(nspid)));
	SPIPlanPtr	plan;
	Snapshot	latest = InvalidSnapshot;
	int			rc;

	rl_storage_connect();
	plan = SPI_prepare(sql, nargs, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (fresh)
		latest = RegisterSnapshot(GetLatestSnapshot());
	rc = SPI_execute_snapshot(plan, args, nulls, latest, InvalidSnapshot,
							  false, true, 0);
	if (fresh)
		UnregisterSnapshot(latest);
	if (rc != expected)
		elog(ERROR, "SPI_execute_snapshot failed for \"%s\": %s",
			 sql, SPI_result_code_string(rc));
	SPI_freeplan(plan);
	pfree(sql);
}

/*
 * The entries of name's lists whose network holds address (a host address
 * in text form), the most specific first and deny before allow at the same
 * network: allocated in cxt; returns how many.  Only for a name whose
 * definition says it has entries (so, 1.3 on).
 */
int
rl_storage_get_access(text *name, text *address, MemoryContext cxt,
					  RlAccessEntry **entries)
{
	Oid			types[2] = {TEXTOID, INETOID};
	Datum		args[2];
	RlAccessEntry *result;

	args[0] = PointerGetDatum(name);
	args[1] = DirectFunctionCall1(inet_in,
								  CStringGetDatum(text_to_cstring(address)));
	run_access("SELECT action" EQ "'deny', expires_at FROM ONLY %s.rl_access"
			   " WHERE name" EQ "$1 AND net OPERATOR(pg_catalog.>>=) $2"
			   " ORDER BY pg_catalog.masklen(net) DESC, action" EQ "'deny' DESC",
			   2, types, args, NULL, true, SPI_OK_SELECT);
	result = MemoryContextAllocZero(cxt, sizeof(RlAccessEntry) *
									Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d;

		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
						  &isnull);
		result[i].deny = !isnull && DatumGetBool(d);
		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2,
						  &isnull);
		result[i].expires = !isnull;
		result[i].expires_at = isnull ? 0 : DatumGetTimestampTz(d);
	}
	*entries = result;
	return (int) SPI_processed;
}

/* Create or replace an entry (checked): name, net, action, expires_at, note. */
void
rl_storage_put_access(Datum *values, bool *nulls)
{
	Oid			types[5] = {TEXTOID, CIDROID, TEXTOID, TIMESTAMPTZOID, TEXTOID};
	char		argnulls[5];

	for (int i = 0; i < 5; i++)
		argnulls[i] = nulls[i] ? 'n' : ' ';
	run_access("INSERT INTO %s.rl_access AS a (name, net, action, expires_at, note)"
			   " VALUES ($1, $2, $3, $4, $5)"
			   " ON CONFLICT (name, net, action) DO UPDATE"
			   " SET expires_at = excluded.expires_at, note = excluded.note",
			   5, types, values, argnulls, false, SPI_OK_INSERT);
}

/* Delete the entries of one network of a name; false when there was none. */
bool
rl_storage_delete_access(text *name, Datum net)
{
	Oid			types[2] = {TEXTOID, CIDROID};
	Datum		args[2] = {PointerGetDatum(name), net};

	run_access("DELETE FROM ONLY %s.rl_access WHERE name" EQ "$1 AND net" EQ "$2",
			   2, types, args, NULL, false, SPI_OK_DELETE);
	return SPI_processed > 0;
}

/* Delete every entry of a name (rl_undefine; 1.3 on). */
void
rl_storage_delete_name_access(text *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {PointerGetDatum(name)};

	run_access("DELETE FROM ONLY %s.rl_access WHERE name" EQ "$1",
			   1, types, args, NULL, false, SPI_OK_DELETE);
}
