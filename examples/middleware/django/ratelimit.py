"""ratelimit.py: a Django middleware that takes a ratelimit limit before
each request's view runs, on Django's own database connection.

    # myapp/middleware.py
    from ratelimit import RateLimitMiddleware

    class ApiRateLimit(RateLimitMiddleware):
        name = "api"                            # or override limit_name()

        def key(self, request):                 # who is limited
            return request.user.pk or request.META["REMOTE_ADDR"]

        def count(self, request):               # optional, default 1
            return 1

    # settings.py
    MIDDLEWARE = [..., "myapp.middleware.ApiRateLimit"]
    DATABASES["default"]["ATOMIC_REQUESTS"] = True

For each request: rl_limit(name, key, count) with rl_headers of its
answer, committed at once in a transaction of its own.  So a table limit's
row is locked for that one statement, and a user's requests do not wait
for each other's views.  A limit_name() that returns None lets the request
through unlimited.
- Refused: 429 with Retry-After, RateLimit-Policy and RateLimit.
- Granted: the view runs; with ATOMIC_REQUESTS its writes are one
  transaction, committed when the view returns, before the response is
  sent.  The response gets RateLimit-Policy and RateLimit.
- The view raises (Http404 too): ATOMIC_REQUESTS rolls its writes back,
  then rl_refund gives the request's tokens back in a transaction of its
  own (refund = False keeps them taken), and Django answers as usual (500,
  404), without the RateLimit fields.

in_transaction = True takes the limit and runs the view in one
transaction.atomic() block instead, so a rollback returns the tokens; but
then a table limit's row stays locked until the view ends, and one key's
requests run one after another.
"""

import json
import logging

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.http import JsonResponse

# rl_headers as text: Django's PostgreSQL backend hands jsonb over as text
LIMIT_SQL = (
    "SELECT r.ok, rl_headers(%s, r)::text "
    "FROM rl_limit(%s, %s::text, %s::float8) AS r"
)
REFUND_SQL = "SELECT rl_refund(%s, %s::text, %s::float8)"


class RateLimitMiddleware:
    name = None
    refund = True
    in_transaction = False
    using = DEFAULT_DB_ALIAS

    def __init__(self, get_response):
        self.get_response = get_response

    def limit_name(self, request):
        return self.name

    def key(self, request):
        return None

    def count(self, request):
        return 1

    def __call__(self, request):
        name = self.limit_name(request)
        if name is None:
            return self.get_response(request)
        key = self.key(request)
        take = (name, None if key is None else str(key), self.count(request))
        if self.in_transaction:
            with transaction.atomic(using=self.using):
                ok, fields = self._take(take)
                if not ok:
                    return self._refused(fields)
                response = self.get_response(request)
                if getattr(request, "_ratelimit_failed", False):
                    transaction.set_rollback(True, using=self.using)
        else:
            with transaction.atomic(using=self.using):
                ok, fields = self._take(take)
            if not ok:
                return self._refused(fields)
            response = self.get_response(request)
            if getattr(request, "_ratelimit_failed", False) and self.refund:
                self._give_back(take)
        if not getattr(request, "_ratelimit_failed", False):
            for field, value in fields.items():
                response[field] = value
        return response

    def process_exception(self, request, exception):
        # The view raised: Django turns the exception into a response
        # (500, 404) after this; mark the request so that __call__ undoes
        # the take instead of reporting it.
        request._ratelimit_failed = True
        return None

    def _take(self, take):
        with connections[self.using].cursor() as cursor:
            cursor.execute(LIMIT_SQL, (take[0],) + take)
            ok, fields = cursor.fetchone()
        return ok, json.loads(fields)

    @staticmethod
    def _refused(fields):
        response = JsonResponse({"error": "rate limit exceeded",
                                 "retry_after": int(fields["Retry-After"])},
                                status=429)
        for field, value in fields.items():
            response[field] = value
        return response

    def _give_back(self, take):
        # The work did not happen: give its tokens back.  A refund that
        # fails is not the request's error: the tokens stay taken.
        try:
            with transaction.atomic(using=self.using):
                with connections[self.using].cursor() as cursor:
                    cursor.execute(REFUND_SQL, take)
        except Exception:
            logging.getLogger(__name__).exception("ratelimit: refund failed")
