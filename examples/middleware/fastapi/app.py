"""A tiny FastAPI app using ratelimit.py, with the routes
of the Flask example (../flask/app.py): the limit 'api' and the table hits
are set up as said there.  /export costs 2 tokens; /slow waits 2 seconds;
/fail raises, and its write and its tokens are rolled back.

    PGHOST=... PGDATABASE=... PORT=8000 python3 app.py

PORT 0 (the default) picks a free port; the app prints the one it got.
"""

import asyncio
import os
import socket

import uvicorn
from fastapi import Depends, FastAPI, Request
from psycopg_pool import AsyncConnectionPool

from ratelimit import RateLimitMiddleware, get_db

# settings from PG* variables; opened when the app starts
pool = AsyncConnectionPool("", min_size=1, max_size=10, open=False)
app = FastAPI(on_startup=[pool.open], on_shutdown=[pool.close])


def who(request):
    return request.headers.get("X-User") or request.client.host


app.add_middleware(RateLimitMiddleware, pool=pool, name="api", key=who,
                   count=lambda req: 2 if req.url.path == "/export" else 1)


async def hit(request, db):
    await db.execute("INSERT INTO hits (who, path) VALUES (%s, %s)",
                     [who(request), request.url.path])


@app.get("/hello")
async def hello(request: Request, db=Depends(get_db)):
    await hit(request, db)
    return {"hello": who(request)}


@app.get("/export")
async def export(request: Request, db=Depends(get_db)):
    await hit(request, db)
    return {"exported": True}


@app.get("/slow")
async def slow(request: Request, db=Depends(get_db)):
    await hit(request, db)
    await asyncio.sleep(2)
    return {"slow": True}


@app.get("/fail")
async def fail(request: Request, db=Depends(get_db)):
    await hit(request, db)
    raise RuntimeError("the endpoint failed")


if __name__ == "__main__":
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(os.environ.get("PORT", "0"))))
    sock.listen(128)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
