-- the sharded mix: rl_limit, rl_refund, rl_gc and rl_limit_all on a few keys of
-- limits of 2 to 4 shards; shards go missing (rl_gc) and are created again
SELECT rl_gc();
