// toxiproxy-node-client's documented usage, run against a Toxiproxy API server.
//
// Usage: node node_usage.js http://HOST:PORT UPSTREAM
// UPSTREAM is a TCP echo server (host:port). Prints one `PASS call` line per client call that
// behaved as against Toxiproxy, or `FAIL call: why`; exits 1 on the first failure.
"use strict";
const net = require("net");
const path = require("path");
const { Toxiproxy } = require(path.join(__dirname, "node_modules", "toxiproxy-node-client"));

function check(call, ok, why = "") {
  if (!ok) {
    console.log(`FAIL ${call}: ${why}`);
    process.exit(1);
  }
  console.log(`PASS ${call}`);
}

function echo(listen, data = "ping") {
  const [host, port] = [listen.slice(0, listen.lastIndexOf(":")), Number(listen.slice(listen.lastIndexOf(":") + 1))];
  return new Promise((resolve, reject) => {
    const chunks = [];
    const s = net.connect(port, host, () => s.end(data));
    s.setTimeout(5000, () => s.destroy(new Error("timed out")));
    s.on("data", (c) => chunks.push(c));
    s.on("end", () => resolve(Buffer.concat(chunks).toString()));
    s.on("error", reject);
  });
}

async function rejects(promise) {
  try {
    await promise;
    return false;
  } catch (e) {
    return e.name === "Error" || e instanceof Error;
  }
}

async function main() {
  const [api, upstream] = process.argv.slice(2);
  const toxiproxy = new Toxiproxy(api);
  const version = await toxiproxy.getVersion();
  check("getVersion()", version.includes("version"), version);

  // The README's example: a proxy limited to 1000 KB/s.
  const proxy = await toxiproxy.createProxy({ listen: "localhost:0", name: "redis", upstream });
  check("createProxy()", proxy.enabled === true && proxy.listen.startsWith("127.0.0.1:"), proxy.listen);
  check("proxy relays", (await echo(proxy.listen)) === "ping");
  const toxic = await proxy.addToxic({ attributes: { rate: 1000 }, type: "bandwidth" });
  check("addToxic()", toxic.name === "bandwidth_downstream" && toxic.stream === "downstream" && toxic.toxicity === 1, JSON.stringify(toxic.toJson()));
  const got = await proxy.getToxic("bandwidth_downstream");
  check("getToxic()", got.attributes.rate === 1000, JSON.stringify(got.toJson()));
  const updated = await got.update({ attributes: { rate: 500 }, toxicity: 1 });
  check("Toxic.update()", updated.attributes.rate === 500, JSON.stringify(updated.toJson()));
  check("bandwidth toxic relays", (await echo(proxy.listen)) === "ping");
  check("addToxic() twice rejects", await rejects(proxy.addToxic({ attributes: { rate: 1 }, type: "bandwidth" })));
  await updated.remove();
  check("Toxic.remove()", await rejects(proxy.getToxic("bandwidth_downstream")));

  const latency = await proxy.addToxic({ type: "latency", stream: "upstream", attributes: { latency: 200, jitter: 10 } });
  const started = Date.now();
  check("latency toxic delays", (await echo(proxy.listen)) === "ping" && Date.now() - started >= 190);
  await latency.remove();

  const fetched = await toxiproxy.get("redis");
  check("get()", fetched.upstream === upstream && fetched.listen === proxy.listen);
  const all = await toxiproxy.getAll();
  check("getAll()", Object.keys(all).join() === "redis", Object.keys(all).join());
  const off = await proxy.update({ enabled: false, listen: proxy.listen, upstream });
  check("Proxy.update() disables", off.enabled === false);
  check("a disabled proxy refuses", await rejects(echo(proxy.listen)));
  const on = await off.update({ enabled: true, listen: proxy.listen, upstream });
  check("Proxy.update() enables", on.enabled === true && (await echo(on.listen)) === "ping");
  check("createProxy() twice rejects", await rejects(toxiproxy.createProxy({ listen: "localhost:0", name: "redis", upstream })));
  check("get() of none rejects", await rejects(toxiproxy.get("none")));

  const populated = await toxiproxy.populate([
    { listen: "localhost:0", name: "one", upstream },
    { listen: "localhost:0", name: "two", upstream },
  ]);
  check("populate()", Object.keys(populated).sort().join() === "one,two", Object.keys(populated).join());
  await on.addToxic({ type: "timeout", attributes: { timeout: 0 } });
  await toxiproxy.reset();
  const reset = await toxiproxy.get("redis");
  check("reset()", reset.enabled === true && (await echo(reset.listen)) === "ping");
  for (const p of Object.values(await toxiproxy.getAll())) {
    await p.remove();
  }
  check("Proxy.remove()", Object.keys(await toxiproxy.getAll()).length === 0);
}

main().catch((e) => {
  console.log(`FAIL unexpected: ${e.stack || e}`);
  process.exit(1);
});
