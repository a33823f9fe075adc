-- Messages per user: 10 a minute on average, with up to 20 saved up for a
-- burst, enforced by a trigger where the messages are written.
SET timezone = 'UTC';
SET intervalstyle = 'postgres';
SET ratelimit.now_override = '2026-01-01 09:00:00+00';
SELECT rl_define('sendMessage', 'token bucket', 10, '1 minute', capacity => 20);

CREATE TABLE messages (id serial, user_id int, body text);
CREATE TRIGGER limit_messages BEFORE INSERT ON messages
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('sendMessage', 'user_id');

-- a quiet user bursts 20 messages at once: all accepted
INSERT INTO messages (user_id, body) SELECT 1, 'hello ' || n FROM generate_series(1, 20) AS n;
-- the 21st is refused, and the insert fails
INSERT INTO messages (user_id, body) VALUES (1, 'one more');
-- another user is not affected
INSERT INTO messages (user_id, body) VALUES (2, 'hi');
SELECT user_id, count(*) FROM messages GROUP BY user_id ORDER BY user_id;
-- after 30 seconds, 5 tokens have come back
SET ratelimit.now_override = '2026-01-01 09:00:30+00';
SELECT * FROM rl_value('sendMessage', 1);
