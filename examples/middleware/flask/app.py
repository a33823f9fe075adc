"""A tiny app using ratelimit.py: every route below takes from the limit
'api' (define it first, e.g.
    SELECT rl_define('api', 'token bucket', 1, '1 minute', capacity => 5);
and CREATE TABLE hits (who text NOT NULL, path text NOT NULL);).
The key is the X-User header when present, else the client address: a
stand-in for an authenticated user id (never trust such a header from the
open Internet).  /export costs 2 tokens; /slow writes, then waits 2 seconds;
/fail writes, then raises, and its write and its tokens are rolled back.

    PGHOST=... PGDATABASE=... PORT=5000 python3 app.py

PORT 0 (the default) picks a free port; the app prints the one it got.
"""

import os
import time

from flask import Flask, g, request
from psycopg_pool import ConnectionPool
from werkzeug.serving import make_server

from ratelimit import RateLimit

app = Flask(__name__)
pool = ConnectionPool("", min_size=1, max_size=10)  # settings from PG* variables


def who():
    return request.headers.get("X-User") or request.remote_addr


limited = RateLimit(pool, name="api", key=lambda req: who(),
                    count=lambda req: 2 if req.path == "/export" else 1)


def hit():
    g.db.execute("INSERT INTO hits (who, path) VALUES (%s, %s)", [who(), request.path])


@app.get("/hello")
@limited
def hello():
    hit()
    return {"hello": who()}


@app.get("/export")
@limited
def export():
    hit()
    return {"exported": True}


@app.get("/slow")
@limited
def slow():
    hit()
    time.sleep(2)
    return {"slow": True}


@app.get("/fail")
@limited
def fail():
    hit()
    raise RuntimeError("the view failed")


if __name__ == "__main__":
    server = make_server("127.0.0.1", int(os.environ.get("PORT", "0")), app, threaded=True)
    print(f"listening on http://127.0.0.1:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    finally:
        pool.close()
