// ratelimit.js: an Express wrapper that takes a ratelimit limit in each
// request's own PostgreSQL transaction (node-postgres).
//
//   const { Pool } = require('pg');
//   const { rateLimit } = require('./ratelimit');
//   const pool = new Pool();                      // PGHOST, PGDATABASE, ...
//   const limited = rateLimit({
//     pool,
//     name: 'api',                                // or req => 'api'
//     key: req => req.user?.id ?? req.ip,         // who is limited
//     count: req => 1,                            // optional, default 1
//   });
//   app.post('/posts', limited(async (req, res, db) => {
//     await db.query('INSERT INTO posts (body) VALUES ($1)', [req.body.text]);
//     res.status(201);
//     return { ok: true };                        // sent after COMMIT
//   }));
//
// For each request: one connection from the pool, BEGIN, then
// rl_limit(name, key, count) and rl_headers of its answer.
// - Refused: ROLLBACK, 429 with Retry-After, RateLimit-Policy and RateLimit.
// - Granted: the handler runs on the same connection, in the same
//   transaction (its third argument, also req.db).  It returns the body
//   instead of sending it; the wrapper COMMITs, then sends the body
//   (res.send) with RateLimit-Policy and RateLimit, so no client sees a
//   success whose transaction did not commit.  The handler may set the
//   status and other headers on res, but must not send.
// - The handler throws (or COMMIT fails): ROLLBACK, which returns the
//   tokens the request took, and the error goes to next(err): Express
//   answers 500 (or err.status), without the RateLimit fields, since the
//   take they describe was undone.
//
// With a table limit, rl_limit holds the key's row until the transaction
// ends, so requests of one key run one after another; a memory limit
// (rl_define(..., storage => 'memory')) holds no row lock.

'use strict';

const LIMIT_SQL =
  'SELECT r.ok, rl_headers($1, r) AS fields ' +
  'FROM rl_limit($1, $2::text, $3::float8) AS r';

function pick(option, req, fallback) {
  if (option === undefined) return fallback;
  return typeof option === 'function' ? option(req) : option;
}

function rateLimit({ pool, name, key, count }) {
  return (handler) => async (req, res, next) => {
    let db;
    let open = false;
    try {
      const limitName = pick(name, req);
      const limitKey = pick(key, req, null);
      const limitCount = pick(count, req, 1);
      db = await pool.connect();
      await db.query('BEGIN');
      open = true;
      const { rows } = await db.query(LIMIT_SQL, [
        limitName,
        limitKey == null ? null : String(limitKey),
        limitCount,
      ]);
      const { ok, fields } = rows[0];
      if (!ok) {
        await db.query('ROLLBACK');
        open = false;
        res.set(fields).status(429).json({
          error: 'rate limit exceeded',
          retry_after: Number(fields['Retry-After']),
        });
        return;
      }
      req.db = db;
      const body = await handler(req, res, db);
      await db.query('COMMIT');
      open = false;
      res.set(fields);
      if (body === undefined) res.end();
      else res.send(body);
    } catch (err) {
      if (open) {
        // A failed ROLLBACK leaves the connection unusable: drop it.
        try {
          await db.query('ROLLBACK');
        } catch (rollbackErr) {
          db.release(rollbackErr);
          db = undefined;
        }
      }
      next(err);
    } finally {
      if (db) db.release();
    }
  };
}

module.exports = { rateLimit };
