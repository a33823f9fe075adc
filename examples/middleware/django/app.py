"""A tiny one-file Django project (settings included) using ratelimit.py,
with the routes of the Flask example (../flask/app.py): the limit 'api'
and the table hits are set up as said there.  /export costs 2 tokens; /slow waits 2 seconds;
/fail raises, and its write and its tokens are rolled back.

    PGHOST=... PGDATABASE=... PORT=8000 python3 app.py

PORT 0 (the default) picks a free port; the app prints the one it got.
"""

import os
import socketserver
import time
from wsgiref.simple_server import WSGIServer, make_server

from django.conf import settings

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    SECRET_KEY="an example, not a secret",
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[f"{__name__}.ApiRateLimit"],
    DATABASES={"default": {
        "ENGINE": "django.db.backends.postgresql",
        # connection settings from PG* variables
        "NAME": os.environ.get("PGDATABASE", "postgres"),
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
        "USER": os.environ.get("PGUSER", ""),
        # each view's writes in one transaction, rolled back if it raises
        "ATOMIC_REQUESTS": True,
    }},
)

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import connection  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402

from ratelimit import RateLimitMiddleware  # noqa: E402


def who(request):
    return request.headers.get("X-User") or request.META["REMOTE_ADDR"]


class ApiRateLimit(RateLimitMiddleware):
    name = "api"

    def key(self, request):
        return who(request)

    def count(self, request):
        return 2 if request.path == "/export" else 1


def hit(request):
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO hits (who, path) VALUES (%s, %s)",
                       [who(request), request.path])


def hello(request):
    hit(request)
    return JsonResponse({"hello": who(request)})


def export(request):
    hit(request)
    return JsonResponse({"exported": True})


def slow(request):
    hit(request)
    time.sleep(2)
    return JsonResponse({"slow": True})


def fail(request):
    hit(request)
    raise RuntimeError("the view failed")


urlpatterns = [path("hello", hello), path("export", export),
               path("slow", slow), path("fail", fail)]


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


if __name__ == "__main__":
    server = make_server("127.0.0.1", int(os.environ.get("PORT", "0")),
                         get_wsgi_application(),
                         server_class=ThreadingWSGIServer)
    print(f"listening on http://127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()
