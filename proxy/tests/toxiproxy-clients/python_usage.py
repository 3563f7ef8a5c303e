"""toxiproxy-python's documented usage, run against a Toxiproxy API server.

Usage: venv/bin/python python_usage.py HOST PORT UPSTREAM
UPSTREAM is a TCP echo server (host:port). Prints one `PASS call` line per client call that
behaved as against Toxiproxy, or `FAIL call: why`; exits 1 on the first failure.
"""
import socket
import sys
import time

from toxiproxy import Toxiproxy
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists


def check(call, ok, why=""):
    if not ok:
        print("FAIL %s: %s" % (call, why))
        sys.exit(1)
    print("PASS %s" % call)


def echo(listen, data=b"ping", timeout=5.0):
    host, port = listen.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return got
            got += chunk


def main():
    host, port, upstream = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    server = Toxiproxy()
    server.update_api_consumer(host, port)
    check("running()", server.running() is True)
    version = server.version()
    check("version()", version is not None and b"version" in version, repr(version))

    proxy = server.create(upstream=upstream, name="echo")
    check("create()", proxy.enabled is True and proxy.listen.startswith("127.0.0.1:"), proxy.listen)
    check("proxy relays", echo(proxy.listen) == b"ping")
    try:
        server.create(upstream=upstream, name="echo")
        check("create() twice raises ProxyExists", False, "no exception")
    except ProxyExists:
        check("create() twice raises ProxyExists", True)
    check("proxies()", list(server.proxies()) == ["echo"], server.proxies())
    check("get_proxy()", server.get_proxy("echo").upstream == upstream)
    check("get_proxy() of none", server.get_proxy("none") is None)

    proxy.add_toxic(type="latency", attributes={"latency": 200, "jitter": 0})
    toxics = proxy.toxics()
    check("add_toxic() / toxics()", list(toxics) == ["latency_downstream"], toxics)
    toxic = proxy.get_toxic("latency_downstream")
    check("get_toxic()", toxic.attributes == {"latency": 200, "jitter": 0}, toxic.attributes)
    started = time.monotonic()
    check("latency toxic delays", echo(proxy.listen) == b"ping" and time.monotonic() - started >= 0.2)
    try:
        proxy.add_toxic(type="latency")
        check("add_toxic() twice raises ProxyExists", False, "no exception")
    except ProxyExists:
        check("add_toxic() twice raises ProxyExists", True)
    try:
        proxy.add_toxic(type="melt")
        check("add_toxic() of a bad type raises InvalidToxic", False, "no exception")
    except InvalidToxic:
        check("add_toxic() of a bad type raises InvalidToxic", True)
    proxy.add_toxic(type="limit_data", stream="upstream", name="cap", toxicity=1.0,
                    attributes={"bytes": 2})
    check("limit_data toxic cuts", echo(proxy.listen, b"abcdef") in (b"", b"a", b"ab"))
    check("destroy_toxic()", proxy.destroy_toxic("cap") and proxy.get_toxic("cap") is None)
    try:
        proxy.destroy_toxic("cap")
        check("destroy_toxic() of none raises NotFound", False, "no exception")
    except NotFound:
        check("destroy_toxic() of none raises NotFound", True)

    with proxy.down():
        try:
            echo(proxy.listen, timeout=1.0)
            check("down() refuses connections", False, "connected")
        except OSError:
            check("down() refuses connections", True)
    check("enable() after down()", echo(proxy.listen) == b"ping")
    proxy.disable()
    check("disable()", server.get_proxy("echo").enabled is False)

    check("reset()", server.reset() is True)
    again = server.get_proxy("echo")
    check("reset() re-enables and clears toxics", again.enabled is True and again.toxics() == {})

    made = server.populate([
        {"name": "one", "upstream": upstream, "listen": "127.0.0.1:0"},
        {"name": "two", "upstream": upstream, "listen": "127.0.0.1:0"},
    ])
    check("populate()", sorted(p.name for p in made) == ["one", "two"])
    check("destroy()", server.destroy(server.get_proxy("one")) is True)
    server.destroy_all()
    check("destroy_all()", server.proxies() == {})


if __name__ == "__main__":
    main()
