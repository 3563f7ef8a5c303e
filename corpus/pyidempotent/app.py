"""The provisioning API with pyidempotent's ``@idempotent`` decorator on the create endpoint,
wired as its README's "FastAPI full example" shows (the 422 handler for IdempotencyConflict
included), with the MemoryBackend (README, "Backends").
"""

from fastapi import FastAPI, HTTPException
from pyidempotent import IdempotencyConflict, idempotent
from pyidempotent.backends.memory import MemoryBackend

import fastapi_routes

app = FastAPI()
backend = MemoryBackend()


@app.exception_handler(IdempotencyConflict)
async def conflict_handler(_, exc):
    raise HTTPException(422, "Idempotency-Key already used with different payload")


fastapi_routes.install(app, wrap_create=idempotent(backend=backend, key_header="Idempotency-Key"))
