"""The provisioning API every Python app of the corpus serves, and its side-effect counter.

Workers live in a SQLite file (``$STATE_DIR/workers.db``) so a restart keeps them. A create
takes a lease (the side effect) and then records the worker; the image name chooses how the
handler behaves, as leasebroker's hypervisor does:

* ``fail-always``      the lease is released and the create answers 500, every time;
* ``fail-once-<tag>``  the first create of that image fails (lease released, 500), later ones work;
* ``slow-<N>ms``       the handler sleeps N milliseconds (at most 60 000) before creating;
* ``hang``             the handler sleeps for an hour before anything happens.

The counter endpoint (``GET /_stats``) reports the leases held, ``started`` (create
handlers entered), ``creates`` (those that created a worker) and ``actions`` (reboots performed).
"""

import asyncio
import json
import os
import re
import sqlite3
import threading
import uuid

STATE_DIR = os.environ.get("STATE_DIR", os.path.join(os.getcwd(), "state"))
SLOW = re.compile(r"^slow-(\d{1,5})ms$")
_lock = threading.Lock()


class Failure(Exception):
    """The handler failed part-way (the image asked for it): answer 500."""


def _db() -> sqlite3.Connection:
    os.makedirs(STATE_DIR, exist_ok=True)
    conn = sqlite3.connect(os.path.join(STATE_DIR, "workers.db"), timeout=10, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS workers (id TEXT PRIMARY KEY, owner TEXT, image TEXT,"
        " label TEXT, reboots INTEGER NOT NULL DEFAULT 0)"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS failed_once (image TEXT PRIMARY KEY)")
    conn.execute("CREATE TABLE IF NOT EXISTS stats (name TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    return conn


def _bump(conn: sqlite3.Connection, name: str, by: int) -> None:
    conn.execute(
        "INSERT INTO stats (name, n) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET n = n + ?",
        (name, by, by),
    )


def _row(r) -> dict:
    return {"id": r[0], "owner": r[1], "image": r[2], "label": r[3], "reboots": r[4]}


def parse_body(raw) -> dict:
    """The create body as a dict with string ``image`` and ``label``; ValueError otherwise."""
    body = json.loads(raw) if isinstance(raw, (bytes, str)) else raw
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    image, label = body.get("image"), body.get("label", "")
    if not isinstance(image, str) or not isinstance(label, str):
        raise ValueError("image and label must be strings")
    return {"image": image, "label": label}


def _before_create(image: str) -> float:
    """Seconds to sleep before the create runs, per the image's behaviour."""
    if image == "hang":
        return 3600.0
    m = SLOW.match(image)
    return min(int(m.group(1)), 60_000) / 1000 if m else 0.0


def _create_now(owner: str, image: str, label: str) -> dict:
    with _lock:
        conn = _db()
        try:
            _bump(conn, "leases", 1)
            fails = image == "fail-always"
            if image.startswith("fail-once-"):
                fails = conn.execute("INSERT OR IGNORE INTO failed_once VALUES (?)", (image,)).rowcount == 1
            if fails:
                _bump(conn, "leases", -1)  # the failed create gives its lease back
                raise Failure(f"image {image} failed to boot")
            wid = "w_" + uuid.uuid4().hex[:16]
            conn.execute("INSERT INTO workers VALUES (?, ?, ?, ?, 0)", (wid, owner, image, label))
            _bump(conn, "creates", 1)
            return _row((wid, owner, image, label, 0))
        finally:
            conn.close()


def _started() -> None:
    with _lock:
        conn = _db()
        try:
            _bump(conn, "started", 1)
        finally:
            conn.close()


async def create(owner: str, body: dict) -> dict:
    """Creates a worker for ``owner``; raises Failure for the failing images."""
    _started()
    await asyncio.sleep(_before_create(body["image"]))
    return _create_now(owner, body["image"], body["label"])


def create_sync(owner: str, body: dict) -> dict:
    """`create` for synchronous frameworks."""
    import time

    _started()
    time.sleep(_before_create(body["image"]))
    return _create_now(owner, body["image"], body["label"])


def list_workers(owner: str, label: str | None) -> list:
    """The owner's workers, those with ``label`` where one is given."""
    conn = _db()
    try:
        rows = conn.execute(
            "SELECT * FROM workers WHERE owner = ? AND (? IS NULL OR label = ?) ORDER BY rowid",
            (owner, label, label),
        ).fetchall()
        return [_row(r) for r in rows]
    finally:
        conn.close()


def get(owner: str, wid: str) -> dict | None:
    """The owner's worker ``wid``, or None."""
    conn = _db()
    try:
        r = conn.execute("SELECT * FROM workers WHERE owner = ? AND id = ?", (owner, wid)).fetchone()
        return _row(r) if r else None
    finally:
        conn.close()


def delete(owner: str, wid: str) -> bool:
    """Deletes the worker and gives back its lease; False when there is no such worker."""
    with _lock:
        conn = _db()
        try:
            gone = conn.execute("DELETE FROM workers WHERE owner = ? AND id = ?", (owner, wid)).rowcount
            if gone:
                _bump(conn, "leases", -1)
            return bool(gone)
        finally:
            conn.close()


def reboot(owner: str, wid: str) -> dict | None:
    """Counts one reboot of the worker; None when there is no such worker."""
    with _lock:
        conn = _db()
        try:
            n = conn.execute(
                "UPDATE workers SET reboots = reboots + 1 WHERE owner = ? AND id = ?", (owner, wid)
            ).rowcount
            if not n:
                return None
            _bump(conn, "actions", 1)
            return _row(conn.execute("SELECT * FROM workers WHERE id = ?", (wid,)).fetchone())
        finally:
            conn.close()


def stats() -> dict:
    """The side-effect counters."""
    conn = _db()
    try:
        got = dict(conn.execute("SELECT name, n FROM stats").fetchall())
        return {k: got.get(k, 0) for k in ("leases", "creates", "actions", "started")}
    finally:
        conn.close()


def principal(headers) -> str | None:
    """The caller named by ``Authorization: Bearer <name>``, or None."""
    auth = headers.get("authorization") or ""
    return auth[7:] if auth.startswith("Bearer ") and len(auth) > 7 else None
