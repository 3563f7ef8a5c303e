"""The provisioning API behind fastapi-idempotency's IdempotencyMiddleware, wired as its README
shows: the in-memory store (the default), and a ``scope`` naming the caller (the README's
"Identifying the caller" section), here the bearer principal. The lease is shortened (the
README's Configuration section) so a slow handler outlives it within a short run.
"""

from fastapi import FastAPI
from fastapi_idempotency import IdempotencyMiddleware, MemoryStore
from starlette.requests import Request

import fastapi_routes
import provisioning

app = FastAPI()


def scope(request: Request) -> str:
    who = provisioning.principal(request.headers)
    return f"principal:{who}" if who else f"ip:{request.client.host}"


app.add_middleware(
    IdempotencyMiddleware,
    store=MemoryStore(),
    scope=scope,
    lease_seconds=5,
    heartbeat_seconds=2,
)
fastapi_routes.install(app)
