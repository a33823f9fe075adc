-- the sharded mix: rl_limit, rl_refund, rl_gc and rl_limit_all on a few keys of
-- limits of 2 to 4 shards; shards go missing (rl_gc) and are created again
\set n random(2,4)
\set k random(1,6)
\set cnt random(1,40)
SELECT value FROM rl_refund('m' || :n, :k::text, :cnt);
