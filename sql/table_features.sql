-- Table features the executor honours: the direct path serves a call only
-- when UPDATE would do nothing more, and otherwise the call runs the SQL
-- statements, so that both paths (make test runs this suite with
-- ratelimit.direct_access on and off) answer and write the same, and
-- raise what UPDATE raises.
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('tf', 'token bucket', 10, '1 minute', max_reserved => 5);
SELECT ok, remaining FROM rl_limit('tf', 'k', 1);
CREATE FUNCTION tf_value() RETURNS float8 LANGUAGE sql
  AS $$ SELECT value FROM rate_limits WHERE name = 'tf' AND key = 'k' $$;

-- a CHECK constraint: a reservation would store a negative value
ALTER TABLE rate_limits ADD CONSTRAINT tf_no_debt CHECK (value >= 0);
SELECT ok FROM rl_limit('tf', 'k', 12, reserve => true);
SELECT tf_value();
SELECT ok, remaining FROM rl_limit('tf', 'k', 1);	-- allowed by the check
ALTER TABLE rate_limits DROP CONSTRAINT tf_no_debt;

-- a DO ALSO rule runs with every update
CREATE TABLE tf_log (key text, value float8);
CREATE RULE tf_log_updates AS ON UPDATE TO rate_limits
  DO ALSO INSERT INTO tf_log VALUES (new.key, new.value);
SELECT ok, remaining FROM rl_limit('tf', 'k', 1);
SELECT * FROM tf_log;
DROP RULE tf_log_updates ON rate_limits;

-- a DO INSTEAD NOTHING rule: a clear error, nothing consumed
CREATE RULE tf_no_updates AS ON UPDATE TO rate_limits DO INSTEAD NOTHING;
SELECT ok FROM rl_limit('tf', 'k', 1);
SELECT tf_value();
DROP RULE tf_no_updates ON rate_limits;

-- a publication of updates on a table without a replica identity (the
-- direct path raises the same error as UPDATE, which the SQL path reports
-- with the statement as its context: not shown)
\set SHOW_CONTEXT never
ALTER TABLE rate_limits REPLICA IDENTITY NOTHING;
SET client_min_messages = error;	-- wal_level may be too low to publish
CREATE PUBLICATION tf_pub FOR TABLE rate_limits;
RESET client_min_messages;
SELECT ok FROM rl_limit('tf', 'k', 1);
SELECT tf_value();
-- a refused call updates nothing, so the publication does not mind
SELECT ok FROM rl_limit('tf', 'k', 10);
DROP PUBLICATION tf_pub;
ALTER TABLE rate_limits REPLICA IDENTITY DEFAULT;

-- a publication row filter on a column outside the replica identity
SET client_min_messages = error;
CREATE PUBLICATION tf_filtered FOR TABLE rate_limits WHERE (value > 0);
RESET client_min_messages;
SELECT ok FROM rl_limit('tf', 'k', 1);
SELECT tf_value();
DROP PUBLICATION tf_filtered;
\set SHOW_CONTEXT errors

-- a primary key rebuilt in another column order: the direct path, whose
-- scan keys address the key's columns by position, gives way to SQL
ALTER TABLE rate_limits DROP CONSTRAINT rate_limits_pkey,
  ADD CONSTRAINT rate_limits_pkey PRIMARY KEY (shard, name, key);
SELECT ok, remaining FROM rl_limit('tf', 'k', 1);
SELECT ok, remaining FROM rl_limit('tf', 'other', 1);
SELECT tf_value();
ALTER TABLE rate_limits DROP CONSTRAINT rate_limits_pkey,
  ADD CONSTRAINT rate_limits_pkey PRIMARY KEY (name, key, shard);

-- a table inheriting from rate_limits: its rows are not the extension's,
-- on either path
CREATE TABLE tf_child () INHERITS (rate_limits);
INSERT INTO tf_child VALUES ('tf', 'k', 0, 0, '2026-01-01 00:00:00+00');
SELECT ok, remaining FROM rl_limit('tf', 'k', 1);
SELECT ok, remaining FROM rl_check('tf', 'k', 1);
SELECT value FROM rl_value('tf', 'k');
SELECT value FROM ONLY tf_child;
DROP TABLE tf_child;

-- with everything removed, calls are served again
SELECT ok, remaining FROM rl_limit('tf', 'k', 1);
SELECT tf_value();
DROP TABLE tf_log;
DROP FUNCTION tf_value();
SELECT rl_undefine('tf');
