-- At most 2 exports running per user.  A short export runs inside one
-- transaction and holds a transaction-scoped permit (rl_acquire): it is
-- free again the moment the transaction commits, rolls back or its
-- backend dies.  A long export, handed to a worker after the request's
-- transaction commits, holds a lease instead (rl_lease), freed by
-- rl_release or, if the worker dies, by its ttl.
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 09:00:00+00';

SELECT rl_define_concurrency('exports', 2);
SELECT rl_define_concurrency('export_jobs', 2, leases => true);

-- Three requests of user 42 at once: two run, the third is turned away.
BEGIN;
SELECT rl_acquire('exports', 42) AS first_request;
SELECT rl_acquire('exports', 42) AS second_request;
SELECT rl_acquire('exports', 42) AS third_request;
-- ... each would run its export here ...
COMMIT;
-- committed: both permits are free again
SELECT rl_acquire('exports', 42) AS after_commit;

-- The same with an error instead of false, as an API handler wants it.
BEGIN;
SELECT rl_acquire('exports', 7, permits => 2);
SELECT rl_acquire('exports', 7, throws => true);
ROLLBACK;

-- Long exports: a lease of 30 minutes per job, released when it is done.
SELECT rl_lease('export_jobs', 42, 1, '30 minutes') AS job1 \gset
SELECT rl_lease('export_jobs', 42, 1, '30 minutes') AS job2 \gset
SELECT rl_lease('export_jobs', 42, 1, '30 minutes') IS NULL AS third_job_refused;
SELECT rl_release(:'job1') AS job1_done;
SELECT rl_lease('export_jobs', 42, 1, '30 minutes') IS NOT NULL AS third_job_runs;
-- job2's worker died without releasing: after 30 minutes its permit is free
SET ratelimit.now_override = '2026-01-01 09:30:00+00';
SELECT key, permits, expires, held FROM rl_lease_status ORDER BY expires, held;
SELECT rl_lease('export_jobs', 42, 1, '30 minutes') IS NOT NULL AS job2_slot_reused;
SET ratelimit.now_override = '2026-01-01 10:00:00+00';
-- rl_gc removes the expired leases (and any other idle state)
SELECT rl_gc() > 0 AS cleaned;
SELECT count(*) AS leases_left FROM rl_leases;
