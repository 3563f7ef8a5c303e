"""One Stripe customer create through stripe-python, retries on as its README says
(max_network_retries), pointed at idemspec by base_addresses."""
import os
import stripe

client = stripe.StripeClient(
    "sk_test_idemspec",
    base_addresses={"api": os.environ["IDEMSPEC_BASE_URL"]},
    max_network_retries=3,
    http_client=stripe.RequestsClient(timeout=2),
)
print(client.v1.customers.create(params={"email": "idemspec@example.com"}).id)
