#!/usr/bin/env python3
"""idemspec's example client: one create through a small retrying HTTP client (standard library).

    python3 create.py [--flaw NAME] [--key-in PLACE] [--require-https] [OPTION VALUE ...] [BASE_URL]
    python3 create.py --help

The base URL comes from the argument or from $IDEMSPEC_BASE_URL (idemspec sets it). The client
does what the article asks of a client: it makes the idempotency key once, before the first
attempt, and keeps it across every retry; it retries what may succeed later (a lost or reset
connection, a timeout, a 5xx, a 429, a 409 that says the request is still in flight) with
exponential backoff and jitter, waiting at least Retry-After; it never retries a mismatch or
another 4xx; and it gives up after MAX_ATTEMPTS with an error.

--require-https refuses a base URL that is not https:// (an error, exit 2, before any request),
as SDKs of APIs served only over TLS do; `idemspec client --tls` serves it. An https:// server's
certificate is always verified, against the default CA store of Python's ssl module, which
$SSL_CERT_FILE replaces (idemspec client --tls puts its run's CA there); a certificate that does not
verify ends the operation at once with the reason (it is not retried: it will not verify later).

--key-in PLACE puts the key where an API of another dialect takes it:

    header:NAME  the header NAME (default: header:Idempotency-Key)
    body         the JSON body's member "clientToken" (AWS's JSON protocol)
    form         a form body's field "ClientToken" (EC2's Query protocol)
    query        the query parameter "requestId" (Google Cloud)

A place with "+gzip" (form+gzip, body+gzip) sends the body compressed (Content-Encoding: gzip), as
some SDKs compress their Query-protocol bodies.

--backoff STRATEGY picks how the waits between attempts are drawn (each doubling from 250 ms, at
most 2 s, unless said otherwise):

    jittered     the doubling delay times a random factor from 0.25 to 1.75 (the default)
    full         a random delay from 0 to the doubling delay (AWS's "full jitter")
    equal        half the doubling delay, plus a random part up to the other half ("equal jitter")
    decorrelated a random delay from 250 ms to three times the previous one ("decorrelated jitter")
    tenpct       the doubling delay, plus or minus 10 %
    fixed        500 ms every time: no growth, no jitter (backoff WARNs)
    standard     a random delay from 0 to the doubling delay from 50 ms, three attempts in all (the
                 AWS SDKs' "standard" mode for a transient error: backoff FAILs, at once)
    immediate-first
                 the first retry at once, then 500 ms, 1 s: no jitter (urllib3's Retry with
                 backoff_factor 0.25: backoff WARNs)

--retries transport retries only a transport failure (a reset, a lost response, a timeout), never an
HTTP error (a 502, a 503, a 429, a 409 in flight), as SDKs built on urllib3's connect and read
retries do.
--retry-after-cap N waits at most N seconds for a Retry-After (as several SDKs cap it).
--long-retry-after POLICY says what it does with a Retry-After longer than 60 s (LONG_WAIT), the
ways the field handles one:

    give-up      stops and surfaces it: "the server asked to retry after 3600 s" (the default)
    sleep        waits it out, however long (an hour's Retry-After blocks its caller an hour)
    cap          waits 60 s of it, then retries
    ignore       retries after its own back-off, as if no Retry-After had been sent
--wait-header NAME[:ms] reads the wait from the header NAME instead of Retry-After (in
milliseconds with :ms), as SDKs of vendors with their own header do.
--base-delay S starts the doubling at S seconds instead of 0.25.
--persist-key FILE keeps the operation's key in FILE from before the first attempt until the
operation ends, so a run after a crash sends the crashed run's key (the article: keep it across
process restarts if the operation matters).

--speaks SHAPE makes it an SDK that understands only one vendor's answers, as idemspec's
`answers.preset` gives them: it reads its success from that vendor's body (JSON, or XML for EC2)
and decides whether to retry from the error's body alone (its type or code), never from the
status; an answer it cannot read stops it with an error, as it would stop a real SDK:

    problem          RFC 9457 problems, by the end of `type` (the default without --speaks reads
                     statuses instead)
    stripe-v1        {"error": {"type", "code"}}: idempotency_key_in_use, rate_limit, api_error retry
    aws-client-token AWS's JSON protocol, `__type` or X-Amzn-ErrorType: throttling codes,
                     PriorRequestNotComplete and the service's own unavailability retry
    aws-query        EC2's XML <Errors><Error><Code>, the same codes
    gcp-request-id   {"error": {"status"}}: ABORTED, RESOURCE_EXHAUSTED, UNAVAILABLE retry; the
                     success must be an Operation

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
    retries-4xx-with-retry-after
                         retries any 4xx that carries Retry-After (a 400 or 422 included), as
                         one published SDK does
"""

import gzip
import http.client
import json
import os
import random
import socket
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ElementTree

# Verifies every https:// server's certificate and name: the default CA store, which
# $SSL_CERT_FILE (or $SSL_CERT_DIR) replaces.
TLS = ssl.create_default_context()
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
    "retries-4xx-with-retry-after",
)
PLACES = ("body", "form", "query")
STRATEGIES = ("jittered", "full", "equal", "decorrelated", "tenpct", "fixed", "standard", "immediate-first")
# The AWS SDKs' "standard" retry mode: full jitter from 50 ms for a transient error, three attempts.
STANDARD_BASE, STANDARD_ATTEMPTS = 0.05, 3
LONG_WAIT = 60.0  # seconds: a Retry-After longer than this is handled by --long-retry-after
LONG_POLICIES = ("give-up", "sleep", "cap", "ignore")
SHAPES = ("problem", "stripe-v1", "aws-client-token", "aws-query", "gcp-request-id")
# The AWS error codes the AWS SDKs retry (throttling, a prior request still running, the
# service's own unavailability); any other code is final.
AWS_RETRY = {
    "PriorRequestNotComplete",
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "Unavailable",
    "InternalError",
    "InternalFailure",
}
AWS_MISMATCH = {"IdempotentParameterMismatch", "IdempotentParameterMismatchException"}


class GaveUp(Exception):
    """The operation failed for good; the message says why."""


def retryable(status, retry_after, flaw):
    """Whether an HTTP error may succeed when retried with the same key."""
    if status == 409:
        # A 409 with Retry-After is "still in flight": wait and retry. Without it, it is a
        # mismatch: the same request will get the same answer.
        return retry_after is not None or flaw == "retry-mismatch"
    return status in (408, 429, 500, 502, 503, 504)


class Unreadable(Exception):
    """An answer this client's vendor never gives: it cannot tell what happened."""


def read_json(raw):
    try:
        return json.loads(raw)
    except ValueError:
        raise Unreadable(f"not JSON: {raw[:80]!r}") from None


def read_xml(raw):
    try:
        return ElementTree.fromstring(raw)
    except ElementTree.ParseError:
        raise Unreadable(f"not XML: {raw[:80]!r}") from None


def xml_text(root, name):
    """The text of the first element called `name` (any namespace) under `root`."""
    found = root.find(f".//{{*}}{name}")
    if found is None:
        found = root.find(f".//{name}")
    return None if found is None else found.text


def parse_success(shape, raw):
    """The created resource as a dict, read as `shape`'s vendor writes its success."""
    if shape == "aws-query":
        root = read_xml(raw)
        if not root.tag.endswith("Response") or xml_text(root, "requestId") is None:
            raise Unreadable(f"no EC2 response: <{root.tag}>")
        return {"id": xml_text(root, "id")}
    body = read_json(raw)
    if not isinstance(body, dict):
        raise Unreadable(f"not a JSON object: {raw[:80]!r}")
    if shape == "gcp-request-id" and (body.get("kind") != "compute#operation" or "status" not in body):
        raise Unreadable(f"no Operation: {raw[:80]!r}")
    if shape == "stripe-v1" and "object" not in body:
        raise Unreadable(f"no Stripe object: {raw[:80]!r}")
    return body


def classify(shape, headers, raw):
    """What an error answer is, read from its body alone: "retry", "mismatch" or "final"."""
    if shape == "problem":
        kind = read_json(raw).get("type", "").rsplit("/", 1)[-1]
        if kind in ("request-in-progress", "rate-limited", "unavailable", "bad-gateway"):
            return "retry"
        if not kind:
            raise Unreadable(f"no problem type: {raw[:80]!r}")
        return "mismatch" if kind == "key-reused-with-different-request" else "final"
    if shape == "stripe-v1":
        error = read_json(raw).get("error")
        if not isinstance(error, dict) or "type" not in error:
            raise Unreadable(f"no Stripe error: {raw[:80]!r}")
        kind, code = error["type"], error.get("code")
        if code in ("idempotency_key_in_use", "rate_limit") or kind == "api_error":
            return "retry"
        return "mismatch" if kind == "idempotency_error" else "final"
    if shape in ("aws-client-token", "aws-query"):
        if shape == "aws-query":
            code = xml_text(read_xml(raw), "Code")
        else:
            code = headers.get("X-Amzn-ErrorType") or read_json(raw).get("__type")
            code = code and code.split(":")[0].rsplit("#", 1)[-1]
        if not code:
            raise Unreadable(f"no AWS error code: {raw[:80]!r}")
        if code in AWS_RETRY:
            return "retry"
        return "mismatch" if code in AWS_MISMATCH else "final"
    error = read_json(raw).get("error")
    if not isinstance(error, dict) or "status" not in error:
        raise Unreadable(f"no Google error: {raw[:80]!r}")
    if error["status"] in ("ABORTED", "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL"):
        return "retry"
    return "mismatch" if error["status"] == "ALREADY_EXISTS" else "final"


def backoff(failures, previous, strategy, base=BASE_DELAY):
    """The wait after the nth failure, drawn by `strategy` from `base` seconds; `previous` is the
    last wait."""
    doubling = min(max(MAX_DELAY, base), base * 2 ** (failures - 1))
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
    if strategy == "standard":
        return random.uniform(0, STANDARD_BASE * 2 ** (failures - 1))
    if strategy == "immediate-first":
        return 0.0 if failures == 1 else base * 2 ** (failures - 1)
    return doubling * random.uniform(0.25, 1.75)


def delay(failures, retry_after, flaw, previous=None, strategy="jittered", cap=None, base=BASE_DELAY):
    """How long to wait after the nth failure: the strategy's wait, at least `retry_after`
    seconds (up to `cap` of them, where the client caps it)."""
    if flaw == "no-backoff":
        return 0.0
    wait = backoff(failures, previous, strategy, base)
    if retry_after is not None:
        honoured = retry_after if cap is None else min(retry_after, cap)
        wait = max(wait, honoured)
    return wait


def long_wait(retry_after, policy, status):
    """The wait to honour after an answer that asked for `retry_after` seconds, by `policy` for
    one longer than LONG_WAIT (see --long-retry-after); GaveUp for "give-up"."""
    if retry_after is None or retry_after <= LONG_WAIT or policy == "sleep":
        return retry_after
    if policy == "give-up":
        raise GaveUp(
            f"HTTP {status}: the server asked to retry after {retry_after:.0f} s, longer than this "
            f"client waits ({LONG_WAIT:.0f} s); try again later"
        )
    return LONG_WAIT if policy == "cap" else None


def request_for(base_url, fields, key, key_in):
    """The create request with `key` (if any) where `key_in` says."""
    url = base_url.rstrip("/") + "/v1/workers"
    key_in, gzipped = (key_in[: -len("+gzip")], True) if key_in.endswith("+gzip") else (key_in, False)
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
    if gzipped:
        headers["Content-Encoding"] = "gzip"
        data = gzip.compress(data)
    return urllib.request.Request(url, data=data, headers=headers, method="POST")


def read_wait(headers, wait_header):
    """The wait an answer asks for, in seconds: `wait_header` is (name, divisor)."""
    name, divisor = wait_header
    value = headers.get(name)
    return float(value) / divisor if value is not None and value.isdigit() else None


def journaled_key(journal):
    """The key of an operation a crashed run left unfinished in `journal`, else a new one written
    there (and synced) before it is sent."""
    try:
        with open(journal) as f:
            kept = f.read().strip()
        if kept:
            return kept
    except FileNotFoundError:
        pass
    key = str(uuid.uuid4())
    with open(journal, "w") as f:
        f.write(key)
        f.flush()
        os.fsync(f.fileno())
    return key


def create(base_url, fields, flaw=None, key_in="header:Idempotency-Key", strategy="jittered", cap=None,
           shape=None, wait_header=("Retry-After", 1), base=BASE_DELAY, journal=None, long_policy="give-up",
           retries="any"):
    # The key is made once, before the first attempt: every retry below is the same operation.
    if flaw == "no-key":
        key = None
    elif journal is not None:
        key = journaled_key(journal)
    else:
        key = str(uuid.uuid4())
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
            with urllib.request.urlopen(request, timeout=TIMEOUT, context=TLS) as response:
                raw = response.read()
            if shape is None:
                return json.loads(raw)
            try:
                return parse_success(shape, raw)
            except Unreadable as e:
                raise GaveUp(f"could not read the {shape} success: {e}") from None
        except urllib.error.HTTPError as error:
            retry_after = read_wait(error.headers, wait_header)
            raw = error.read()
            if shape is None:
                again = retryable(error.code, retry_after, flaw)
            else:
                try:
                    kind = classify(shape, error.headers, raw)
                except Unreadable as e:
                    raise GaveUp(f"HTTP {error.code} that this {shape} client cannot read: {e}") from None
                again = kind == "retry" or (kind == "mismatch" and flaw == "retry-mismatch")
            if flaw == "retries-4xx-with-retry-after" and 400 <= error.code < 500 and retry_after is not None:
                again = True
            if retries == "transport":
                again = False
            if not again:
                raise GaveUp(f"HTTP {error.code}: {raw[:200]!r}") from None
            why = f"HTTP {error.code}"
            if flaw != "no-backoff":  # which ignores every Retry-After
                retry_after = long_wait(retry_after, long_policy, error.code)
        except (urllib.error.URLError, http.client.HTTPException, OSError, socket.timeout) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, ssl.SSLCertVerificationError):
                raise GaveUp(
                    f"the server's certificate did not verify: {reason.verify_message} (checked "
                    f"against the default CA store, which $SSL_CERT_FILE replaces)"
                ) from None
            why = f"{type(error).__name__}: {error}"
        failures += 1
        if flaw != "unbounded" and failures >= (STANDARD_ATTEMPTS if strategy == "standard" else MAX_ATTEMPTS):
            raise GaveUp(f"gave up after {failures} attempts; last: {why}")
        waited = delay(failures, retry_after, flaw, waited, strategy, cap, base)
        time.sleep(waited)


USAGE = "usage: create.py [--flaw NAME] [--key-in PLACE] [--require-https] [OPTION VALUE ...] BASE_URL " \
        "(or set IDEMSPEC_BASE_URL); create.py --help says more"


def main(argv):
    args = argv[1:]
    if "--help" in args or "-h" in args:
        print(__doc__)
        return 0
    flaw, key_in, strategy, cap, shape = None, "header:Idempotency-Key", "jittered", None, None
    wait_header, base, journal, require_https = ("Retry-After", 1), BASE_DELAY, None, False
    long_policy, retries = "give-up", "any"
    options = (["--flaw"], ["--key-in"], ["--backoff"], ["--retry-after-cap"], ["--speaks"],
               ["--wait-header"], ["--base-delay"], ["--persist-key"], ["--long-retry-after"],
               ["--retries"])
    while args[:1] == ["--require-https"] or (args[:1] in options and len(args) > 1):
        if args[0] == "--require-https":
            require_https, args = True, args[1:]
            continue
        option, value, args = args[0], args[1], args[2:]
        if option == "--long-retry-after":
            if value not in LONG_POLICIES:
                sys.exit(f"unknown --long-retry-after {value!r}; one of: {', '.join(LONG_POLICIES)}")
            long_policy = value
        elif option == "--persist-key":
            journal = value
        elif option == "--retries":
            if value not in ("any", "transport"):
                sys.exit(f"--retries takes any or transport, not {value!r}")
            retries = value
        elif option == "--wait-header":
            name, _, unit = value.partition(":")
            if not name or unit not in ("", "ms"):
                sys.exit(f"--wait-header takes NAME or NAME:ms, not {value!r}")
            wait_header = (name, 1000 if unit == "ms" else 1)
        elif option == "--base-delay":
            try:
                base = float(value)
            except ValueError:
                sys.exit(f"--base-delay takes seconds, not {value!r}")
        elif option == "--speaks":
            if value not in SHAPES:
                sys.exit(f"unknown answer shape {value!r}; one of: {', '.join(SHAPES)}")
            shape = value
        elif option == "--backoff":
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
            if value.removesuffix("+gzip") not in PLACES and not (value.startswith("header:") and len(value) > 7):
                sys.exit(f"unknown key place {value!r}; one of: header:NAME, {', '.join(PLACES)}")
            key_in = value
    base_url = args[0] if args else os.environ.get("IDEMSPEC_BASE_URL")
    if not base_url or base_url.startswith("-") or len(args) > 1:
        print(USAGE, file=sys.stderr)
        return 2
    if require_https and urllib.parse.urlsplit(base_url).scheme != "https":
        print(
            f"error: --require-https: the base URL {base_url!r} is not https://; this client talks "
            f"only TLS (serve it with `idemspec client --tls`)",
            file=sys.stderr,
        )
        return 2
    fields = {"image": "debian-12", "cpu": 2, "memory_gb": 1}
    try:
        worker = create(base_url, fields, flaw, key_in, strategy, cap, shape, wait_header, base, journal,
                        long_policy, retries)
    except GaveUp as error:
        forget(journal)
        print(f"error: {error}", file=sys.stderr)
        if flaw == "lingers":
            sys.stderr.flush()
            time.sleep(3600)
        return 1
    forget(journal)
    print(f"created {worker.get('id')}")
    return 0


def forget(journal):
    """The operation ended: its key is not to be sent again."""
    if journal is not None:
        try:
            os.remove(journal)
        except FileNotFoundError:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv))
