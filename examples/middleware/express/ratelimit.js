// ratelimit.js: an Express wrapper that takes a ratelimit limit before
// each request's handler runs (node-postgres).
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
// For each request: one connection from the pool, and
// rl_limit(name, key, count) with rl_headers of its answer, in a
// transaction of its own (autocommit).  That transaction ends at once, so
// a table limit's row is locked for the one statement, and a user's
// requests do not wait for each other's handlers.
// - Refused: 429 with Retry-After, RateLimit-Policy and RateLimit.
// - Granted: BEGIN, and the handler runs on the same connection in that
//   transaction (its third argument, also req.db).  It returns the body
//   instead of sending it; the wrapper COMMITs, then sends the body
//   (res.send) with RateLimit-Policy and RateLimit, so no client sees a
//   success whose transaction did not commit.  The handler may set the
//   status and other headers on res, but must not send.
// - The handler throws (or COMMIT fails): ROLLBACK, then rl_refund gives
//   the request's tokens back in a transaction of its own (refund: false
//   keeps them taken), and the error goes to next(err): Express answers
//   500 (or err.status), without the RateLimit fields.
//
// inTransaction: true takes the limit inside the handler's transaction
// instead, so a rollback returns the tokens; but then a table limit's row
// stays locked until the handler ends, and one key's requests run one
// after another.

'use strict';

const LIMIT_SQL =
  'SELECT r.ok, rl_headers($1, r) AS fields ' +
  'FROM rl_limit($1, $2::text, $3::float8) AS r';
const REFUND_SQL = 'SELECT rl_refund($1, $2::text, $3::float8)';

function pick(option, req, fallback) {
  if (option === undefined) return fallback;
  return typeof option === 'function' ? option(req) : option;
}

function rateLimit({ pool, name, key, count, refund = true, inTransaction = false }) {
  return (handler) => async (req, res, next) => {
    let db;
    let open = false;
    let taken = null;
    try {
      const limitName = pick(name, req);
      const limitKey = pick(key, req, null);
      const args = [limitName, limitKey == null ? null : String(limitKey), pick(count, req, 1)];
      db = await pool.connect();
      if (inTransaction) {
        await db.query('BEGIN');
        open = true;
      }
      const { rows } = await db.query(LIMIT_SQL, args);
      const { ok, fields } = rows[0];
      if (!ok) {
        if (open) await db.query('ROLLBACK');
        open = false;
        res.set(fields).status(429).json({
          error: 'rate limit exceeded',
          retry_after: Number(fields['Retry-After']),
        });
        return;
      }
      if (!inTransaction) {
        taken = args;
        await db.query('BEGIN');
        open = true;
      }
      req.db = db;
      const body = await handler(req, res, db);
      await db.query('COMMIT');
      open = false;
      taken = null;
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
      if (taken && refund) {
        // The work did not happen: give its tokens back.  A refund that
        // fails is not the request's error: the tokens stay taken.
        try {
          await (db || pool).query(REFUND_SQL, taken);
        } catch (refundErr) {
          console.error('ratelimit: refund failed:', refundErr.message);
        }
      }
      next(err);
    } finally {
      if (db) db.release();
    }
  };
}

module.exports = { rateLimit };
