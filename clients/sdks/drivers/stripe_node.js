// One Stripe customer create through stripe-node, retries on as its README says
// (maxNetworkRetries), pointed at idemspec by host/port/protocol.
const Stripe = require("stripe");
const base = new URL(process.env.IDEMSPEC_BASE_URL);
const stripe = new Stripe("sk_test_idemspec", {
  host: base.hostname,
  port: Number(base.port),
  protocol: "http",
  maxNetworkRetries: 3,
  timeout: 2000,
});
stripe.customers
  .create({ email: "idemspec@example.com" })
  .then((c) => console.log(c.id))
  .catch((e) => {
    console.error(`error: ${e.type}: ${e.message}`);
    process.exit(1);
  });
