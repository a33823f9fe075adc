"""ratelimit.py: a Flask decorator that takes a ratelimit limit before each
request's view runs (psycopg 3, psycopg_pool).

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

For each request: one connection from the pool, and rl_limit(name, key,
count) with rl_headers of its answer, committed at once in a transaction of
its own.  So a table limit's row is locked for that one statement, and a
user's requests do not wait for each other's views.
- Refused: 429 with Retry-After, RateLimit-Policy and RateLimit.
- Granted: the view runs on the same connection, in a new transaction
  (flask.g.db).  When it returns, the decorator commits, then answers with
  the view's response plus RateLimit-Policy and RateLimit; so no client
  sees a success whose transaction did not commit.  (A streamed body is
  produced after the commit.)
- The view raises (or the commit fails): rollback, then rl_refund gives the
  request's tokens back in a transaction of its own (refund=False keeps
  them taken), and the exception goes on to Flask: 500 (or the
  HTTPException's own status, for abort(404)), without the RateLimit
  fields.

in_transaction=True takes the limit inside the view's transaction instead,
so a rollback returns the tokens; but then a table limit's row stays locked
until the view ends, and one key's requests run one after another.
"""

import contextlib
import functools
import logging

from flask import g, jsonify, make_response, request

LIMIT_SQL = (
    "SELECT r.ok, rl_headers(%(name)s, r) "
    "FROM rl_limit(%(name)s, %(key)s::text, %(count)s::float8) AS r"
)
REFUND_SQL = "SELECT rl_refund(%(name)s, %(key)s::text, %(count)s::float8)"


def _pick(option, default=None):
    if option is None:
        return default
    return option(request) if callable(option) else option


class RateLimit:
    def __init__(self, pool, name, key=None, count=None, refund=True,
                 in_transaction=False):
        self.pool, self.name, self.key, self.count = pool, name, key, count
        self.refund, self.in_transaction = refund, in_transaction

    def __call__(self, view):
        @functools.wraps(view)
        def limited_view(*args, **kwargs):
            key = _pick(self.key)
            take = {"name": _pick(self.name),
                    "key": None if key is None else str(key),
                    "count": _pick(self.count, 1)}
            # The pool's context manager returns the connection at the end
            # (rolled back if anything is left open).
            with self.pool.connection() as db:
                ok, fields = db.execute(LIMIT_SQL, take).fetchone()
                if not ok:
                    db.rollback()
                    response = jsonify(error="rate limit exceeded",
                                       retry_after=int(fields["Retry-After"]))
                    response.status_code = 429
                    response.headers.update(fields)
                    return response
                if not self.in_transaction:
                    db.commit()
                g.db = db
                try:
                    response = make_response(view(*args, **kwargs))
                    db.commit()
                except BaseException:
                    db.rollback()
                    if self.refund and not self.in_transaction:
                        self._give_back(db, take)
                    raise
                finally:
                    g.pop("db", None)
            response.headers.update(fields)
            return response

        return limited_view

    @staticmethod
    def _give_back(db, take):
        # The work did not happen: give its tokens back.  A refund that
        # fails is not the request's error: the tokens stay taken.
        try:
            db.execute(REFUND_SQL, take)
            db.commit()
        except Exception:
            logging.getLogger(__name__).exception("ratelimit: refund failed")
            with contextlib.suppress(Exception):
                db.rollback()
