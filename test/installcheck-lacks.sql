-- What the server make installcheck runs against lacks, one word a line:
-- "preload" when the memory store and the statistics cannot work
-- (PostgreSQL 15 and 16 without ratelimit in shared_preload_libraries),
-- "prepared" when it cannot prepare transactions.  Read by the Makefile.
SELECT 'preload'
WHERE current_setting('server_version_num')::int < 170000
  AND NOT EXISTS (
    SELECT FROM regexp_split_to_table(current_setting('shared_preload_libraries'), ',') AS l
    WHERE btrim(l, ' "') IN ('ratelimit', '$libdir/ratelimit'))
UNION ALL
SELECT 'prepared'
WHERE current_setting('max_prepared_transactions')::int = 0;
