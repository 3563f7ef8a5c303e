"""Probes a running idemspec-proxy the way real clients meet it (docs/RELIABILITY.md, "proxy: ...").

    idemspec proxy --upstream http://127.0.0.1:9 --control 127.0.0.1:0 --header-read-timeout 2s
    python3 docs/probes/proxy.py PROXY_ADDR CONTROL_ADDR early 20 8388608
    python3 docs/probes/proxy.py PROXY_ADDR CONTROL_ADDR heads
    python3 docs/probes/proxy.py PROXY_ADDR CONTROL_ADDR slow 200 12

The upstream http://127.0.0.1:9 is down on purpose: nothing here needs one, and a POST with the
upstream down is one of the early answers probed.

early  N SIZE : N requests with a SIZE-byte body from http.client (writes the whole body, then
                reads): PUT /rules (control API, over its 2 MiB limit), POST /gw (a respond rule),
                POST /x with the upstream down (502). Counts what each client got.
heads         : each malformed head over a raw socket: status line, content type, body size.
slow  N SECS  : N connections sending a head one byte every 0.5 s; 10 normal requests meanwhile;
                when each slow connection ended and with what.
"""
import collections, http.client, json, socket, sys, threading, time

proxy, control = sys.argv[1], sys.argv[2]
def hp(a):
    h, p = a.rsplit(":", 1); return h, int(p)

def put_rules(rules):
    c = http.client.HTTPConnection(*hp(control), timeout=10)
    c.request("PUT", "/rules", body=json.dumps(rules), headers={"Content-Type": "application/json"})
    r = c.getresponse(); r.read(); c.close(); return r.status

def early(n, size):
    put_rules([{"name": "gw", "match": {"path": "/gw"}, "fault": {"respond": {"status": 503, "body": "injected"}}}])
    body = b"x" * size
    for name, addr, method, path in [("control PUT /rules", control, "PUT", "/rules"),
                                     ("proxy respond 503", proxy, "POST", "/gw"),
                                     ("proxy upstream down", proxy, "POST", "/x")]:
        got = collections.Counter()
        for _ in range(n):
            c = http.client.HTTPConnection(*hp(addr), timeout=10)
            try:
                c.request(method, path, body=body, headers={"Content-Type": "application/json"})
                r = c.getresponse(); r.read()
                got[f"{r.status} {r.getheader('content-type')}"] += 1
            except Exception as e:
                got[type(e).__name__] += 1
            finally:
                c.close()
        print(f"{name:22} {size:>9} B x{n}: {dict(got)}")
    put_rules([])

def raw(addr, data, read_timeout=5):
    s = socket.create_connection(hp(addr), timeout=read_timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            out += b
    except Exception as e:
        out += f"<{type(e).__name__}>".encode()
    s.close(); return out

def heads():
    many = b"GET / HTTP/1.1\r\nHost: t\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(500)) + b"\r\n"
    cases = [("bad header bytes", b"GET / HTTP/1.1\r\nHost: t\r\nX-Bad\xffName: 1\r\n\r\n"),
             ("100 KB URI", b"GET /" + b"a" * 102400 + b" HTTP/1.1\r\nHost: t\r\n\r\n"),
             ("500 headers", many),
             ("control char in value", b"GET / HTTP/1.1\r\nHost: t\r\nX-Ctl: a\x01b\r\n\r\n"),
             ("bad chunked body", b"POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n\r\n")]
    for where, addr in [("proxy", proxy), ("control", control)]:
        for name, data in cases:
            out = raw(addr, data)
            head, _, body = out.partition(b"\r\n\r\n")
            line = head.split(b"\r\n")[0].decode(errors="replace")
            ctype = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-type")]
            print(f"{where:8} {name:24} {line:40} {ctype[0].decode() if ctype else '-':40} body {len(body)} B")

def slow(n, secs):
    head = b"GET /never HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"1" * 200 + b"\r\n\r\n"
    results = []
    def one():
        s = socket.create_connection(hp(proxy)); s.settimeout(0.5); start = time.time(); got = b""
        for byte in head:
            try:
                s.send(bytes([byte]))
            except Exception:
                break
            try:
                b = s.recv(65536)
                if not b: break
                got += b
                break
            except socket.timeout:
                pass
            except Exception:
                break
            if time.time() - start > secs: break
        elapsed = time.time() - start
        if got:
            label = got.split(b"\r\n")[0].decode(errors="replace")
        elif elapsed <= secs:
            label = "<closed>"
        else:
            label = "<still open>"
        results.append((elapsed, label))
        s.close()
    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads: t.start()
    time.sleep(0.5)
    lat = []
    for i in range(10):
        t0 = time.time(); c = http.client.HTTPConnection(*hp(control), timeout=10)
        c.request("GET", "/rules"); c.getresponse().read(); c.close(); lat.append(time.time() - t0)
    for t in threads: t.join()
    ended = collections.Counter(r[1] for r in results)
    lasted = sorted(r[0] for r in results)
    print(f"{n} slow heads: {dict(ended)}; lasted min {lasted[0]:.2f} s, median {lasted[len(lasted)//2]:.2f} s, max {lasted[-1]:.2f} s")
    print(f"10 control requests meanwhile: max {max(lat)*1000:.1f} ms")

cmd = sys.argv[3]
if cmd == "early": early(int(sys.argv[4]), int(sys.argv[5]))
elif cmd == "heads": heads()
elif cmd == "slow": slow(int(sys.argv[4]), float(sys.argv[5]))
