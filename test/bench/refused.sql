-- one call per transaction on the one key of a limit that refuses every
-- call (1 token per 100 years, taken at setup); run.sh checks in rl_stats
-- that every call was refused
SELECT ok FROM rl_limit('refused');
