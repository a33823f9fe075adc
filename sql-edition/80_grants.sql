-- Grants, as the C edition's: everything starts revoked from PUBLIC; then
-- anyone may build policies, consume, check and read limits and read the
-- clock.  Defining, undefining, resetting, refunds, penalties, blocks and
-- settlements stay with the owner until granted.  The _rl_ helpers are
-- the owner's alone: the public functions call them as their owner (SECURITY
-- DEFINER).  Each helper's comment in the database points to its source,
-- whose comment says what it does.
DO $rl$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN
		SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
		WHERE p.pronamespace OPERATOR(pg_catalog.=) (SELECT n.oid FROM pg_catalog.pg_namespace n
			WHERE n.nspname OPERATOR(pg_catalog.=) pg_catalog.current_schema())
			-- the install's own: not what another role made in the schema
			AND p.proowner OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r
				WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
			AND (p.proname OPERATOR(pg_catalog.~~) '\_rl\_%'
				OR p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['rl_limit', 'rl_check',
					'rl_value', 'rl_reset', 'rl_define', 'rl_undefine',
					'rl_token_bucket', 'rl_fixed_window', 'rl_sliding_window',
					'rl_now', 'rl_sql_edition', 'rl_refund', 'rl_penalize', 'rl_block',
					'rl_limit_all', 'rl_settle']))
	LOOP
		EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
		IF f::text ~ '^(.*\.)?_rl_' THEN
			EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
				'internal to the SQL edition of ratelimit: its comment in sql-edition/ says what it does');
		END IF;
		IF f::text !~ '^(.*\.)?(_rl_\w*|rl_reset|rl_define|rl_undefine|rl_refund|rl_penalize|rl_block|rl_settle)\(' THEN
			EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', f);
		END IF;
	END LOOP;
END
$rl$;
