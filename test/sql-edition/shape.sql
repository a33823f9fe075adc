-- test/sql-edition/shape.sql: the declarations of the edition installed in
-- the first schema of search_path, one fact a line, as
-- "object|property|value": composite types' attributes, tables' columns,
-- constraints, indexes, options and comments, and each function's
-- arguments, result, kind, volatility, parallel safety, strictness,
-- SECURITY DEFINER, EXECUTE to PUBLIC and comment.  The _rl_ helpers of
-- the SQL edition are left out.  Run on both editions by run.sh and
-- compared by shape.pl.  Names print without the schema's prefix; a
-- value's runs of white space print as one space.
-- The query itself runs on pg_catalog alone, so that nothing another role
-- planted in the edition's schema (run.sh plants operators there) can
-- answer for it; the schema's prefix is then taken off every line.
SELECT pg_catalog.current_schema() AS shape_nsp \gset
SET search_path = pg_catalog;
WITH s AS (
	-- the edition's objects: those of the owner of its rate_limits table
	SELECT c.relnamespace AS nsp, c.relowner AS owner
	FROM pg_catalog.pg_class c
	WHERE c.relnamespace = :'shape_nsp'::regnamespace AND c.relname = 'rate_limits'
), fn AS (
	SELECT p.* FROM pg_catalog.pg_proc p, s
	WHERE p.pronamespace = s.nsp AND p.proowner = s.owner
		AND p.proname NOT LIKE '\_rl\_%'
), ty AS (
	SELECT t.oid, t.typname, t.typrelid
	FROM pg_catalog.pg_type t JOIN pg_catalog.pg_class c ON c.oid = t.typrelid, s
	WHERE t.typnamespace = s.nsp AND t.typowner = s.owner AND c.relkind = 'c'
		AND t.typname NOT LIKE '\_rl\_%'
), tb AS (
	SELECT c.oid, c.relname, c.reloptions FROM pg_catalog.pg_class c, s
	WHERE c.relnamespace = s.nsp AND c.relowner = s.owner AND c.relkind IN ('r', 'p')
)
SELECT replace(o || '|' || k || '|' || coalesce(regexp_replace(v, '\s+', ' ', 'g'), '<null>'),
	quote_ident(:'shape_nsp') || '.', '')
FROM (
	SELECT 'function ' || p.oid::regprocedure AS o, k, v
	FROM fn p, LATERAL (VALUES
		('arguments', pg_catalog.pg_get_function_arguments(p.oid)),
		('result', pg_catalog.pg_get_function_result(p.oid)),
		('kind', p.prokind::text),
		('volatility', p.provolatile::text),
		('parallel', p.proparallel::text),
		('strict', p.proisstrict::text),
		('security definer', p.prosecdef::text),
		('public execute', (p.proacl IS NULL OR EXISTS (
			SELECT FROM pg_catalog.aclexplode(p.proacl) a
			WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))::text),
		('comment', pg_catalog.obj_description(p.oid, 'pg_proc'))) AS x(k, v)
	UNION ALL
	SELECT 'type ' || t.typname, 'attribute ' || a.attnum,
		a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
		|| coalesce(' collate ' || nullif(a.attcollation, 0)::regcollation, '')
	FROM ty t JOIN pg_catalog.pg_attribute a
		ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT 'type ' || t.typname, 'comment', pg_catalog.obj_description(t.oid, 'pg_type')
	FROM ty t
	UNION ALL
	SELECT 'table ' || c.relname, 'column ' || a.attnum,
		a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
		|| CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
		|| coalesce(' default ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid), '')
		|| coalesce(' collate ' || nullif(a.attcollation, 0)::regcollation, '')
	FROM tb c JOIN pg_catalog.pg_attribute a
		ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
	UNION ALL
	SELECT 'table ' || c.relname, 'comment on column ' || a.attname,
		pg_catalog.col_description(c.oid, a.attnum)
	FROM tb c JOIN pg_catalog.pg_attribute a
		ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	UNION ALL
	SELECT 'table ' || c.relname, 'constraint ' || k.conname,
		k.contype::text || ' ' || pg_catalog.pg_get_constraintdef(k.oid)
	FROM tb c JOIN pg_catalog.pg_constraint k ON k.conrelid = c.oid
	UNION ALL
	SELECT 'table ' || c.relname, 'index ' || i.indexrelid::regclass,
		regexp_replace(pg_catalog.pg_get_indexdef(i.indexrelid), ' ON \S+ ', ' ON ')
	FROM tb c JOIN pg_catalog.pg_index i ON i.indrelid = c.oid
	UNION ALL
	SELECT 'table ' || c.relname, 'options', c.reloptions::text FROM tb c
	UNION ALL
	SELECT 'table ' || c.relname, 'comment', pg_catalog.obj_description(c.oid, 'pg_class')
	FROM tb c
) f
ORDER BY 1;
