-- Idle-key cleanup: rl_gc deletes only rows that no later call can tell
-- from a missing row, in bounded batches.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-03-01 00:00:00+00';
SELECT rl_define('gc_bucket', 'token bucket', 6, '1 minute', max_reserved => 12);
SELECT rl_define('gc_window', 'fixed window', 5, '10 minutes', max_reserved => 100);

-- The replay.  One script of 300 calls at pinned, irregular times (gaps of
-- 1 to 23 s), over both kinds, two keys and the NULL key, with denials
-- and reservations; played twice from no state: as is, and with rl_gc()
-- before every call.  Every answer must be the same.
CREATE TABLE gc_calls AS
SELECT step,
       timestamptz '2026-03-01 00:00:00+00'
         + make_interval(secs => sum(1 + (step * 37) % 23) OVER (ORDER BY step)) AS at,
       CASE WHEN step % 3 = 0 THEN 'gc_window' ELSE 'gc_bucket' END AS name,
       (ARRAY['a', 'b', NULL])[1 + (step * 7) % 3] AS key,
       1 + (step * 11) % 5 AS count,
       step % 4 = 1 AS reserve
FROM generate_series(1, 300) AS step;

CREATE FUNCTION gc_replay(with_gc boolean)
RETURNS TABLE (step integer, ok boolean, retry_after interval,
               remaining float8, reset_after interval, removed bigint)
LANGUAGE plpgsql AS $$
DECLARE
  c record;
  r rl_result;
BEGIN
  DELETE FROM rate_limits WHERE name LIKE 'gc\_%';
  FOR c IN SELECT * FROM gc_calls ORDER BY gc_calls.step LOOP
    PERFORM set_config('ratelimit.now_override', c.at::text, true);
    removed := CASE WHEN with_gc THEN rl_gc() ELSE 0 END;
    r := rl_limit(c.name, c.key, c.count, reserve => c.reserve);
    step := c.step;
    ok := r.ok;
    retry_after := r.retry_after;
    remaining := r.remaining;
    reset_after := r.reset_after;
    RETURN NEXT;
  END LOOP;
END $$;

CREATE TABLE gc_plain AS SELECT * FROM gc_replay(false);
CREATE TABLE gc_with AS SELECT * FROM gc_replay(true);

-- no answer differs
SELECT p.*, w.*
FROM gc_plain p JOIN gc_with w USING (step)
WHERE (p.ok, p.retry_after, p.remaining, p.reset_after)
      IS DISTINCT FROM (w.ok, w.retry_after, w.remaining, w.reset_after);
-- and the replay was not idle: rows were deleted, calls denied, tokens reserved
SELECT count(*) AS calls,
       sum(removed) AS rows_removed,
       count(*) FILTER (WHERE NOT ok) AS denied,
       count(*) FILTER (WHERE ok AND remaining < 0) AS reservations
FROM gc_with;

-- What stays: a reservation outstanding, a window not yet over, a bucket
-- still refilling, a row locked by this transaction's own rl_limit is
-- still judged by its state, an inline limit still refilling (judged by the
-- policy its stored name carries), and a row left by 1.2 under the bare
-- name of an inline limit, whose policy is unknown.
RESET ratelimit.now_override;
SET ratelimit.now_override = '2026-04-01 00:00:00+00';
DELETE FROM rate_limits;
SELECT ok, remaining FROM rl_limit('gc_bucket', 'reserved', 10, reserve => true);
SELECT ok, remaining FROM rl_limit('gc_bucket', 'refilling', 1);
SELECT ok, remaining FROM rl_limit('gc_window', 'window', 1);
SELECT ok FROM rl_limit('inline', 'k', 1, config => rl_token_bucket(1, '1 day'));
INSERT INTO rate_limits VALUES ('legacy', 'k', 0, 0, '2026-04-01 00:00:00+00');
SET ratelimit.now_override = '2026-04-01 00:00:09.999999+00';
SELECT rl_gc();
SELECT name, key, value, idle FROM rl_status ORDER BY name, key;
-- 10 s after: the bucket that lost one token is full again, and goes
SET ratelimit.now_override = '2026-04-01 00:00:10+00';
SELECT rl_gc();
SELECT name, key FROM rate_limits ORDER BY name, key;
-- the reservation (-4 at 6/min) is paid back and full after 100 s
SET ratelimit.now_override = '2026-04-01 00:01:39.999999+00';
SELECT rl_gc();
SET ratelimit.now_override = '2026-04-01 00:01:40+00';
SELECT rl_gc();
-- a day later the inline limit is full and goes; the row left by 1.2 stays
SET ratelimit.now_override = '2026-04-02 00:00:00+00';
SELECT rl_gc();
SELECT name, key FROM rate_limits ORDER BY name, key;
DELETE FROM rate_limits WHERE name = 'legacy';

-- Batches: max_rows bounds the rows deleted per call.
SET ratelimit.now_override = '2026-05-01 00:00:00+00';
SELECT count(*) FROM (SELECT rl_limit('gc_bucket', 'batch' || i) FROM generate_series(1, 5) i) s;
SET ratelimit.now_override = '2026-05-01 01:00:00+00';
SELECT rl_gc(2) AS first, rl_gc(2) AS second, rl_gc(2) AS third, rl_gc(2) AS fourth;

-- Shards: each idle shard goes on its own.
SELECT rl_define('gc_sharded', 'token bucket', 8, '1 minute', shards => 4);
SET ratelimit.now_override = '2026-05-01 02:00:00+00';
SELECT sum(CASE WHEN ok THEN 1 ELSE 0 END) AS granted
FROM (SELECT (rl_limit('gc_sharded', NULL, 1)).ok FROM generate_series(1, 3)) s;
SELECT count(*) > 0 AS has_shards FROM rate_limits WHERE name = 'gc_sharded';
SET ratelimit.now_override = '2026-05-01 02:01:00+00';
SELECT rl_gc() > 0 AS removed;
SELECT count(*) AS left FROM rate_limits WHERE name = 'gc_sharded';

-- Bad input changes nothing.
\set VERBOSITY sqlstate
SELECT rl_gc(0);
SELECT rl_gc(-1);
SELECT rl_gc(NULL);
\set VERBOSITY default

-- Not for applications: rl_gc and rl_status belong to the owner.
CREATE ROLE regress_ratelimit_gc;
SET ROLE regress_ratelimit_gc;
SELECT rl_gc();
SELECT count(*) FROM rl_status;
RESET ROLE;
DROP ROLE regress_ratelimit_gc;

DROP TABLE gc_calls, gc_plain, gc_with;
DROP FUNCTION gc_replay(boolean);
SELECT rl_undefine('gc_bucket'), rl_undefine('gc_window'), rl_undefine('gc_sharded');
DELETE FROM rate_limits;
RESET ratelimit.now_override;
