"""ratelimit.py: a FastAPI (Starlette) middleware that takes a ratelimit
limit before each request's endpoint runs (psycopg 3, AsyncConnectionPool).

    from fastapi import Depends, FastAPI
    from psycopg_pool import AsyncConnectionPool
    from ratelimit import RateLimitMiddleware, get_db

    pool = AsyncConnectionPool("", open=False)  # PGHOST, PGDATABASE, ...
    app = FastAPI(on_startup=[pool.open], on_shutdown=[pool.close])
    app.add_middleware(RateLimitMiddleware, pool=pool,
                       name="api",              # or a function of the request
                       key=lambda req: req.headers.get("X-User") or req.client.host,
                       count=lambda req: 1)     # optional, default 1

    @app.post("/posts")
    async def create_post(post: Post, db=Depends(get_db)):
        await db.execute("INSERT INTO posts (body) VALUES (%s)", [post.text])
        return {"ok": True}

For each request: one connection from the pool, and rl_limit(name, key,
count) with rl_headers of its answer, committed at once in a transaction of
its own.  So a table limit's row is locked for that one statement, and a
user's requests do not wait for each other's endpoints.  A name function
that returns None lets the request through unlimited.
- Refused: 429 with Retry-After, RateLimit-Policy and RateLimit.
- Granted: the endpoint runs with the same connection, in a new
  transaction (request.state.db, or Depends(get_db)).  Once it has
  answered, the middleware commits, then sends the answer plus
  RateLimit-Policy and RateLimit; so no client sees a success whose
  transaction did not commit.
- The endpoint raises (or the commit fails): rollback, then rl_refund gives
  the request's tokens back in a transaction of its own (refund=False
  keeps them taken), and the exception goes on: 500, without the RateLimit
  fields.  An HTTPException is an answer, not a failure: FastAPI turns it
  into a response before the middleware sees it, and it commits.

in_transaction=True takes the limit inside the endpoint's transaction
instead, so a rollback returns the tokens; but then a table limit's row
stays locked until the endpoint ends, and one key's requests run one after
another.
"""

import contextlib
import logging

from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse

LIMIT_SQL = (
    "SELECT r.ok, rl_headers(%(name)s, r) "
    "FROM rl_limit(%(name)s, %(key)s::text, %(count)s::float8) AS r"
)
REFUND_SQL = "SELECT rl_refund(%(name)s, %(key)s::text, %(count)s::float8)"


def get_db(request: Request):
    """The request's connection, in its transaction: Depends(get_db)."""
    return request.state.db


def _pick(option, request, default=None):
    if option is None:
        return default
    return option(request) if callable(option) else option


class RateLimitMiddleware(BaseHTTPMiddleware):
    def __init__(self, app, pool, name, key=None, count=None, refund=True,
                 in_transaction=False):
        super().__init__(app)
        self.pool, self.name, self.key, self.count = pool, name, key, count
        self.refund, self.in_transaction = refund, in_transaction

    async def dispatch(self, request, call_next):
        name = _pick(self.name, request)
        if name is None:
            return await call_next(request)
        key = _pick(self.key, request)
        take = {"name": name, "key": None if key is None else str(key),
                "count": _pick(self.count, request, 1)}
        # The pool's context manager returns the connection at the end
        # (rolled back if anything is left open).
        async with self.pool.connection() as db:
            cursor = await db.execute(LIMIT_SQL, take)
            ok, fields = await cursor.fetchone()
            if not ok:
                await db.rollback()
                return JSONResponse(
                    {"error": "rate limit exceeded",
                     "retry_after": int(fields["Retry-After"])},
                    status_code=429, headers=fields)
            if not self.in_transaction:
                await db.commit()
            request.state.db = db
            try:
                # call_next returns once the endpoint has answered (the
                # body of a StreamingResponse excepted).
                response = await call_next(request)
                await db.commit()
            except BaseException:
                await db.rollback()
                if self.refund and not self.in_transaction:
                    await self._give_back(db, take)
                raise
            finally:
                request.state.db = None
        response.headers.update(fields)
        return response

    @staticmethod
    async def _give_back(db, take):
        # The work did not happen: give its tokens back.  A refund that
        # fails is not the request's error: the tokens stay taken.
        try:
            await db.execute(REFUND_SQL, take)
            await db.commit()
        except Exception:
            logging.getLogger(__name__).exception("ratelimit: refund failed")
            with contextlib.suppress(Exception):
                await db.rollback()
