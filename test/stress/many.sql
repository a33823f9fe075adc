-- one call on a random key among 1,000 per transaction; every call is logged
\set k random(1, 1000)
INSERT INTO calls SELECT :k, ok FROM rl_limit('many', :k);
