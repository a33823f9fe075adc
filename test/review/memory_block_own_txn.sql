-- Not fixed (divergence, not an over-admission in tokens): a memory limit
-- with block_for grants, inside the transaction whose refusal blocked the
-- key, a later call on that key: the block is pending until commit
-- (rl_memory_block_pending is read only by a second refusal, not by
-- consume_memory).  The table store refuses it (the row is blocked at
-- once).  The commit then applies the block, counted from the refusal,
-- and the later take after it: the key owes that token after the block.
-- Table: f.  Memory: t, then value -1 after the block.
-- psql -d r -f test/review/memory_block_own_txn.sql
SELECT rl_define('bf', 'token bucket', 2, '1 hour', storage => 'memory', block_for => '1 hour');
SELECT rl_define('bft', 'token bucket', 2, '1 hour', block_for => '1 hour');
BEGIN;
SELECT 'mem take1', ok FROM rl_limit('bf', 'own', 1);
SELECT 'mem refuse2 (blocks)', ok FROM rl_limit('bf', 'own', 2);
SELECT 'mem take1 after own block (f expected)', ok FROM rl_limit('bf', 'own', 1);
COMMIT;
SELECT 'mem after commit', value, ts > now() + '59 min' AS blocked FROM rl_value('bf', 'own');
BEGIN;
SELECT 'tbl take1', ok FROM rl_limit('bft', 'own', 1);
SELECT 'tbl refuse2 (blocks)', ok FROM rl_limit('bft', 'own', 2);
SELECT 'tbl take1 after own block', ok FROM rl_limit('bft', 'own', 1);
COMMIT;
