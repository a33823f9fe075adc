-- one call per transaction on the one global limit (the NULL key); with
-- -M prepared, :limit is sent as a text parameter
SELECT ok FROM rl_limit(:limit);
