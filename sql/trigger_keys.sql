-- rl_enforce(): one value of the key column is one key, whatever the
-- session settings that change the type's text (DateStyle, TimeZone,
-- bytea_output, extra_float_digits...); types without such a form are
-- refused at the first firing.
SET timezone = 'UTC';
SET datestyle = 'ISO';
SET ratelimit.now_override = '2026-01-01 00:00:00+00';
SELECT rl_define(name, 'token bucket', 1, '1 day')
FROM unnest(ARRAY['once', 'orders', 'bookings', 'visits']) AS name;

-- One order a day: the same date inserted under four DateStyles.
CREATE TABLE orders (day date, style text);
CREATE TRIGGER one_a_day BEFORE INSERT ON orders
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('orders', 'day');
SELECT style, set_config('datestyle', style, false) IS NOT NULL AS set,
       error_of(format('INSERT INTO orders VALUES (make_date(2026, 3, 4), %L)', style)) AS insert
FROM unnest(ARRAY['ISO, MDY', 'SQL, DMY', 'Postgres, MDY', 'German']) WITH ORDINALITY AS s(style, n)
ORDER BY n;
SET datestyle = 'ISO';
SELECT day, style FROM orders;

-- One booking a slot: the same instant under two TimeZones.
CREATE TABLE bookings (slot timestamptz, zone text);
CREATE TRIGGER one_a_slot BEFORE INSERT ON bookings
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('bookings', 'slot');
SET timezone = 'UTC';
INSERT INTO bookings VALUES ('2026-03-04 10:00:00+00', 'UTC');
SET timezone = 'America/New_York';
INSERT INTO bookings VALUES ('2026-03-04 10:00:00+00', 'America/New_York');
SET timezone = 'UTC';
SELECT slot, zone FROM bookings;

-- A timestamp under two DateStyles.
CREATE TABLE visits (at timestamp);
CREATE TRIGGER one_a_visit BEFORE INSERT ON visits
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('visits', 'at');
SET datestyle = 'ISO';
INSERT INTO visits VALUES ('2026-03-04 10:00:00.5');
SET datestyle = 'SQL, DMY';
INSERT INTO visits VALUES ('2026-03-04 10:00:00.5');
SET datestyle = 'ISO';
SELECT count(*) AS visits FROM visits;

-- Infinities, fractional seconds and BC dates, inserted under other
-- settings, are keyed by the text of the default settings (ISO, UTC).
SET datestyle = 'SQL, DMY';
SET timezone = 'Asia/Kolkata';
INSERT INTO orders VALUES ('infinity'), ('-infinity'), ('0044-03-15 BC');
INSERT INTO bookings VALUES ('infinity'), ('-infinity'),
  ('2026-03-04 10:00:00.25+00'), ('0044-03-15 10:00:00+00 BC');
INSERT INTO visits VALUES ('infinity'), ('0044-03-15 10:00:00 BC');
SET datestyle = 'ISO';
SET timezone = 'UTC';
SELECT name, key FROM rate_limits
WHERE name IN ('orders', 'bookings', 'visits') ORDER BY name, key;
SELECT (SELECT array_agg(day::text ORDER BY day) FROM orders)
         = (SELECT array_agg(key ORDER BY key) FROM rate_limits WHERE name = 'orders') AS dates,
       (SELECT array_agg(slot::text ORDER BY slot) FROM bookings)
         = (SELECT array_agg(key ORDER BY key) FROM rate_limits WHERE name = 'bookings') AS timestamptzs,
       (SELECT array_agg(at::text ORDER BY at) FROM visits)
         = (SELECT array_agg(key ORDER BY key) FROM rate_limits WHERE name = 'visits') AS timestamps;

-- A domain over date is keyed as a date.
CREATE DOMAIN ship_day AS date CHECK (VALUE > '2000-01-01');
CREATE TABLE shipments (day ship_day);
CREATE TRIGGER one_a_day BEFORE INSERT ON shipments
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('once', 'day');
SET datestyle = 'German';
INSERT INTO shipments VALUES ('2026-05-06');
SET datestyle = 'Postgres, MDY';
INSERT INTO shipments VALUES ('2026-05-06');
SET datestyle = 'ISO';
SELECT day FROM shipments;
DELETE FROM rate_limits WHERE name = 'once';

-- numeric: equal values are one key; trailing fractional zeros go, except
-- up to a declared scale (the text of a numeric(p,s) column is unchanged).
CREATE TABLE amounts (n numeric, m numeric(10, 2));
CREATE TRIGGER by_n BEFORE INSERT ON amounts
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('once', 'n');
INSERT INTO amounts (n) VALUES (1.0);
INSERT INTO amounts (n) VALUES (1.00);
INSERT INTO amounts (n) VALUES (1);
INSERT INTO amounts (n) VALUES (1.50), (-2.000), (0.000), (100), ('NaN'), ('Infinity');
SELECT key FROM rate_limits WHERE name = 'once' ORDER BY key;
DELETE FROM rate_limits WHERE name = 'once';
DROP TRIGGER by_n ON amounts;
CREATE TRIGGER by_m BEFORE INSERT ON amounts
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('once', 'm');
INSERT INTO amounts (m) VALUES (1.5), (100), (-0.1), (7.125);
INSERT INTO amounts (m) VALUES (1.50);
SELECT key, key IN (SELECT m::text FROM amounts) AS as_before FROM rate_limits
WHERE name = 'once' ORDER BY key;
DELETE FROM rate_limits WHERE name = 'once';

-- bytea: hex, whatever bytea_output says.
CREATE TABLE blobs (b bytea);
CREATE TRIGGER one_a_blob BEFORE INSERT ON blobs
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('once', 'b');
SET bytea_output = 'escape';
INSERT INTO blobs VALUES ('\x41ff00');
SET bytea_output = 'hex';
INSERT INTO blobs VALUES ('\x41ff00');
SET bytea_output = 'escape';
INSERT INTO blobs VALUES ('\x41ff00');
RESET bytea_output;
SELECT count(*) AS blobs, (SELECT key FROM rate_limits WHERE name = 'once') AS key
FROM blobs;
DELETE FROM rate_limits WHERE name = 'once';

-- bpchar without a length: trailing blanks are not part of the value.
-- With a length every value is padded to it, and keyed as before.
CREATE TABLE codes (c bpchar, d char(4));
CREATE TRIGGER by_c BEFORE INSERT ON codes
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('once', 'c');
INSERT INTO codes (c) VALUES ('ab');
INSERT INTO codes (c) VALUES ('ab  ');
DROP TRIGGER by_c ON codes;
CREATE TRIGGER by_d BEFORE INSERT ON codes
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('once', 'd');
INSERT INTO codes (d) VALUES ('xy');
INSERT INTO codes (d) VALUES ('xy ');
SELECT '"' || key || '"' AS key FROM rate_limits WHERE name = 'once' ORDER BY key;
DELETE FROM rate_limits WHERE name = 'once';

-- Types whose text already is one per value keep it: integers, text,
-- uuid, boolean, enums, oid, name, "char".
CREATE TYPE mood AS ENUM ('calm', 'busy');
CREATE TABLE misc (i int2, u uuid, f boolean, e mood, o oid, n name, c "char");
CREATE FUNCTION enforce_on(col text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE result text;
BEGIN
  EXECUTE format('CREATE TRIGGER m BEFORE INSERT ON misc FOR EACH ROW
                  EXECUTE FUNCTION rl_enforce(%L, %L)', 'once', col);
  result := error_of($q$INSERT INTO misc VALUES (-7, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
                                                 true, 'busy', 42, 'nm', 'z')$q$);
  DROP TRIGGER m ON misc;
  RETURN result;
END $$;
SELECT col, enforce_on(col) FROM unnest(ARRAY['i', 'u', 'f', 'e', 'o', 'n', 'c']) AS col;
SELECT key FROM rate_limits WHERE name = 'once' ORDER BY key;
DELETE FROM rate_limits WHERE name = 'once';

-- Every other type is refused at the first firing, and nothing changes.
CREATE TYPE refused_row AS (x int);
CREATE TABLE refused (f float8, r real, i interval, t time, tz timetz,
                      m money, j jsonb, a int[], g int4range, w refused_row,
                      txt text);
CREATE FUNCTION refusal(col text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE result text;
BEGIN
  EXECUTE format('CREATE TRIGGER r BEFORE INSERT ON refused FOR EACH ROW
                  EXECUTE FUNCTION rl_enforce(%L, %L)', 'once', col);
  result := error_of($q$INSERT INTO refused (txt) VALUES ('x')$q$);
  DROP TRIGGER r ON refused;
  RETURN result;
END $$;
SELECT col, refusal(col) FROM unnest(ARRAY['f', 'r', 'i', 't', 'tz', 'm', 'j', 'a', 'g', 'w']) AS col;
CREATE DOMAIN seconds AS float8;
ALTER TABLE refused ADD COLUMN d seconds;
SELECT refusal('d');
-- text under a nondeterministic collation: 'Alice' = 'alice'
CREATE COLLATION ignore_case (provider = icu, locale = 'und-u-ks-level2',
                              deterministic = false);
ALTER TABLE refused ADD COLUMN ci text COLLATE ignore_case;
SELECT refusal('ci');
-- the whole message, with its detail and hint
CREATE TRIGGER r BEFORE INSERT ON refused
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('once', 'i');
INSERT INTO refused (i) VALUES ('1 day');
SELECT (SELECT count(*) FROM refused) AS rows, (SELECT count(*) FROM rate_limits WHERE name = 'once') AS state_rows;

-- A count column of a float type is read as its value, not as its text,
-- which extra_float_digits shortens (1.4 printed as "1"): 5 tokens grant
-- three rows of 1.4, not five.
DELETE FROM rate_limits WHERE name = 'once';
SELECT rl_define('five', 'token bucket', 5, '1 day');
CREATE TABLE weighted (who text, n float8);
CREATE TRIGGER by_n BEFORE INSERT ON weighted
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('five', 'who', 'n');
CREATE TABLE weighted_real (who text, n real);
CREATE TRIGGER by_n BEFORE INSERT ON weighted_real
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('five', 'who', 'n');
SET extra_float_digits = -15;
SELECT error_of($$INSERT INTO weighted VALUES ('w', 1.4)$$) AS float8_count,
       error_of($$INSERT INTO weighted_real VALUES ('r', 1.4)$$) AS real_count
FROM generate_series(1, 5);
RESET extra_float_digits;
SELECT who, count(*) AS granted, round((rl_value('five', who)).value::numeric, 6) AS tokens
FROM (SELECT who FROM weighted UNION ALL SELECT who FROM weighted_real) AS w
GROUP BY who ORDER BY who;

-- a generated key column: a BEFORE trigger would read it before it is
-- computed (NULL on INSERT), so it is refused; AFTER reads the value
SELECT rl_define('gen', 'fixed window', 1, '1 day', start => '2026-01-01');
CREATE TABLE signups (email text, norm text GENERATED ALWAYS AS (lower(email)) STORED);
CREATE TRIGGER by_norm BEFORE INSERT ON signups
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('gen', 'norm');
SELECT error_of($$INSERT INTO signups VALUES ('Ann@x')$$);
DROP TRIGGER by_norm ON signups;
CREATE TRIGGER by_norm AFTER INSERT OR UPDATE ON signups
  FOR EACH ROW EXECUTE FUNCTION rl_enforce('gen', 'norm');
SELECT error_of($$INSERT INTO signups VALUES ('Ann@x')$$) AS first,
       error_of($$INSERT INTO signups VALUES ('ANN@X')$$) AS same_person,
       error_of($$INSERT INTO signups VALUES ('bob@x')$$) AS another;
SELECT key FROM rate_limits WHERE name = 'gen' ORDER BY key;
DROP TABLE signups;
SELECT rl_undefine('gen');

DROP TABLE orders, bookings, visits, shipments, amounts, blobs, codes, misc,
  refused, weighted, weighted_real;
DROP FUNCTION enforce_on(text), refusal(text);
DROP DOMAIN ship_day, seconds;
DROP TYPE mood, refused_row;
DROP COLLATION ignore_case;
SELECT rl_undefine(name)
FROM unnest(ARRAY['once', 'orders', 'bookings', 'visits', 'five']) AS name;
