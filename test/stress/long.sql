-- one call per transaction on a random one of 200 keys of 480 bytes; with
-- fillfactor 100 most updates cannot stay on their page (not HOT)
\set k random(1, 200)
INSERT INTO long_calls SELECT :k FROM rl_limit('long', repeat(md5(:k::text), 15)) WHERE ok;
