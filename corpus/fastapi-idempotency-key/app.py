"""The provisioning API behind fastapi-idempotency-key's IdempotencyMiddleware, wired as its
README's "Global ASGI Middleware" quick start shows, with the persistent SQLiteBackend (README,
"Storage Backends") in the app's state folder.
"""

import os

from fastapi import FastAPI
from fastapi_idempotency_key import IdempotencyMiddleware, SQLiteBackend

import fastapi_routes
import provisioning

os.makedirs(provisioning.STATE_DIR, exist_ok=True)
app = FastAPI(title="Provisioning API")
app.add_middleware(
    IdempotencyMiddleware,
    backend=SQLiteBackend(database_path=os.path.join(provisioning.STATE_DIR, "idempotency.db")),
    header_name="Idempotency-Key",
    default_ttl=86400,
)
fastapi_routes.install(app)
