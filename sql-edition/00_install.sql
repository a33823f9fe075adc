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
	-- A role with CREATE on the schema could plant an operator or function
	-- that the edition's SECURITY DEFINER functions would run as the owner
	-- wherever a call needs an implicit cast: an exact match there beats
	-- pg_catalog's.  So every operator and internal call in the bodies
	-- has operands of the exact types it resolves to (cast where not;
	-- test/sql-edition/plant.sql checks), and PUBLIC must not have CREATE.
	IF pg_catalog.has_schema_privilege('public', pg_catalog.current_schema(), 'CREATE') THEN
		RAISE EXCEPTION 'schema "%" allows CREATE to PUBLIC', pg_catalog.current_schema()
			USING ERRCODE = 'insufficient_privilege',
			DETAIL = 'Any role could create objects there that the edition''s functions would run with its owner''s rights.',
			HINT = 'Revoke CREATE on the schema from PUBLIC, or install into a schema of its own.';
	END IF;
	PERFORM pg_catalog.set_config('search_path',
		pg_catalog.quote_ident(pg_catalog.current_schema()) OPERATOR(pg_catalog.||) ', pg_temp',
		false);
END
$rl$;
