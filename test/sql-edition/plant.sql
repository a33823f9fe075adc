-- test/sql-edition/plant.sql: run by test/sql-edition/run.sh as a role
-- that has CREATE on the SQL edition's schema (not its owner), before and
-- after the install.  It plants in that schema, for every operator name
-- the edition's source uses (:'ops') and every internal function of the
-- edition (:'sigs', lines "name|type,type,...|number of defaults"), an
-- exact match for each signature that pg_catalog's operators or the
-- edition's functions answer only through an implicit cast: one operand
-- or argument of another type.  Such a planted object would win the
-- resolution, and run as the owner inside SECURITY DEFINER functions.
-- Each one fails when it runs inside the edition (a frame of an rl_ or
-- _rl_ function, or the install's DO blocks, on the stack), naming
-- itself; elsewhere a planted operator gives pg_catalog's answer, so the
-- tests' own queries are unchanged.  Objects already planted, and
-- signatures whose types do not exist yet, are skipped.
SET search_path = limits;
SET client_min_messages = notice;
SELECT pg_catalog.set_config('zz_planted.ops', :'ops', false),
	pg_catalog.set_config('zz_planted.sigs', :'sigs', false) \g /dev/null

-- Whether a stack (PG_CONTEXT) holds a frame of the edition below the
-- planted function's own: an rl_ or _rl_ function, or a DO block while
-- the edition installs (run.sh sets zz_planted.installing then; a test's
-- own DO blocks are not the edition's).
CREATE OR REPLACE FUNCTION zz_planted_inside(ctx text) RETURNS boolean
LANGUAGE sql STABLE
AS $$SELECT pg_catalog.regexp_replace(ctx, E'^[^\\n]*\\n?', '') OPERATOR(pg_catalog.~)
	E'function "?(limits\\.)?_?rl_\\w*(\\(|")'
	OR (pg_catalog.current_setting('zz_planted.installing', true) OPERATOR(pg_catalog.=) 'on'
		AND ctx OPERATOR(pg_catalog.~) 'inline_code_block')$$;

DO $plant$
DECLARE
	types regtype[];
	ops text[] := pg_catalog.string_to_array(pg_catalog.current_setting('zz_planted.ops'), ' ');
	op text;
	l regtype;
	r regtype;
	res regtype;
	n integer := 0;
	sig text;
	fname text;
	fargs regtype[];
	ndef integer;
	k integer;
	i integer;
	t regtype;
	tried regtype[];
	fn text;
BEGIN
	-- the built-in types, the edition's own (once installed), some arrays
	SELECT pg_catalog.array_agg(x.t) INTO types FROM (
		SELECT pg_catalog.to_regtype(s) AS t FROM pg_catalog.unnest(ARRAY['boolean', 'smallint',
			'integer', 'bigint', 'numeric', 'real', 'double precision', 'text', 'character varying',
			'character', 'name', '"char"', 'bytea', 'timestamp with time zone',
			'timestamp without time zone', 'date', 'time without time zone', 'interval', 'inet',
			'cidr', 'uuid', 'oid', 'regclass', 'regprocedure', 'json', 'jsonb', 'text[]',
			'bigint[]', 'integer[]', 'double precision[]', 'numeric[]', 'boolean[]',
			'interval[]', 'timestamp with time zone[]']) s
		UNION
		SELECT ty.oid::regtype FROM pg_catalog.pg_type ty
		WHERE ty.typnamespace OPERATOR(pg_catalog.=) 'limits'::regnamespace
			AND ty.typtype OPERATOR(pg_catalog.=) ANY (ARRAY['c', 'd', 'e']::"char"[])
			AND ty.typname OPERATOR(pg_catalog.!~) '^zz_') x;

	FOREACH op IN ARRAY ops LOOP
		CONTINUE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_operator o
			WHERE o.oprname OPERATOR(pg_catalog.=) op
			AND o.oprnamespace OPERATOR(pg_catalog.=) 'pg_catalog'::regnamespace);
		FOREACH l IN ARRAY types || ARRAY[NULL::regtype] LOOP
			FOREACH r IN ARRAY types LOOP
				-- pg_catalog's exact match wins: nothing to plant
				CONTINUE WHEN EXISTS (SELECT FROM pg_catalog.pg_operator o
					WHERE o.oprname OPERATOR(pg_catalog.=) op
					AND o.oprleft OPERATOR(pg_catalog.=) COALESCE(l, 0)
					AND o.oprright OPERATOR(pg_catalog.=) r
					AND o.oprnamespace OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog'::regnamespace,
						'limits'::regnamespace]));
				BEGIN
					EXECUTE pg_catalog.format('SELECT pg_catalog.pg_typeof(%s OPERATOR(pg_catalog.%s) NULL::%s)',
						CASE WHEN l IS NULL THEN '' ELSE pg_catalog.format('NULL::%s', l) END, op, r)
						INTO res;
				EXCEPTION WHEN OTHERS THEN
					CONTINUE;	-- pg_catalog has no answer for these types
				END;
				n := n OPERATOR(pg_catalog.+) 1;
				fn := pg_catalog.format('zz_planted_op_%s', pg_catalog.md5(op || l::text || r::text));
				EXECUTE pg_catalog.format($f$
					CREATE FUNCTION limits.%I(%s) RETURNS %s LANGUAGE plpgsql AS $p$
					DECLARE
						ctx text;
					BEGIN
						GET DIAGNOSTICS ctx = PG_CONTEXT;
						IF limits.zz_planted_inside(ctx) THEN
							RAISE EXCEPTION 'planted operator %s ran inside the SQL edition';
						END IF;
						RETURN %s OPERATOR(pg_catalog.%s) b;
					END $p$$f$,
					fn,
					CASE WHEN l IS NULL THEN pg_catalog.format('b %s', r)
						ELSE pg_catalog.format('a %s, b %s', l, r) END,
					res,
					pg_catalog.replace(pg_catalog.replace(pg_catalog.format('%s(%s, %s)', op, l, r), '''', ''''''), '%', '%%'),
					CASE WHEN l IS NULL THEN '' ELSE 'a' END, op);
				EXECUTE pg_catalog.format('CREATE OPERATOR limits.%s (FUNCTION = limits.%I, %sRIGHTARG = %s)',
					op, fn, CASE WHEN l IS NULL THEN '' ELSE pg_catalog.format('LEFTARG = %s, ', l) END, r);
			END LOOP;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'planted % operators', n;

	-- the edition's internal functions: one argument of another type that
	-- casts implicitly to the declared one, at every arity a call may use
	n := 0;
	FOREACH sig IN ARRAY pg_catalog.string_to_array(pg_catalog.current_setting('zz_planted.sigs'), E'\n') LOOP
		CONTINUE WHEN sig OPERATOR(pg_catalog.=) '';
		fname := pg_catalog.split_part(sig, '|', 1);
		BEGIN
			fargs := pg_catalog.string_to_array(pg_catalog.split_part(sig, '|', 2), ',')::regtype[];
		EXCEPTION WHEN OTHERS THEN
			CONTINUE;	-- a type the install has not created yet
		END;
		fargs := COALESCE(fargs, '{}');
		ndef := pg_catalog.split_part(sig, '|', 3)::integer;
		FOR k IN (COALESCE(pg_catalog.array_length(fargs, 1), 0) OPERATOR(pg_catalog.-) ndef)
			.. COALESCE(pg_catalog.array_length(fargs, 1), 0) LOOP
			FOR i IN 1 .. k LOOP
				FOREACH t IN ARRAY types LOOP
					CONTINUE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_cast c
						WHERE c.castsource OPERATOR(pg_catalog.=) t
						AND c.casttarget OPERATOR(pg_catalog.=) fargs[i]
						AND c.castcontext OPERATOR(pg_catalog.=) 'i');
					tried := fargs[1:k];
					tried[i] := t;
					-- an existing function, or one the install will create
					CONTINUE WHEN pg_catalog.format('%s|%s|', fname, pg_catalog.array_to_string(tried::text[], ','))
						OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.split_part(x, '|', 1) OPERATOR(pg_catalog.||) '|'
							OPERATOR(pg_catalog.||) pg_catalog.split_part(x, '|', 2) OPERATOR(pg_catalog.||) '|'
							FROM pg_catalog.unnest(pg_catalog.string_to_array(
								pg_catalog.current_setting('zz_planted.sigs'), E'\n')) x);
					CONTINUE WHEN pg_catalog.to_regprocedure(pg_catalog.format('limits.%I(%s)', fname,
						pg_catalog.array_to_string(tried::text[], ','))) IS NOT NULL;
					BEGIN
						EXECUTE pg_catalog.format($f$
							CREATE FUNCTION limits.%I(%s) RETURNS %s LANGUAGE plpgsql AS $p$
							BEGIN
								RAISE EXCEPTION 'planted function %s ran';
							END $p$$f$,
							fname, pg_catalog.array_to_string(tried::text[], ','),
							pg_catalog.split_part(sig, '|', 4),
							pg_catalog.format('%s(%s)', fname, pg_catalog.array_to_string(tried::text[], ',')));
					EXCEPTION WHEN undefined_object THEN
						CONTINUE;	-- its result type does not exist yet
					END;
					n := n OPERATOR(pg_catalog.+) 1;
				END LOOP;
			END LOOP;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'planted % functions', n;
END
$plant$;
