"""The provisioning API as FastAPI routes, for the corpus apps built on FastAPI or Starlette.

``install(app, wrap_create=None)`` adds the routes; ``wrap_create`` is a decorator a library
puts on the create endpoint (route-level libraries), applied exactly as its README shows.
"""

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

import provisioning


class WorkerIn(BaseModel):
    """The create body."""

    image: str
    label: str = ""


def _owner(request: Request) -> str:
    who = provisioning.principal(request.headers)
    if who is None:
        raise HTTPException(401, "send Authorization: Bearer <principal>")
    return who


def install(app: FastAPI, wrap_create=None) -> None:
    """Adds the provisioning routes and the counter endpoint to ``app``."""

    async def create_worker(request: Request, worker: WorkerIn):
        try:
            return await provisioning.create(_owner(request), worker.model_dump())
        except provisioning.Failure as e:
            raise HTTPException(500, str(e)) from None

    if wrap_create is not None:
        create_worker = wrap_create(create_worker)
    app.post("/v1/workers", status_code=201)(create_worker)

    @app.get("/v1/workers")
    async def list_workers(request: Request, label: str | None = None):
        return {"items": provisioning.list_workers(_owner(request), label)}

    @app.get("/v1/workers/{wid}")
    async def get_worker(request: Request, wid: str):
        got = provisioning.get(_owner(request), wid)
        if got is None:
            raise HTTPException(404, "no such worker")
        return got

    @app.delete("/v1/workers/{wid}")
    async def delete_worker(request: Request, wid: str):
        if not provisioning.delete(_owner(request), wid):
            raise HTTPException(404, "no such worker")
        return JSONResponse({"deleted": wid})

    @app.post("/v1/workers/{wid}/reboot")
    async def reboot_worker(request: Request, wid: str):
        got = provisioning.reboot(_owner(request), wid)
        if got is None:
            raise HTTPException(404, "no such worker")
        return got

    @app.get("/_stats")
    async def stats():
        return provisioning.stats()

    @app.get("/healthz")
    async def healthz():
        return {"ok": True}
