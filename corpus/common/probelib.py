"""An independent look at an idempotency layer, written without idemspec: standard library
only, one line per behaviour, ``<behaviour>: <what was seen>``. It judges nothing; it reports
statuses, counts and times so a reader can compare them with idemspec's verdicts.

Every corpus app serves the same provisioning API (see provisioning.py); ``probe(base, cfg)``
drives it. ``cfg`` may set ``header`` (the key header), ``ttl`` (seconds a lease is held, where
the library documents one), ``lock_probe_seconds`` (how long to watch an abandoned key) and
``session_cookie`` (send each principal's session cookie, for a library that caches per session).
"""

import concurrent.futures
import json
import threading
import time
import urllib.error
import urllib.request
import uuid


class Api:
    """A small HTTP client for the provisioning API."""

    def __init__(self, base: str, header: str, session_cookie: bool = False):
        self.base, self.header, self.session_cookie = base.rstrip("/"), header, session_cookie

    def call(self, method, path, who="alpha", key=None, body=None, timeout=10.0):
        """(status, json or None, headers); status None when no answer came within timeout."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {who}")
        if self.session_cookie:
            # A session id is 22 base64url characters; each principal has a fixed one.
            req.add_header("Cookie", f"session={(who * 22)[:20]}AA")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if key is not None:
            req.add_header(self.header, key)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw, status, headers = r.read(), r.status, r.headers
        except urllib.error.HTTPError as e:
            raw, status, headers = e.read(), e.code, e.headers
        except (TimeoutError, urllib.error.URLError, ConnectionError) as e:
            if isinstance(e, urllib.error.URLError) and not isinstance(e.reason, TimeoutError):
                if "timed out" not in str(e.reason):
                    raise
            return None, None, {}
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = raw.decode(errors="replace")[:80]
        return status, doc, headers

    def count(self, label, who="alpha"):
        """How many workers carry ``label``."""
        _, doc, _ = self.call("GET", f"/v1/workers?label={label}", who=who)
        return len(doc["items"])

    def stats(self):
        return self.call("GET", "/_stats")[1]


def _key():
    return str(uuid.uuid4())


def _label():
    return "p" + uuid.uuid4().hex[:10]


def _id(doc):
    return doc.get("id") if isinstance(doc, dict) else None


def probe(base: str, cfg: dict) -> None:
    """Prints one line per behaviour of the idempotency layer at ``base``."""
    api = Api(base, cfg.get("header", "Idempotency-Key"), cfg.get("session_cookie", False))
    out = lambda name, text: print(f"{name}: {text}", flush=True)  # noqa: E731

    # replay: the same request twice with one key.
    k, lab = _key(), _label()
    s1, d1, h1 = api.call("POST", "/v1/workers", key=k, body={"image": "small", "label": lab})
    s2, d2, h2 = api.call("POST", "/v1/workers", key=k, body={"image": "small", "label": lab})
    marks = [h for h in ("Idempotent-Replayed", "Idempotency-Replayed") if h2.get(h)]
    out("replay", f"{s1} then {s2}, same id {_id(d1) == _id(d2)}, body equal {d1 == d2}, "
        f"{api.count(lab)} created, replay header {marks or 'none'}, Location on the first "
        f"{h1.get('Location') is not None}")

    # mismatch: one key, a different body.
    k, lab = _key(), _label()
    api.call("POST", "/v1/workers", key=k, body={"image": "small", "label": lab})
    s, d, _ = api.call("POST", "/v1/workers", key=k, body={"image": "large", "label": lab})
    out("mismatch", f"changed body with the same key -> {s} {json.dumps(d)[:70]}, {api.count(lab)} created")

    # concurrent: 8 identical requests released together by a barrier.
    k, lab = _key(), _label()
    gate = threading.Barrier(8)

    def racer(_):
        gate.wait()
        return api.call("POST", "/v1/workers", key=k, body={"image": "small", "label": lab})

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        got = list(pool.map(racer, range(8)))
    ids = {_id(d) for s, d, _ in got if s and s < 300}
    out("concurrent", f"8 at once -> statuses {sorted(str(s) for s, _, _ in got)}, "
        f"{len(ids)} distinct ids, {api.count(lab)} created")

    # cross-tenant: a second principal sends the first one's key.
    k, lab = _key(), _label()
    _, da, _ = api.call("POST", "/v1/workers", key=k, body={"image": "small", "label": lab})
    sb, db, _ = api.call("POST", "/v1/workers", who="beta", key=k, body={"image": "small", "label": lab})
    out("cross-tenant", f"beta with alpha's key -> {sb}, gets alpha's worker {_id(da) == _id(db)}, "
        f"beta has {api.count(lab, who='beta')} created")

    # key validation: no key, an empty key, a 300-character key.
    lab = _label()
    sm = [api.call("POST", "/v1/workers", body={"image": "small", "label": lab})[0] for _ in range(2)]
    se, de, _ = api.call("POST", "/v1/workers", key="", body={"image": "small", "label": _label()})
    sl, _, _ = api.call("POST", "/v1/workers", key="k" * 300, body={"image": "small", "label": _label()})
    # A UTF-8 key, sent as raw bytes (http.client writes header values as Latin-1).
    raw = "clé-ключ".encode().decode("latin-1")
    lab2 = _label()
    sn, _, _ = api.call("POST", "/v1/workers", key=raw, body={"image": "small", "label": lab2})
    out("key-validation", f"no key twice -> {sm} ({api.count(lab)} created); empty key -> {se}; "
        f"300-char key -> {sl}; non-ASCII key -> {sn} ({api.count(lab2)} created)")

    # failed once: the same key after a 5xx.
    k, lab = _key(), _label()
    before = api.stats()["leases"]
    body = {"image": f"fail-once-{lab}", "label": lab}
    s1, _, _ = api.call("POST", "/v1/workers", key=k, body=body)
    s2, _, _ = api.call("POST", "/v1/workers", key=k, body=body)
    out("failed-once", f"{s1} then same key {s2}, {api.count(lab)} created, "
        f"leases +{api.stats()['leases'] - before}")

    # failed always: nothing is created, the retry is not locked out.
    k, lab = _key(), _label()
    body = {"image": "fail-always", "label": lab}
    s1, _, _ = api.call("POST", "/v1/workers", key=k, body=body)
    s2, _, _ = api.call("POST", "/v1/workers", key=k, body=body)
    out("failed-always", f"{s1} then same key {s2}, {api.count(lab)} created")

    # endpoint scope and the action: the create's key on the reboot, then one key twice.
    k, lab = _key(), _label()
    _, d, _ = api.call("POST", "/v1/workers", key=k, body={"image": "small", "label": lab})
    wid = _id(d)
    sa, da, _ = api.call("POST", f"/v1/workers/{wid}/reboot", key=k)
    out("endpoint-scope", f"create's key on the reboot -> {sa}, replayed the create {da == d}")
    k2 = _key()
    s1, _, _ = api.call("POST", f"/v1/workers/{wid}/reboot", key=k2)
    s2, _, _ = api.call("POST", f"/v1/workers/{wid}/reboot", key=k2)
    reboots = api.call("GET", f"/v1/workers/{wid}")[1]["reboots"]
    out("action-retry", f"reboot twice with one key -> {s1}, {s2}; reboots counted {reboots} in all")

    # delete: one key twice (the doom loop), then the create's key after the delete.
    k3 = _key()
    s1, _, _ = api.call("DELETE", f"/v1/workers/{wid}", key=k3)
    s2, _, _ = api.call("DELETE", f"/v1/workers/{wid}", key=k3)
    sr, dr, _ = api.call("POST", "/v1/workers", key=k, body={"image": "small", "label": lab})
    out("delete-retry", f"delete twice with one key -> {s1}, {s2}")
    out("replay-after-delete", f"create's key after the delete -> {sr}, same id {_id(dr) == wid}, "
        f"{api.count(lab)} now listed")

    # in flight: a second request while the first (3 s) still runs.
    k, lab = _key(), _label()
    body = {"image": "slow-3000ms", "label": lab}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        first = pool.submit(api.call, "POST", "/v1/workers", "alpha", k, body, 20)
        time.sleep(0.4)
        t = time.monotonic()
        s, _, h = api.call("POST", "/v1/workers", key=k, body=body, timeout=20)
        waited = time.monotonic() - t
        s1 = first.result()[0]
    out("in-flight", f"second while first runs -> {s} after {waited:.1f}s (Retry-After "
        f"{h.get('Retry-After')}), first -> {s1}, {api.count(lab)} created")

    # abandoned: the client gives up on a hanging request; when does its key work again?
    k, lab = _key(), _label()
    body = {"image": "hang", "label": lab}
    s0, _, _ = api.call("POST", "/v1/workers", key=k, body=body, timeout=1)
    t, seen, limit = time.monotonic(), [], cfg.get("lock_probe_seconds", 20)
    entered = api.stats()["started"]
    while time.monotonic() - t < limit:
        s, _, _ = api.call("POST", "/v1/workers", key=k, body=body, timeout=2)
        seen.append(str(s))
        if api.stats()["started"] > entered:
            break
        time.sleep(0.5)
    again = api.stats()["started"] > entered
    out("abandoned", f"client gave up on a hang ({s0}); retries saw {sorted(set(seen))}; "
        f"{'entered the handler again' if again else 'never entered the handler'} after "
        f"{time.monotonic() - t:.1f}s ({len(seen)} tries)")

    # slow handler past the documented lease, where there is one.
    ttl = cfg.get("ttl")
    if ttl:
        k, lab = _key(), _label()
        body = {"image": f"slow-{int((ttl + 3) * 1000)}ms", "label": lab}
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(api.call, "POST", "/v1/workers", "alpha", k, body, ttl + 20)
            time.sleep(ttl + 1)
            s, _, _ = api.call("POST", "/v1/workers", key=k, body=body, timeout=ttl + 20)
            s1 = first.result()[0]
        out("slow-past-ttl", f"retry {ttl + 1}s into a {ttl + 3}s handler -> {s}, first -> {s1}, "
            f"{api.count(lab)} created")
    else:
        out("slow-past-ttl", "no lease duration documented; not probed")

    # many retries of one request, one at a time.
    k, lab = _key(), _label()
    sts = {str(api.call("POST", "/v1/workers", key=k, body={"image": "small", "label": lab})[0]) for _ in range(20)}
    out("retries", f"20 sequential retries -> statuses {sorted(sts)}, {api.count(lab)} created")
