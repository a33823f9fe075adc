-- A fixed window take granted in one window and committed in a later one
-- counts in the window it was granted in: what the later window inherits
-- (tokens carried over by a capacity above the rate, a reservation's or a
-- penalty's deficit) is what the table store, which writes at grant time,
-- holds.  (Review of the memory store: the take used to be dropped.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS ratelimit;
RESET client_min_messages;
SET timezone = 'UTC';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define('cw_carry_mem', 'fixed window', 10, '1 hour', capacity => 20, start => '2026-01-01', storage => 'memory');
SELECT rl_define('cw_carry_tab', 'fixed window', 10, '1 hour', capacity => 20, start => '2026-01-01');
SELECT rl_define('cw_resv_mem', 'fixed window', 10, '1 hour', max_reserved => 10, start => '2026-01-01', storage => 'memory');
SELECT rl_define('cw_resv_tab', 'fixed window', 10, '1 hour', max_reserved => 10, start => '2026-01-01');
SELECT rl_define('cw_pen_mem', 'fixed window', 10, '1 hour', start => '2026-01-01', storage => 'memory');
SELECT rl_define('cw_pen_tab', 'fixed window', 10, '1 hour', start => '2026-01-01');
SELECT rl_define('cw_plain_mem', 'fixed window', 10, '1 hour', start => '2026-01-01', storage => 'memory');
SET ratelimit.now_override = '2026-01-01 00:59:59+00';
BEGIN;
SELECT ok, remaining FROM rl_limit('cw_carry_mem', 'k', 20);
SELECT ok, remaining FROM rl_limit('cw_carry_tab', 'k', 20);
SELECT ok, remaining FROM rl_limit('cw_resv_mem', 'k', 20, reserve => true);
SELECT ok, remaining FROM rl_limit('cw_resv_tab', 'k', 20, reserve => true);
SELECT value FROM rl_penalize('cw_pen_mem', 'k', 30);
SELECT value FROM rl_penalize('cw_pen_tab', 'k', 30);
SELECT ok, remaining FROM rl_limit('cw_plain_mem', 'k', 10);
SET ratelimit.now_override = '2026-01-01 01:00:01+00';
COMMIT;
-- each memory limit holds what its table twin holds; a plain window is full
SELECT n AS name, (rl_value(n, 'k')).value
  FROM unnest(ARRAY['cw_carry_mem', 'cw_carry_tab', 'cw_resv_mem', 'cw_resv_tab',
                    'cw_pen_mem', 'cw_pen_tab', 'cw_plain_mem']) n;
SELECT rl_undefine(n)
  FROM unnest(ARRAY['cw_carry_mem', 'cw_carry_tab', 'cw_resv_mem', 'cw_resv_tab',
                    'cw_pen_mem', 'cw_pen_tab', 'cw_plain_mem']) n;
