// A tiny app using ratelimit.js: every route below takes from the limit
// 'api' (define it first, e.g.
//   SELECT rl_define('api', 'token bucket', 1, '1 minute', capacity => 5);
// and CREATE TABLE hits (who text NOT NULL, path text NOT NULL);).
// The key is the X-User header when present, else the client address:
// a stand-in for an authenticated user id (never trust such a header from
// the open Internet).  /export costs 2 tokens; /slow writes, then waits 2
// seconds; /fail writes, then throws, and its write and its tokens are
// rolled back.
//
//   PGHOST=... PGDATABASE=... PORT=3000 node app.js
//
// PORT 0 (the default) picks a free port; the app prints the one it got.

'use strict';

const express = require('express');
const { Pool } = require('pg');
const { rateLimit } = require('./ratelimit');

const pool = new Pool({ max: 10 }); // connection settings from PG* variables
const app = express();

const limited = rateLimit({
  pool,
  name: 'api',
  key: (req) => req.get('X-User') || req.ip,
  count: (req) => (req.path === '/export' ? 2 : 1),
});

async function hit(req, db) {
  await db.query('INSERT INTO hits (who, path) VALUES ($1, $2)', [
    req.get('X-User') || req.ip,
    req.path,
  ]);
}

app.get('/hello', limited(async (req, res, db) => {
  await hit(req, db);
  return { hello: req.get('X-User') || req.ip };
}));

app.get('/export', limited(async (req, res, db) => {
  await hit(req, db);
  return { exported: true };
}));

app.get('/slow', limited(async (req, res, db) => {
  await hit(req, db);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  return { slow: true };
}));

app.get('/fail', limited(async (req, res, db) => {
  await hit(req, db);
  throw new Error('the handler failed');
}));

const server = app.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});

function stop() {
  server.close(() => pool.end().then(() => process.exit(0)));
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
