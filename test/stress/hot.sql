-- one call on the hot key per transaction; only grants are logged
INSERT INTO grants SELECT 1 FROM rl_limit('hot', 'k') WHERE ok;
