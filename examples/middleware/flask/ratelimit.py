"""ratelimit.py: a Flask decorator that takes a ratelimit limit in each
request's own PostgreSQL transaction (psycopg 3, psycopg_pool).

    from psycopg_pool import ConnectionPool
    from ratelimit import RateLimit

    pool = ConnectionPool("")                   # PGHOST, PGDATABASE, ...
    limited = RateLimit(pool,
                        name="api",             # or a function of the request
                        key=lambda req: current_user_id() or req.remote_addr,
                        count=lambda req: 1)    # optional, default 1

    @app.post("/posts")
    @limited
    def create_post():
        g.db.execute("INSERT INTO posts (body) VALUES (%s)", [request.form["text"]])
        return {"ok": True}, 201

For each request: one connection from the pool, a transaction, then
rl_limit(name, key, count) and rl_headers of its answer.
- Refused: rollback, 429 with Retry-After, RateLimit-Policy and RateLimit.
- Granted: the view runs on the same connection, in the same transaction
  (flask.g.db).  When it returns, the decorator commits, then answers with
  the view's response plus RateLimit-Policy and RateLimit; so no client
  sees a success whose transaction did not commit.  (A streamed body is
  produced after the commit.)
- The view raises (or the commit fails): rollback, which returns the
  tokens the request took, and the exception goes on to Flask: 500 (or the
  HTTPException's own status, for abort(404)), without the RateLimit
  fields, since the take they describe was undone.

With a table limit, rl_limit holds the key's row until the transaction
ends, so requests of one key run one after another; a memory limit
(rl_define(..., storage => 'memory')) holds no row lock.
"""

import functools

from flask import g, jsonify, make_response, request

LIMIT_SQL = (
    "SELECT r.ok, rl_headers(%(name)s, r) "
    "FROM rl_limit(%(name)s, %(key)s::text, %(count)s::float8) AS r"
)


def _pick(option, default=None):
    if option is None:
        return default
    return option(request) if callable(option) else option


class RateLimit:
    def __init__(self, pool, name, key=None, count=None):
        self.pool, self.name, self.key, self.count = pool, name, key, count

    def __call__(self, view):
        @functools.wraps(view)
        def limited_view(*args, **kwargs):
            name = _pick(self.name)
            key = _pick(self.key)
            count = _pick(self.count, 1)
            # The pool's context manager returns the connection at the end
            # (rolled back if anything is left open).
            with self.pool.connection() as db:
                ok, fields = db.execute(LIMIT_SQL, {
                    "name": name,
                    "key": None if key is None else str(key),
                    "count": count,
                }).fetchone()
                if not ok:
                    db.rollback()
                    response = jsonify(error="rate limit exceeded",
                                       retry_after=int(fields["Retry-After"]))
                    response.status_code = 429
                    response.headers.update(fields)
                    return response
                g.db = db
                try:
                    response = make_response(view(*args, **kwargs))
                    db.commit()
                except BaseException:
                    db.rollback()
                    raise
                finally:
                    g.pop("db", None)
            response.headers.update(fields)
            return response

        return limited_view
