-- Concurrency limits: at most N holders of a (name, key) at once, as the
-- C edition's src/concurrency.c gives them, with the same meaning.
--
-- Permits (rl_acquire) are transaction-level advisory locks.  A limit of N
-- permits is N lock tags, slots 0 .. N-1 of the (name, key); taking a
-- permit is pg_try_advisory_xact_lock of a free slot, without waiting.
-- The lock manager then does the rest: the permit goes when the
-- transaction commits or rolls back, when a savepoint it was taken under
-- is rolled back, and when the backend dies.  Taking one writes no row and
-- assigns no transaction id.  A try runs in a subtransaction (a PL/pgSQL
-- block with an exception handler): a transaction-level advisory lock
-- cannot be unlocked alone, so a try that cannot take every permit it
-- asked for rolls its subtransaction back, which gives back the slots it
-- took and the name's lock (a transaction that held it before keeps it).
-- A slot this transaction already holds is another call's permit: taking
-- it again would succeed, so the slots held are read from pg_locks first
-- and passed over, never counted twice.  With wait, a refused call tries
-- again after a sleep that grows from 1 ms to 50 ms, until the wait is
-- over.
--
-- Lock tags.  The C edition's tags are advisory tags of its own field4
-- (objsubid 16382 and up), which no SQL function can take.  The SQL
-- edition uses pg_advisory_xact_lock(int4, int4), whose tags show in
-- pg_locks as advisory locks with objsubid 2: classid is the name's hash
-- (rl_key_hash(name), the C edition's hash) plus an offset, and objid the
-- key's hash (rl_key_hash(key)), or 0 for the name's lock:
--   slot s of (name, key)   classid rl_key_hash(name) + 16384 + s, objid rl_key_hash(key)
--   the key's lease lock    classid rl_key_hash(name) + 16383,     objid rl_key_hash(key)
--   the name's lock         classid rl_key_hash(name) + 16382,     objid 0
-- (sums modulo 2^32).  An application's own two-key advisory locks share
-- this space: pg_advisory_xact_lock(hashtext(name), hashtext(key)) never
-- meets a permit of that name (the offset), but a pair of numbers that
-- happens to equal a permit's tag blocks that permit, and a permit blocks
-- it.  Like a collision of two keys' hashes, that can refuse a call,
-- never grant one beyond a limit.  Within one (name, key) the slots'
-- tags are distinct.
--
-- Leases (rl_lease) outlive the transaction, so they are rows of
-- rl_leases, as in the C edition.  A call takes the key's lease lock
-- (held until its transaction ends), so leases of one key are taken one
-- transaction at a time; it then counts the permits of the key's leases
-- neither released nor expired, and stores a new lease when the limit has
-- room.  The C edition counts with a fresh snapshot; PL/pgSQL has only
-- the transaction's, which in REPEATABLE READ or SERIALIZABLE would not
-- show a lease committed since it began.  So there rl_lease, a
-- redefinition that must count leases, and an rl_release that does not
-- find its lease raise 0A000 naming the C edition.
--
-- Redefinitions, as the C edition: every call takes the name's lock in
-- share mode until its transaction ends, and reads the definition after
-- it has it; a change that could leave more holders than the new
-- definition allows (lowering, undefining, another kind or name) takes
-- it in exclusive mode first, and so waits for every transaction holding
-- permits of the name, while new calls are refused.  Raising waits for no
-- one.  rl_define_concurrency and rl_undefine do this before they write,
-- and the trigger rl_definitions_guard for any change, by hand too (a
-- TRUNCATE, for every name).  A transaction that holds permits of a name
-- cannot lower or drop it: it would wait for itself.  In REPEATABLE READ
-- or SERIALIZABLE, rl_acquire reads the definition of its snapshot; one
-- changed and committed since then fails the call with 40001 (the C
-- edition reads the newest).

-- Leases outlive the transaction that took them, so they are rows.  A
-- lease counts while it is neither released nor expired.
CREATE TABLE rl_leases (
	id uuid PRIMARY KEY,
	name text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	permits integer NOT NULL CHECK (permits OPERATOR(pg_catalog.>=) 1),
	acquired timestamptz NOT NULL,
	expires timestamptz NOT NULL,
	released timestamptz
);
CREATE INDEX rl_leases_key ON rl_leases (name, key);
CREATE INDEX rl_leases_expires ON rl_leases (expires);
COMMENT ON TABLE rl_leases IS
	'leases of concurrency limits: permits of (name, key) held from acquired until released or expires; key '''' is the shared NULL key';
REVOKE ALL ON TABLE rl_leases FROM PUBLIC;
DO $rl$
BEGIN
	PERFORM pg_catalog.pg_extension_config_dump('rl_leases', '');
EXCEPTION WHEN feature_not_supported OR object_not_in_prerequisite_state THEN
	NULL;
END
$rl$;

-- rl_key_hash: the C edition's hash of a name or key (hash_any of its
-- bytes, which hashtext is under a deterministic collation).
CREATE FUNCTION rl_key_hash(key text)
RETURNS oid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $$SELECT pg_catalog.hashtext(COALESCE(key, ''::text) COLLATE "C")::oid$$;
COMMENT ON FUNCTION rl_key_hash(text) IS
	'the hash of a name or key (NULL: the NULL key) in the lock tags of rl_acquire''s permits, as pg_locks shows them (classid, objid)';
REVOKE ALL ON FUNCTION rl_key_hash(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rl_key_hash(text) TO PUBLIC;

-- The first number of a lock tag of a name: its hash plus an offset
-- (16382 the name's lock, 16383 a key's lease lock, 16384 + s slot s),
-- modulo 2^32, as the signed integer pg_advisory_xact_lock takes.
CREATE FUNCTION _rl_lock_key(name text, offs integer)
RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$SELECT ((pg_catalog.hashtext(name COLLATE "C")::bigint + offs::bigint + 2147483648::bigint)
	% 4294967296::bigint - 2147483648::bigint)::integer$$;

-- The second number of a lock tag of a key ('' for the NULL key).
CREATE FUNCTION _rl_lock_subkey(key text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$SELECT pg_catalog.hashtext(COALESCE(key, ''::text) COLLATE "C")$$;

-- The advisory locks of tags (k1 + offsets, k2) in mode that pg_locks
-- shows granted, in this database: to this backend (mine), or to any.
-- Each is its offset from k1.
CREATE FUNCTION _rl_locks_held(k1 integer, k2 integer, lockmode text, mine boolean)
RETURNS SETOF bigint
LANGUAGE sql VOLATILE
AS $$SELECT DISTINCT (l.classid::bigint - (k1::bigint & 4294967295::bigint) + 4294967296::bigint)
		% 4294967296::bigint
	FROM pg_catalog.pg_locks l
	WHERE l.locktype = 'advisory'::text AND l.granted AND l.mode = lockmode
		AND l.objsubid = 2::smallint
		AND l.objid = (k2::bigint & 4294967295::bigint)::oid
		AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
			WHERE d.datname = pg_catalog.current_database())
		AND (NOT mine OR l.pid = pg_catalog.pg_backend_pid())$$;

-- Whether the definition row of a name, as this transaction's snapshot
-- shows it, was changed or deleted by a transaction that has committed
-- since (REPEATABLE READ and SERIALIZABLE only): its xmax, widened to a
-- full transaction id next to the snapshot's.  A row a committed
-- transaction only locked counts as changed: the call fails and is
-- retried, it never counts under an old definition.
CREATE FUNCTION _rl_definition_stale(name text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	x bigint;
	top bigint;
	xid bigint;
BEGIN
	SELECT d.xmax::text::bigint INTO x FROM ONLY rl_definitions d
	WHERE d.name = _rl_definition_stale.name;
	IF x IS NULL OR x = 0::bigint THEN
		RETURN false;
	END IF;
	top := pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::bigint;
	xid := top - top % 4294967296::bigint + x;
	IF xid > top + 2147483648::bigint THEN
		xid := xid - 4294967296::bigint;
	ELSIF xid <= top - 2147483648::bigint THEN
		xid := xid + 4294967296::bigint;
	END IF;
	BEGIN
		RETURN pg_catalog.pg_xact_status(xid::text::xid8) = 'committed'::text;
	EXCEPTION WHEN OTHERS THEN
		RETURN true;
	END;
END
$$;

-- The transaction's snapshot cannot show leases committed since it began
-- (see the top of this file): refuse what would have to count them.
CREATE FUNCTION _rl_require_fresh_leases(what text)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'the SQL edition of ratelimit cannot see every lease in a % transaction',
			pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
			USING ERRCODE = 'feature_not_supported',
			DETAIL = pg_catalog.format('%s must see every lease committed until now, and this transaction''s snapshot does not show those committed since it began.', what),
			HINT = 'Call it in a READ COMMITTED transaction, or use the C edition, which reads leases with a fresh snapshot.';
	END IF;
END
$$;

-- The slots a definition counts the holders of: its permits, or up to
-- max_reserved, which 1.2 kept on a lowered definition of permits; for
-- leases, the permits.
CREATE FUNCTION _rl_slots_in_use(kind text, capacity float8, max_reserved float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
AS $$SELECT CASE WHEN kind = 'concurrency'::text AND max_reserved IS NOT NULL
	THEN pg_catalog.float8larger(capacity, max_reserved) ELSE capacity END$$;

-- rl_target_require_concurrency and rl_check_permits: the definition of a
-- concurrency limit of the given kind with room for permits, read now
-- (waited: the call has waited for a lock since it last looked); its
-- permits (capacity) and the slots holders may sit in (hi).
CREATE FUNCTION _rl_concurrency_target(name text, kind text, permits integer,
	waited boolean, OUT capacity integer, OUT hi integer)
RETURNS record
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	d rl_definitions;
BEGIN
	SELECT * INTO d FROM ONLY rl_definitions WHERE rl_definitions.name = _rl_concurrency_target.name;
	IF d.name IS NULL AND waited THEN
		RAISE EXCEPTION 'rate limit "%" does not exist', name
			USING ERRCODE = 'undefined_object',
			DETAIL = 'It was undefined while the call waited.';
	ELSIF d.name IS NULL THEN
		RAISE EXCEPTION 'rate limit "%" does not exist', name
			USING ERRCODE = 'undefined_object',
			HINT = 'Define it with rl_define_concurrency().';
	END IF;
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed'
			AND _rl_definition_stale(name) THEN
		RAISE EXCEPTION 'could not serialize access due to concurrent update'
			USING ERRCODE = 'serialization_failure',
			DETAIL = pg_catalog.format('The definition of "%s" changed after this transaction''s snapshot was taken.', name);
	END IF;
	IF d.kind <> kind THEN
		IF d.kind NOT IN ('concurrency', 'concurrency lease') THEN
			RAISE EXCEPTION 'rate limit "%" is not a concurrency limit', name
				USING ERRCODE = 'wrong_object_type',
				HINT = pg_catalog.format('Call rl_limit() for a %s limit.', d.kind);
		END IF;
		RAISE EXCEPTION 'concurrency limit "%" is taken with %', name,
			CASE WHEN d.kind = 'concurrency' THEN 'rl_acquire()' ELSE 'rl_lease()' END
			USING ERRCODE = 'wrong_object_type',
			DETAIL = pg_catalog.format('Its definition says %s.',
				CASE WHEN d.kind = 'concurrency' THEN 'permits held until the transaction ends'
				ELSE 'leases held until released or expired' END);
	END IF;
	IF permits < 1 THEN
		RAISE EXCEPTION 'permits must be at least 1'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('permits is %s.', permits);
	END IF;
	IF permits::float8 > d.capacity THEN
		RAISE EXCEPTION 'permits exceed the limit of concurrency limit "%"', name
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('The call asked for %s permits; the limit is %s.',
				permits, _rl_printf_g(d.capacity, 6));
	END IF;
	capacity := d.capacity::integer;
	hi := _rl_slots_in_use(d.kind, d.capacity, d.max_reserved)::integer;
END
$$;

-- One try under the name's lock, in a subtransaction (see the top of this
-- file): none while a change of the definition holds the lock or waits
-- for it; else the newest definition, read now that no change that
-- matters can commit, and permits free slots of it, or none.  When the
-- definition counts slots above its permits (max_reserved), every holder
-- up to there is counted, and permits are granted only while all
-- together stay within the permits.  Last, the definition is read again.
CREATE FUNCTION _rl_acquire_try(name text, key text, permits integer)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	t record;
	now_t record;
	k2 integer := _rl_lock_subkey(key);
	base integer := _rl_lock_key(name, 16384);
	mine bigint[];
	start integer;
	slot integer;
	got integer := 0;
BEGIN
	BEGIN
		IF NOT pg_catalog.pg_try_advisory_xact_lock_shared(_rl_lock_key(name, 16382), 0) THEN
			RETURN false;
		END IF;
		t := _rl_concurrency_target(name, 'concurrency', permits, true);
		SELECT COALESCE(pg_catalog.array_agg(s), '{}'::bigint[]) INTO mine
		FROM _rl_locks_held(base, k2, 'ExclusiveLock', true) AS s;
		start := pg_catalog.floor(pg_catalog.random() * t.capacity::float8)::integer;
		FOR i IN 0 .. t.capacity - 1 LOOP
			EXIT WHEN got = permits;
			slot := (start + i) % t.capacity;
			CONTINUE WHEN slot::bigint = ANY (mine);
			IF pg_catalog.pg_try_advisory_xact_lock(_rl_lock_key(name, 16384 + slot), k2) THEN
				got := got + 1;
			END IF;
		END LOOP;
		IF got = permits AND (t.hi <= t.capacity OR
				(SELECT pg_catalog.count(*) FROM _rl_locks_held(base, k2, 'ExclusiveLock', false) AS s
				 WHERE s < t.hi::bigint) <= t.capacity::bigint) THEN
			now_t := _rl_concurrency_target(name, 'concurrency', permits, true);
			IF now_t.capacity = t.capacity AND now_t.hi = t.hi THEN
				RETURN true;
			END IF;
		END IF;
		RAISE EXCEPTION 'refused' USING ERRCODE = 'RLR00';
	EXCEPTION WHEN SQLSTATE 'RLR00' THEN
		RETURN false;
	END;
END
$$;

-- rl_acquire: take permits of a concurrency limit until the transaction
-- ends; false when they are not free within wait (0: one try).  It writes
-- nothing, so it runs in a read-only transaction; on a standby it is
-- refused, since the standby's permits would not count on the primary.
CREATE FUNCTION _rl_acquire(name text, key text, permits integer,
	wait interval, throws boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	usecs float8;
	t record;
	deadline timestamptz;
	left_ms float8;
	sleep_ms float8 := 1;
BEGIN
	IF pg_catalog.pg_is_in_recovery() THEN
		RAISE EXCEPTION 'cannot execute rl_acquire() during recovery'
			USING ERRCODE = 'read_only_sql_transaction';
	END IF;
	IF wait IS NULL THEN
		RAISE EXCEPTION 'wait must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	usecs := _rl_interval_usecs(wait);
	IF usecs < 0::float8 OR usecs > 3155760000000000::float8 THEN
		RAISE EXCEPTION 'wait must be at least zero and at most 100 years'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('wait is %s.', wait);
	END IF;
	IF throws IS NULL THEN
		RAISE EXCEPTION 'throws must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM _rl_check_name_key(name, key);
	IF permits IS NULL THEN
		RAISE EXCEPTION 'permits must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	t := _rl_concurrency_target(name, 'concurrency', permits, false);
	IF _rl_acquire_try(name, key, permits) THEN
		RETURN true;
	END IF;
	IF pg_catalog.trunc(usecs) >= 1::float8 THEN
		deadline := pg_catalog.clock_timestamp()
			+ '1 microsecond'::interval * pg_catalog.trunc(usecs);
		LOOP
			left_ms := _rl_interval_usecs(deadline - pg_catalog.clock_timestamp()) / 1000::float8;
			EXIT WHEN left_ms <= 0::float8;
			PERFORM pg_catalog.pg_sleep(pg_catalog.float8smaller(sleep_ms,
				pg_catalog.ceil(left_ms)) / 1000::float8);
			sleep_ms := pg_catalog.float8smaller(sleep_ms * 2::float8, 50::float8);
			IF _rl_acquire_try(name, key, permits) THEN
				RETURN true;
			END IF;
		END LOOP;
	END IF;
	IF throws THEN
		RAISE EXCEPTION 'concurrency limit "%" exceeded', name
			USING ERRCODE = 'RL001',
			DETAIL = CASE WHEN key IS NULL
				THEN pg_catalog.format('The call asked for %s of the shared limit''s %s permits; fewer are free.',
					permits, t.capacity)
				ELSE pg_catalog.format('The call asked for %s of the %s permits of key "%s"; fewer are free.',
					permits, t.capacity, key) END;
	END IF;
	RETURN false;
END
$$;

-- rl_lease_check_ttl: a lease holds permits of a key others share until it
-- expires, so its longest ttl (ratelimit.max_lease_ttl, in minutes, 1 day
-- unless set) is not the caller's choice.  Without the C library any role
-- can set the setting, so a value above 1 day is honoured only for the
-- roles that may pin the clock (a superuser, members of the owner).
CREATE FUNCTION _rl_check_lease_ttl(ttl_us bigint, ttl interval)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	setting text := pg_catalog.current_setting('ratelimit.max_lease_ttl', true);
	max_min float8 := 1440;
	shown text := '1d';
	v float8;
BEGIN
	IF setting IS NOT NULL AND setting <> '' THEN
		BEGIN
			IF setting ~ '^\s*[0-9]+\s*$' THEN
				v := setting::float8;
			ELSE
				v := _rl_interval_usecs(setting::interval) / 60000000::float8;
			END IF;
		EXCEPTION WHEN data_exception THEN
			RAISE EXCEPTION 'invalid value for parameter "ratelimit.max_lease_ttl": "%"', setting
				USING ERRCODE = 'invalid_parameter_value';
		END;
		IF v <= 1440::float8 OR pg_catalog.pg_has_role(session_user, current_user, 'MEMBER')
				OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = session_user) THEN
			max_min := v;
			shown := setting;
		END IF;
	END IF;
	IF ttl_us::float8 <= max_min * 60000000::float8 THEN
		RETURN;
	END IF;
	RAISE EXCEPTION 'ttl exceeds ratelimit.max_lease_ttl'
		USING ERRCODE = 'invalid_parameter_value',
		DETAIL = pg_catalog.format('The ttl is %s; ratelimit.max_lease_ttl is %s.', ttl, shown),
		HINT = 'A lease holds permits of a key others share. A superuser can allow longer leases, for one role with ALTER ROLE ... SET ratelimit.max_lease_ttl.';
END
$$;

-- rl_lease: a lease of permits for ttl, stored; its id, or NULL when the
-- limit has no room now.
CREATE FUNCTION _rl_lease(name text, key text, permits integer, ttl interval)
RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	usecs float8;
	ttl_us bigint;
	t record;
	now timestamptz;
	now_us bigint;
	held bigint;
	id uuid;
BEGIN
	IF ttl IS NULL THEN
		RAISE EXCEPTION 'ttl must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	usecs := _rl_interval_usecs(ttl);
	IF usecs <= 0::float8 OR usecs > 3155760000000000::float8 THEN
		RAISE EXCEPTION 'ttl must be greater than zero and at most 100 years'
			USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('ttl is %s.', ttl);
	END IF;
	ttl_us := pg_catalog.trunc(usecs)::bigint;
	PERFORM _rl_check_lease_ttl(ttl_us, ttl);
	PERFORM _rl_require_writable('rl_lease()');
	PERFORM _rl_check_name_key(name, key);
	IF permits IS NULL THEN
		RAISE EXCEPTION 'permits must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	t := _rl_concurrency_target(name, 'concurrency lease', permits, false);
	PERFORM _rl_require_fresh_leases('rl_lease()');
	PERFORM pg_catalog.pg_advisory_xact_lock_shared(_rl_lock_key(name, 16382), 0);
	PERFORM pg_catalog.pg_advisory_xact_lock(_rl_lock_key(name, 16383), _rl_lock_subkey(key));
	t := _rl_concurrency_target(name, 'concurrency lease', permits, true);
	now := _rl_now();
	now_us := _rl_us(now);
	-- END_TIMESTAMP, 294277-01-01 00:00 UTC, in microseconds
	IF now_us >= 9223371331200000000::bigint - ttl_us THEN
		RAISE EXCEPTION 'lease would expire after the end of the timestamp range'
			USING ERRCODE = 'datetime_field_overflow';
	END IF;
	SELECT COALESCE(pg_catalog.sum(l.permits), 0)::bigint INTO held
	FROM ONLY rl_leases l
	WHERE l.name = _rl_lease.name AND l.key = COALESCE(_rl_lease.key, ''::text)
		AND l.released IS NULL AND l.expires > now;
	IF (held + permits::bigint)::float8 > t.capacity::float8 THEN
		RETURN NULL;
	END IF;
	INSERT INTO rl_leases (id, name, key, permits, acquired, expires)
	VALUES (pg_catalog.gen_random_uuid(), _rl_lease.name, COALESCE(_rl_lease.key, ''::text),
		permits, now, _rl_ts(now_us + ttl_us))
	RETURNING rl_leases.id INTO id;
	RETURN id;
END
$$;

-- rl_concurrency_definition_change: what a change of a definition, from
-- before (kind, slots in use) under before_name to after under
-- after_name (NULL kind: none), must do before it commits.  When before
-- was a concurrency limit, and after is not the same one counting at
-- least the slots before counted, take the name's lock in exclusive mode,
-- waiting for every transaction holding its permits (or taking its
-- leases) to end; in a transaction holding permits of it, refuse rather
-- than wait for itself.  When after is a limit of permits and before was
-- not, refuse while leases of the name are held.
CREATE FUNCTION _rl_concurrency_change(before_name text, before_kind text,
	before_slots float8, after_name text, after_kind text, after_slots float8)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	same boolean := before_kind IS NOT NULL AND after_kind IS NOT NULL
		AND before_name = after_name AND before_kind = after_kind;
	held bigint;
BEGIN
	IF before_kind IN ('concurrency', 'concurrency lease')
			AND NOT (same AND after_slots >= before_slots) THEN
		IF before_kind = 'concurrency' AND EXISTS (
				SELECT FROM _rl_locks_held(_rl_lock_key(before_name, 16382), 0, 'ShareLock', true)
					AS s WHERE s = 0::bigint) THEN
			RAISE EXCEPTION 'cannot change concurrency limit "%" while this transaction holds its permits', before_name
				USING ERRCODE = 'object_in_use',
				DETAIL = 'A change that lowers or drops the limit waits until every transaction holding its permits has ended.',
				HINT = 'Change it in a transaction that has not called rl_acquire() on it.';
		END IF;
		PERFORM pg_catalog.pg_advisory_xact_lock(_rl_lock_key(before_name, 16382), 0);
	END IF;
	IF after_kind = 'concurrency' AND NOT same THEN
		PERFORM _rl_require_fresh_leases('A concurrency limit of permits');
		SELECT COALESCE(pg_catalog.sum(l.permits), 0)::bigint INTO held
		FROM ONLY rl_leases l
		WHERE l.name = after_name AND l.released IS NULL AND l.expires > _rl_now();
		IF held > 0::bigint THEN
			RAISE EXCEPTION 'concurrency limit "%" still has leases held', after_name
				USING ERRCODE = 'object_in_use',
				DETAIL = pg_catalog.format('Leases of the name hold %s permits until released or expired, and permits held until the transaction ends would not count them.', held),
				HINT = 'Release them with rl_release(), wait until their ttl passes, or use another name.';
		END IF;
	END IF;
END
$$;

-- rl_undefine's part for a concurrency limit, before its row goes: wait
-- for the holders, and delete a lease limit's leases that hold nothing
-- (the held ones stay, and count again if the name is defined again).
CREATE FUNCTION _rl_concurrency_undefine(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	d rl_definitions;
BEGIN
	SELECT * INTO d FROM ONLY rl_definitions WHERE rl_definitions.name = _rl_concurrency_undefine.name;
	IF d.kind NOT IN ('concurrency', 'concurrency lease') OR d.kind IS NULL THEN
		RETURN;
	END IF;
	PERFORM _rl_concurrency_change(name, d.kind,
		_rl_slots_in_use(d.kind, d.capacity, d.max_reserved), NULL::text, NULL::text, NULL::float8);
	IF d.kind = 'concurrency lease' THEN
		DELETE FROM ONLY rl_leases l WHERE l.name = _rl_concurrency_undefine.name
			AND (l.released IS NOT NULL OR l.expires <= _rl_now());
	END IF;
END
$$;

CREATE FUNCTION rl_define_concurrency(
	name text,
	permits integer,
	leases boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
	kind text;
	prev rl_definitions;
	n integer;
BEGIN
	PERFORM _rl_check_name_key(name, NULL::text);
	IF permits IS NULL THEN
		RAISE EXCEPTION 'permits must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF leases IS NULL THEN
		RAISE EXCEPTION 'leases must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF permits < 1 OR permits > 1000 THEN
		RAISE EXCEPTION 'permits must be between 1 and 1000'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	kind := CASE WHEN leases THEN 'concurrency lease' ELSE 'concurrency' END;
	PERFORM _rl_require_writable('rl_define_concurrency()');
	-- A lowering waits for the holders from before here, before the row is
	-- written (the trigger would too, after it).  Another form under the
	-- name is refused below, without a wait.
	SELECT * INTO prev FROM ONLY rl_definitions d WHERE d.name = rl_define_concurrency.name;
	IF prev.name IS NULL OR prev.kind = kind THEN
		PERFORM _rl_concurrency_change(name, prev.kind,
			_rl_slots_in_use(prev.kind, prev.capacity, prev.max_reserved),
			name, kind, permits::float8);
	END IF;
	INSERT INTO rl_definitions AS d (name, kind, capacity, shards)
	VALUES (rl_define_concurrency.name, kind, permits::float8, 1)
	ON CONFLICT ON CONSTRAINT rl_definitions_pkey DO UPDATE SET kind = excluded.kind,
		rate = NULL, period = NULL, capacity = excluded.capacity,
		max_reserved = NULL, shards = 1, start = NULL, storage = 'table',
		time_zone = NULL, shadow = false, block_for = NULL, block_factor = NULL,
		block_max = NULL, block_horizon = NULL, ipv4_prefix = NULL,
		ipv6_prefix = NULL, max_debt = NULL
	WHERE d.kind = excluded.kind;
	GET DIAGNOSTICS n = ROW_COUNT;
	IF n = 0 THEN
		RAISE EXCEPTION 'rate limit "%" is already defined as another form of limit', name
			USING ERRCODE = 'wrong_object_type',
			DETAIL = 'A rate limit cannot become a concurrency limit, nor a concurrency limit switch between permits and leases, under the same name.',
			HINT = 'Drop it with rl_undefine() first, or use another name.';
	END IF;
END
$$;
COMMENT ON FUNCTION rl_define_concurrency(text, integer, boolean) IS
	'create or replace a concurrency limit: at most permits holders per key, taken with rl_acquire (or with rl_lease when leases)';
REVOKE ALL ON FUNCTION rl_define_concurrency(text, integer, boolean) FROM PUBLIC;

-- rl_release: free a lease; true when it was held, false when it was
-- already released or had expired.  An id never issued (or removed by
-- rl_gc) is an error.
CREATE FUNCTION rl_release(lease uuid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
	now timestamptz;
	held boolean;
BEGIN
	IF lease IS NULL THEN
		RAISE EXCEPTION 'lease must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM _rl_require_writable('rl_release()');
	now := _rl_now();
	SELECT l.released IS NULL AND l.expires > now INTO held
	FROM ONLY rl_leases l WHERE l.id = lease FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM _rl_require_fresh_leases('rl_release() of a lease it does not find');
		RAISE EXCEPTION 'lease % does not exist', lease
			USING ERRCODE = 'undefined_object',
			HINT = 'rl_gc() removes leases once their ttl has passed.';
	END IF;
	IF NOT held THEN
		RETURN false;
	END IF;
	UPDATE ONLY rl_leases l SET released = now WHERE l.id = lease;
	RETURN true;
END
$$;
COMMENT ON FUNCTION rl_release(uuid) IS
	'free a lease; true when it was held, false when already released or expired';
REVOKE ALL ON FUNCTION rl_release(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rl_release(uuid) TO PUBLIC;

-- Monitoring, not granted to PUBLIC, as the C edition's: the permits held
-- now, read from pg_locks (see the top of this file for the tags).
CREATE VIEW rl_permits AS
SELECT d.name,
	d.capacity::integer AS permits,
	l.objid AS key_hash,
	pg_catalog.count(*)::integer AS held,
	pg_catalog.array_agg(DISTINCT l.pid) AS pids
FROM pg_catalog.pg_locks l
JOIN rl_definitions d
	ON ((l.classid::bigint OPERATOR(pg_catalog.-) rl_key_hash(d.name)::bigint
		OPERATOR(pg_catalog.+) 4294967296::bigint) OPERATOR(pg_catalog.%) 4294967296::bigint)
		OPERATOR(pg_catalog.>=) 16384::bigint
	AND ((l.classid::bigint OPERATOR(pg_catalog.-) rl_key_hash(d.name)::bigint
		OPERATOR(pg_catalog.+) 4294967296::bigint) OPERATOR(pg_catalog.%) 4294967296::bigint)
		OPERATOR(pg_catalog.<) 17384::bigint
WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'::text
	AND l.granted
	AND l.mode OPERATOR(pg_catalog.=) 'ExclusiveLock'::text
	AND l.objsubid OPERATOR(pg_catalog.=) 2::smallint
	AND l.database OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database
		WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
	AND d.kind OPERATOR(pg_catalog.=) 'concurrency'::text
GROUP BY d.name, d.capacity, l.objid;
COMMENT ON VIEW rl_permits IS
	'permits of concurrency limits held now by transactions (rl_acquire), per name and key hash, read from pg_locks';
COMMENT ON COLUMN rl_permits.permits IS 'the limit: permits per key';
COMMENT ON COLUMN rl_permits.key_hash IS 'rl_key_hash(key) of the key (pg_locks.objid); rl_key_hash(NULL) for the NULL key';
COMMENT ON COLUMN rl_permits.held IS 'permits held now';
COMMENT ON COLUMN rl_permits.pids IS 'the backends holding them';
REVOKE ALL ON rl_permits FROM PUBLIC;

CREATE VIEW rl_lease_status AS
SELECT l.id AS lease,
	l.name,
	NULLIF(l.key, ''::text) AS key,
	l.permits,
	l.acquired,
	l.expires,
	l.released,
	l.released IS NULL AND l.expires OPERATOR(pg_catalog.>) rl_now() AS held
FROM rl_leases l;
COMMENT ON VIEW rl_lease_status IS
	'every stored lease of a concurrency limit, and whether it holds its permits now';
COMMENT ON COLUMN rl_lease_status.key IS 'the key; NULL for the limit shared by the whole name';
COMMENT ON COLUMN rl_lease_status.released IS 'when rl_release freed it; NULL while not released';
COMMENT ON COLUMN rl_lease_status.held IS 'neither released nor expired: its permits count against the limit';
REVOKE ALL ON rl_lease_status FROM PUBLIC;

-- Every change to rl_definitions, by hand too, does what
-- _rl_concurrency_change says before it commits (a TRUNCATE, for every
-- concurrency limit).  After the row's change, so the row has passed the
-- table's checks.  SECURITY DEFINER: it calls the _rl_ helpers, which
-- only the owner may call.
CREATE FUNCTION rl_definitions_guard()
RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
	d record;
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		FOR d IN SELECT * FROM ONLY rl_definitions r
				WHERE r.kind IN ('concurrency', 'concurrency lease') ORDER BY r.name LOOP
			PERFORM _rl_concurrency_change(d.name, d.kind,
				_rl_slots_in_use(d.kind, d.capacity, d.max_reserved), NULL::text, NULL::text, NULL::float8);
		END LOOP;
		RETURN NULL;
	END IF;
	IF TG_LEVEL <> 'ROW' THEN
		RAISE EXCEPTION 'rl_definitions_guard() must fire for each row, or for TRUNCATE'
			USING ERRCODE = 'triggered_action_exception';
	END IF;
	IF TG_OP = 'INSERT' THEN
		PERFORM _rl_concurrency_change(NULL::text, NULL::text, NULL::float8, NEW.name, NEW.kind,
			_rl_slots_in_use(NEW.kind, NEW.capacity, NEW.max_reserved));
	ELSIF TG_OP = 'UPDATE' THEN
		PERFORM _rl_concurrency_change(OLD.name, OLD.kind,
			_rl_slots_in_use(OLD.kind, OLD.capacity, OLD.max_reserved), NEW.name, NEW.kind,
			_rl_slots_in_use(NEW.kind, NEW.capacity, NEW.max_reserved));
	ELSE
		PERFORM _rl_concurrency_change(OLD.name, OLD.kind,
			_rl_slots_in_use(OLD.kind, OLD.capacity, OLD.max_reserved), NULL::text, NULL::text, NULL::float8);
	END IF;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION rl_definitions_guard() IS
	'trigger on rl_definitions: a change that lowers, drops or replaces a concurrency limit waits for the transactions holding its permits';
REVOKE ALL ON FUNCTION rl_definitions_guard() FROM PUBLIC;
CREATE TRIGGER rl_definitions_guard
	AFTER INSERT OR UPDATE OR DELETE ON rl_definitions
	FOR EACH ROW EXECUTE FUNCTION rl_definitions_guard();
COMMENT ON TRIGGER rl_definitions_guard ON rl_definitions IS
	'keeps every concurrency limit within its permits across changes to its definition';
CREATE TRIGGER rl_definitions_guard_truncate
	BEFORE TRUNCATE ON rl_definitions
	FOR EACH STATEMENT EXECUTE FUNCTION rl_definitions_guard();
COMMENT ON TRIGGER rl_definitions_guard_truncate ON rl_definitions IS
	'a TRUNCATE drops every concurrency limit: it waits as rl_undefine would for each';
ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_guard;
ALTER TABLE rl_definitions ENABLE ALWAYS TRIGGER rl_definitions_guard_truncate;
