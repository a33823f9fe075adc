-- the memory store: one call on the hot key per transaction; one in four
-- rolls back, one in four rolls back to a savepoint and commits, the rest
-- commit their grant into the ledger; a grant rolled back is counted by a
-- sequence, which no rollback undoes
\set r random(1, 4)
BEGIN;
\if :r = 1
SELECT nextval('mem_rolled_back') FROM rl_limit('mhot', 'k') WHERE ok;
ROLLBACK;
\elif :r = 2
SAVEPOINT s;
SELECT nextval('mem_rolled_back') FROM rl_limit('mhot', 'k') WHERE ok;
ROLLBACK TO SAVEPOINT s;
COMMIT;
\else
INSERT INTO mem_grants SELECT 1 FROM rl_limit('mhot', 'k') WHERE ok;
COMMIT;
\endif
