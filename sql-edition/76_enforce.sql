-- rl_enforce (src/trigger.c): a rate limit enforced where the rows are
-- written.
--
--   CREATE TRIGGER ... BEFORE INSERT ON messages FOR EACH ROW
--   EXECUTE FUNCTION rl_enforce('sendMessage', 'user_id' [, count]);
--
-- Each row consumes from the named limit under the key in the given column
-- (a NULL column means the limit shared by the whole name).  The optional
-- count is a number or the name of a numeric column.  A refused row raises
-- RL001.  One value of the key column is one key whatever the session's
-- settings: the key is the column's text under DateStyle ISO, TimeZone UTC
-- and bytea_output hex, a numeric without trailing fractional zeros
-- beyond its declared scale, a char of no length without trailing blanks.
-- Not the C edition's: an UPDATE that moves a row to another partition,
-- under a trigger BEFORE INSERT OR UPDATE cloned to every partition, is
-- counted twice (as its UPDATE and as its INSERT), never less.

-- parse_number: an argument or a column's text as a number, as strtod
-- reads a whole string; NULL when it is not one.
CREATE FUNCTION _rl_enforce_number(s text)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF s OPERATOR(pg_catalog.!~*) '^[ \t\n\r\f\v]*[-+]?([0-9]+\.?[0-9]*([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?|inf|infinity|nan)$' THEN
		RETURN NULL;
	END IF;
	RETURN s::float8;
EXCEPTION WHEN numeric_value_out_of_range OR invalid_text_representation THEN
	RETURN NULL;
END
$$;

-- argument_column and refuse_generated: a column named by a trigger
-- argument, checked.
CREATE FUNCTION _rl_enforce_column(relid oid, relname text, col text)
RETURNS pg_catalog.pg_attribute
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	a pg_catalog.pg_attribute;
BEGIN
	SELECT * INTO a FROM pg_catalog.pg_attribute x
	WHERE x.attrelid OPERATOR(pg_catalog.=) relid
		AND x.attname OPERATOR(pg_catalog.=) col::name
		AND x.attnum OPERATOR(pg_catalog.>) 0::int2 AND NOT x.attisdropped;
	IF a.attname IS NULL THEN
		RAISE EXCEPTION 'column "%" of relation "%" does not exist', col, relname
			USING ERRCODE = 'undefined_column',
			HINT = 'Check the arguments of the rl_enforce() trigger.';
	END IF;
	RETURN a;
END
$$;

CREATE FUNCTION _rl_enforce_generated(a pg_catalog.pg_attribute, trigger_name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF a.attgenerated OPERATOR(pg_catalog.<>) ''::"char" THEN
		RAISE EXCEPTION 'rl_enforce() cannot read generated column "%" in a BEFORE trigger', a.attname
			USING ERRCODE = 'feature_not_supported',
			DETAIL = pg_catalog.format('Generated columns are computed after BEFORE triggers run; trigger "%s" would see the value before it.', trigger_name),
			HINT = 'Create the trigger AFTER INSERT OR UPDATE.';
	END IF;
END
$$;

-- getBaseTypeAndTypmod: a column's type and typmod below its domains.
CREATE FUNCTION _rl_base_type(typid oid, typmod integer, OUT base oid, OUT base_typmod integer)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	t pg_catalog.pg_type;
BEGIN
	base := typid;
	base_typmod := typmod;
	LOOP
		SELECT * INTO t FROM pg_catalog.pg_type x WHERE x.oid OPERATOR(pg_catalog.=) base;
		EXIT WHEN t.typtype OPERATOR(pg_catalog.<>) 'd'::"char";
		base := t.typbasetype;
		base_typmod := t.typtypmod;
	END LOOP;
END
$$;

-- resolve_key: refuse a key column whose text is not one per value
-- whatever the settings, or whose collation calls values of different
-- text equal.
CREATE FUNCTION _rl_enforce_key_column(a pg_catalog.pg_attribute)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	b record := _rl_base_type(a.atttypid, a.atttypmod);
	c pg_catalog.pg_collation;
BEGIN
	-- text, varchar, name, "char", smallint, integer, bigint, oid, uuid,
	-- inet, boolean, bpchar, numeric, date, timestamp, timestamptz, bytea
	IF NOT b.base OPERATOR(pg_catalog.=) ANY ('{25,1043,19,18,21,23,20,26,2950,869,16,1042,1700,1082,1114,1184,17}'::oid[])
			AND NOT EXISTS (SELECT FROM pg_catalog.pg_type t
				WHERE t.oid OPERATOR(pg_catalog.=) b.base AND t.typtype OPERATOR(pg_catalog.=) 'e'::"char") THEN
		RAISE EXCEPTION 'rl_enforce() cannot key rows by column "%" of type %',
			a.attname, pg_catalog.format_type(a.atttypid, NULL)
			USING ERRCODE = 'datatype_mismatch',
			DETAIL = 'One value must be one key whatever the session''s settings, so the key column must be of type text, varchar, char, name, "char", smallint, integer, bigint, oid, uuid, inet, boolean, an enum, numeric, date, timestamp, timestamptz or bytea, or of a domain over one of them.',
			HINT = 'Key the trigger on a column of one of those types, for example a generated column computed from this one.';
	END IF;
	IF a.attcollation OPERATOR(pg_catalog.<>) 0::oid THEN
		SELECT * INTO c FROM pg_catalog.pg_collation x WHERE x.oid OPERATOR(pg_catalog.=) a.attcollation;
		IF NOT c.collisdeterministic THEN
			RAISE EXCEPTION 'rl_enforce() cannot key rows by column "%" of nondeterministic collation "%"',
				a.attname, c.collname
				USING ERRCODE = 'feature_not_supported',
				DETAIL = 'Values the collation calls equal would count under different keys.',
				HINT = 'Key the trigger on a column with a deterministic collation, for example a generated column holding a normalized form of this one.';
		END IF;
	END IF;
END
$$;

-- row_key and row_count: a row's key (NULL for NULL), and a count
-- column's value, written under the settings that make one text per
-- value (the function's own, whatever the session's).
CREATE FUNCTION _rl_enforce_key(r anyelement, a pg_catalog.pg_attribute)
RETURNS text
LANGUAGE plpgsql STABLE
SET DateStyle = 'ISO'
SET TimeZone = 'UTC'
SET bytea_output = 'hex'
AS $$
DECLARE
	b record := _rl_base_type(a.atttypid, a.atttypmod);
	v text;
	scale integer;
	point integer;
BEGIN
	EXECUTE pg_catalog.format('SELECT CASE WHEN ($1).%1$I IS NOT NULL THEN pg_catalog.format(''%%s'', ($1).%1$I) END',
		a.attname) INTO v USING r;
	IF v IS NULL THEN
		RETURN NULL;
	END IF;
	IF b.base OPERATOR(pg_catalog.=) 1042::oid AND b.base_typmod < 4 THEN
		-- bpchar of no length compares values as if blank-trimmed
		RETURN pg_catalog.rtrim(v, ' ');
	END IF;
	IF b.base OPERATOR(pg_catalog.=) 1700::oid AND v OPERATOR(pg_catalog.~) '[0-9]$' THEN
		-- numeric_normalize, then padded to the declared scale
		IF pg_catalog.strpos(v, '.') > 0 THEN
			v := pg_catalog.rtrim(pg_catalog.rtrim(v, '0'), '.');
		END IF;
		scale := CASE WHEN b.base_typmod < 4 THEN 0
			ELSE GREATEST((((b.base_typmod - 4) & 2047) # 1024) - 1024, 0) END;
		point := pg_catalog.strpos(v, '.');
		IF scale > 0 THEN
			IF point = 0 THEN
				v := v || '.' || pg_catalog.repeat('0', scale);
			ELSIF pg_catalog.length(v) - point < scale THEN
				v := v || pg_catalog.repeat('0', scale - (pg_catalog.length(v) - point));
			END IF;
		END IF;
	END IF;
	RETURN v;
END
$$;

CREATE FUNCTION _rl_enforce_count(r anyelement, a pg_catalog.pg_attribute)
RETURNS float8
LANGUAGE plpgsql STABLE
SET extra_float_digits = 1
AS $$
DECLARE
	base oid := (_rl_base_type(a.atttypid, a.atttypmod)).base;
	v text;
	n float8;
BEGIN
	IF base OPERATOR(pg_catalog.=) 701::oid THEN
		EXECUTE pg_catalog.format('SELECT ($1).%I::float8', a.attname) INTO n USING r;
		IF n IS NULL THEN
			RAISE EXCEPTION 'count column "%" is null', a.attname USING ERRCODE = 'null_value_not_allowed';
		END IF;
		RETURN n;
	END IF;
	-- a real as its shortest exact decimal (1.4, not 1.39999997...)
	EXECUTE pg_catalog.format('SELECT CASE WHEN ($1).%1$I IS NOT NULL THEN pg_catalog.format(''%%s'', ($1).%1$I) END',
		a.attname) INTO v USING r;
	IF v IS NULL THEN
		RAISE EXCEPTION 'count column "%" is null', a.attname USING ERRCODE = 'null_value_not_allowed';
	END IF;
	n := _rl_enforce_number(v);
	IF n IS NULL THEN
		RAISE EXCEPTION 'count column "%" does not hold a number: "%"', a.attname, v
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN n;
END
$$;

CREATE FUNCTION rl_enforce()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
	keycol pg_catalog.pg_attribute;
	countcol pg_catalog.pg_attribute;
	constant float8 := 1;
	count float8;
	key text;
	before boolean := TG_WHEN = 'BEFORE';
BEGIN
	IF TG_LEVEL <> 'ROW' THEN
		RAISE EXCEPTION 'rl_enforce() must be fired FOR EACH ROW'
			USING ERRCODE = 'trigger_protocol_violated';
	END IF;
	IF TG_NARGS < 2 OR TG_NARGS > 3 THEN
		RAISE EXCEPTION 'rl_enforce() takes a limit name, a key column and an optional count'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('Trigger "%s" passes %s arguments.', TG_NAME, TG_NARGS);
	END IF;
	keycol := _rl_enforce_column(TG_RELID, TG_TABLE_NAME::text, TG_ARGV[1]);
	PERFORM _rl_enforce_key_column(keycol);
	IF TG_NARGS = 3 THEN
		constant := _rl_enforce_number(TG_ARGV[2]);
		IF constant IS NULL THEN
			countcol := _rl_enforce_column(TG_RELID, TG_TABLE_NAME::text, TG_ARGV[2]);
		END IF;
	END IF;
	IF before THEN
		PERFORM _rl_enforce_generated(keycol, TG_NAME::text);
		IF countcol.attname IS NOT NULL THEN
			PERFORM _rl_enforce_generated(countcol, TG_NAME::text);
		END IF;
	END IF;
	IF TG_OP = 'DELETE' THEN
		count := CASE WHEN countcol.attname IS NULL THEN constant ELSE _rl_enforce_count(OLD, countcol) END;
		key := _rl_enforce_key(OLD, keycol);
	ELSE
		count := CASE WHEN countcol.attname IS NULL THEN constant ELSE _rl_enforce_count(NEW, countcol) END;
		key := _rl_enforce_key(NEW, keycol);
	END IF;
	PERFORM _rl_check_name_key(TG_ARGV[0], key);
	PERFORM _rl_require_writable('rl_enforce()');
	PERFORM _rl_limit_or_check(TG_ARGV[0], key, count, false, true, NULL::rl_policy,
		false, NULL::interval, false, true);
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	RETURN NEW;
END
$$;
COMMENT ON FUNCTION rl_enforce() IS
	'row trigger: rl_enforce(name, key_column [, count]) consumes per row and raises RL001 when refused';
REVOKE ALL ON FUNCTION rl_enforce() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rl_enforce() TO PUBLIC;
