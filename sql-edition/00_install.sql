-- ratelimit, SQL edition: the table-store core in SQL and PL/pgSQL, for a
-- PostgreSQL that cannot load the C library (a managed service).  Run it
-- with psql -1 -v ON_ERROR_STOP=1 -f, as a role with CREATE on the schema
-- that search_path names first; the same text is the body of the pg_tle
-- extension ratelimit_sql.  Generated from sql-edition/ by
-- sql-edition/build.sh: edit those files, not this one.

-- Every object goes into the first schema of search_path, and every
-- function runs with search_path set to that schema then pg_temp, as it
-- was here (SET search_path FROM CURRENT): pg_catalog is searched first,
-- and a caller's temporary tables last, so no caller can put a table,
-- type or function of its own in front of the edition's.
DO $rl$
BEGIN
	IF pg_catalog.current_schema() IS NULL THEN
		RAISE EXCEPTION 'no schema to install ratelimit into'
			USING ERRCODE = 'invalid_schema_name',
			HINT = 'Set search_path to the schema first.';
	END IF;
	PERFORM pg_catalog.set_config('search_path',
		pg_catalog.quote_ident(pg_catalog.current_schema()) OPERATOR(pg_catalog.||) ', pg_temp',
		false);
END
$rl$;
