-- rl_settle's ledger under load: a call on an estimate on one of 8 keys of
-- a large or a small limit (:run names them: sd_big_RUN, sd_small_RUN),
-- settled on a random actual cost when granted (settle_call, settle.sh)
\set b random(0, 1)
\set k random(1, 8)
\set est random(1, 20)
\set act random(0, 99)
SELECT settle_call(CASE :b WHEN 0 THEN 'sd_big_:run' ELSE 'sd_small_:run' END, :k, :est, :act);
