"""The provisioning API as a Django REST Framework project behind drf-idempotency, wired as its
README's Quick Start shows: "drf_idempotency" in INSTALLED_APPS, its IdempotencyMiddleware in
MIDDLEWARE, the DatabaseBackend, ``migrate``. LOCK_TTL_SECONDS is shortened to 5 (a documented
setting, drf_idempotency/settings.py) so a slow handler outlives the lock within a short run.
The database (idempotency records) is a SQLite file in the state folder, as are the workers.
"""

import os
import sys

import django
from django.conf import settings

import provisioning

os.makedirs(provisioning.STATE_DIR, exist_ok=True)
settings.configure(
    DEBUG=False,
    SECRET_KEY="corpus-only",
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.contenttypes", "rest_framework", "drf_idempotency"],
    MIDDLEWARE=["drf_idempotency.middleware.IdempotencyMiddleware"],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.path.join(provisioning.STATE_DIR, "django.db"),
            # Writers take the lock when their transaction begins (and wait for it), so
            # concurrent requests queue instead of failing with "database is locked".
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE",
                        "init_command": "PRAGMA journal_mode=WAL"},
        }
    },
    REST_FRAMEWORK={"DEFAULT_AUTHENTICATION_CLASSES": [], "DEFAULT_PERMISSION_CLASSES": [],
                    "UNAUTHENTICATED_USER": None},
    IDEMPOTENCY={"BACKEND": "drf_idempotency.backends.database.DatabaseBackend", "LOCK_TTL_SECONDS": 5},
    USE_TZ=True,
)
django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.urls import path  # noqa: E402
from rest_framework.decorators import api_view  # noqa: E402
from rest_framework.response import Response  # noqa: E402


def _owner(request):
    return provisioning.principal(request.headers)


def _unauthorised():
    return Response({"detail": "send Authorization: Bearer <principal>"}, status=401)


@api_view(["GET", "POST"])
def workers(request):
    who = _owner(request)
    if who is None:
        return _unauthorised()
    if request.method == "GET":
        return Response({"items": provisioning.list_workers(who, request.query_params.get("label"))})
    try:
        body = provisioning.parse_body(request.data)
    except ValueError as e:
        return Response({"detail": str(e)}, status=400)
    try:
        return Response(provisioning.create_sync(who, body), status=201)
    except provisioning.Failure as e:
        return Response({"detail": str(e)}, status=500)


@api_view(["GET", "DELETE"])
def worker(request, wid):
    who = _owner(request)
    if who is None:
        return _unauthorised()
    if request.method == "GET":
        got = provisioning.get(who, wid)
        return Response(got) if got else Response({"detail": "no such worker"}, status=404)
    if provisioning.delete(who, wid):
        return Response({"deleted": wid})
    return Response({"detail": "no such worker"}, status=404)


@api_view(["POST"])
def reboot(request, wid):
    who = _owner(request)
    if who is None:
        return _unauthorised()
    got = provisioning.reboot(who, wid)
    return Response(got) if got else Response({"detail": "no such worker"}, status=404)


@api_view(["GET"])
def stats(request):
    return Response(provisioning.stats())


urlpatterns = [
    path("v1/workers", workers),
    path("v1/workers/<str:wid>", worker),
    path("v1/workers/<str:wid>/reboot", reboot),
    path("_stats", stats),
    path("healthz", stats),
]
application = get_wsgi_application()

if __name__ == "__main__":
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
