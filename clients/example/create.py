#!/usr/bin/env python3
"""idemspec's example client: one create through a small retrying HTTP client (standard library).

    python3 create.py [--flaw NAME] [--key-in PLACE] [BASE_URL]

The base URL comes from the argument or from $IDEMSPEC_BASE_URL (idemspec sets it). The client
does what the article asks of a client: it makes the idempotency key once, before the first
attempt, and keeps it across every retry; it retries what may succeed later (a lost or reset
connection, a timeout, a 5xx, a 429, a 409 that says the request is still in flight) with
exponential backoff and jitter, waiting at least Retry-After; it never retries a mismatch or
another 4xx; and it gives up after MAX_ATTEMPTS with an error.

--key-in PLACE puts the key where an API of another dialect takes it:

    header:NAME  the header NAME (default: header:Idempotency-Key)
    body         the JSON body's member "clientToken" (AWS's JSON protocol)
    form         a form body's field "ClientToken" (EC2's Query protocol)
    query        the query parameter "requestId" (Google Cloud)

--backoff STRATEGY picks how the waits between attempts are drawn (each doubling from 250 ms, at
most 2 s, unless said otherwise):

    jittered     the doubling delay times a random factor from 0.25 to 1.75 (the default)
    full         a random delay from 0 to the doubling delay (AWS's "full jitter")
    equal        half the doubling delay, plus a random part up to the other half ("equal jitter")
    decorrelated a random delay from 250 ms to three times the previous one ("decorrelated jitter")
    tenpct       the doubling delay, plus or minus 10 %
    fixed        500 ms every time: no growth, no jitter (backoff WARNs)

--retry-after-cap N waits at most N seconds for a Retry-After (as several SDKs cap it).

--flaw NAME breaks one of those rules on purpose, so that idemspec's tests can show each client
check catching the defect it is about (and nothing else), as leasebroker's --flaw does for the
server checks:

    new-key-per-attempt  a fresh key inside the retry loop (the article's warning)
    retry-mismatch       every 409 is retried, the mismatch included
    no-backoff           retries at once and ignores Retry-After
    unbounded            never gives up
    no-key               sends no key at all (but still retries)
    key-dropped-on-retry sends the key on the first attempt only
    lingers              gives up as it should, then never exits (a socket or thread left open)
"""

import http.client
import json
import os
import random
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

MAX_ATTEMPTS = 4
BASE_DELAY = 0.25  # seconds, doubled after each failure
MAX_DELAY = 2.0
TIMEOUT = 1.0  # seconds per attempt
FLAWS = (
    "new-key-per-attempt",
    "retry-mismatch",
    "no-backoff",
    "unbounded",
    "no-key",
    "key-dropped-on-retry",
    "lingers",
)
PLACES = ("body", "form", "query")
STRATEGIES = ("jittered", "full", "equal", "decorrelated", "tenpct", "fixed")


class GaveUp(Exception):
    """The operation failed for good; the message says why."""


def retryable(status, retry_after, flaw):
    """Whether an HTTP error may succeed when retried with the same key."""
    if status == 409:
        # A 409 with Retry-After is "still in flight": wait and retry. Without it, it is a
        # mismatch: the same request will get the same answer.
        return retry_after is not None or flaw == "retry-mismatch"
    return status in (408, 429, 500, 502, 503, 504)


def backoff(failures, previous, strategy):
    """The wait after the nth failure, drawn by `strategy`; `previous` is the last wait."""
    doubling = min(MAX_DELAY, BASE_DELAY * 2 ** (failures - 1))
    if strategy == "full":
        return random.uniform(0, doubling)
    if strategy == "equal":
        return doubling / 2 + random.uniform(0, doubling / 2)
    if strategy == "decorrelated":
        return min(MAX_DELAY, random.uniform(BASE_DELAY, (previous or BASE_DELAY) * 3))
    if strategy == "tenpct":
        return doubling * random.uniform(0.9, 1.1)
    if strategy == "fixed":
        return 0.5
    return doubling * random.uniform(0.25, 1.75)


def delay(failures, retry_after, flaw, previous=None, strategy="jittered", cap=None):
    """How long to wait after the nth failure: the strategy's wait, at least Retry-After (up to
    `cap` seconds of it, where the client caps it)."""
    if flaw == "no-backoff":
        return 0.0
    wait = backoff(failures, previous, strategy)
    if retry_after is not None and retry_after.isdigit():
        honoured = float(retry_after) if cap is None else min(float(retry_after), cap)
        wait = max(wait, honoured)
    return wait


def request_for(base_url, fields, key, key_in):
    """The create request with `key` (if any) where `key_in` says."""
    url = base_url.rstrip("/") + "/v1/workers"
    fields = dict(fields)
    headers = {"Content-Type": "application/json"}
    if key is not None:
        if key_in == "body":
            fields["clientToken"] = key
        elif key_in == "form":
            fields["ClientToken"] = key
        elif key_in == "query":
            url += "?" + urllib.parse.urlencode({"requestId": key})
        else:
            headers[key_in.split(":", 1)[1]] = key
    if key_in == "form":
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        data = urllib.parse.urlencode(fields).encode()
    else:
        data = json.dumps(fields).encode()
    return urllib.request.Request(url, data=data, headers=headers, method="POST")


def create(base_url, fields, flaw=None, key_in="header:Idempotency-Key", strategy="jittered", cap=None):
    # The key is made once, before the first attempt: every retry below is the same operation.
    key = None if flaw == "no-key" else str(uuid.uuid4())
    failures = 0
    waited = None
    while True:
        if flaw == "new-key-per-attempt":
            key = str(uuid.uuid4())
        elif flaw == "key-dropped-on-retry" and failures > 0:
            key = None
        request = request_for(base_url, fields, key, key_in)
        retry_after = None
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            retry_after = error.headers.get("Retry-After")
            if not retryable(error.code, retry_after, flaw):
                raise GaveUp(f"HTTP {error.code}: {error.read()[:200]!r}") from None
            why = f"HTTP {error.code}"
        except (urllib.error.URLError, http.client.HTTPException, OSError, socket.timeout) as error:
            why = f"{type(error).__name__}: {error}"
        failures += 1
        if flaw != "unbounded" and failures >= MAX_ATTEMPTS:
            raise GaveUp(f"gave up after {failures} attempts; last: {why}")
        waited = delay(failures, retry_after, flaw, waited, strategy, cap)
        time.sleep(waited)


def main(argv):
    args = argv[1:]
    flaw, key_in, strategy, cap = None, "header:Idempotency-Key", "jittered", None
    options = (["--flaw"], ["--key-in"], ["--backoff"], ["--retry-after-cap"])
    while args[:1] in options and len(args) > 1:
        option, value, args = args[0], args[1], args[2:]
        if option == "--backoff":
            if value not in STRATEGIES:
                sys.exit(f"unknown backoff {value!r}; one of: {', '.join(STRATEGIES)}")
            strategy = value
        elif option == "--retry-after-cap":
            try:
                cap = float(value)
            except ValueError:
                sys.exit(f"--retry-after-cap takes seconds, not {value!r}")
        elif option == "--flaw":
            if value not in FLAWS:
                sys.exit(f"unknown flaw {value!r}; one of: {', '.join(FLAWS)}")
            flaw = value
        else:
            if value not in PLACES and not (value.startswith("header:") and len(value) > 7):
                sys.exit(f"unknown key place {value!r}; one of: header:NAME, {', '.join(PLACES)}")
            key_in = value
    base_url = args[0] if args else os.environ.get("IDEMSPEC_BASE_URL")
    if not base_url:
        sys.exit(
            "usage: create.py [--flaw NAME] [--key-in PLACE] BASE_URL (or set IDEMSPEC_BASE_URL)"
        )
    fields = {"image": "debian-12", "cpu": 2, "memory_gb": 1}
    try:
        worker = create(base_url, fields, flaw, key_in, strategy, cap)
    except GaveUp as error:
        print(f"error: {error}", file=sys.stderr)
        if flaw == "lingers":
            sys.stderr.flush()
            time.sleep(3600)
        return 1
    print(f"created {worker.get('id')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
