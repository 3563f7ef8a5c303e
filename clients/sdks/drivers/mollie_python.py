"""One Mollie payment create through mollie-api-python; its client retries by default
(Client(retry=3)), pointed at idemspec by api_endpoint."""
import os
from mollie.api.client import Client

client = Client(api_endpoint=os.environ["IDEMSPEC_BASE_URL"], timeout=2)
client.set_api_key("test_idemspecidemspecidemspecidem")
payment = client.payments.create(
    {
        "amount": {"currency": "EUR", "value": "10.00"},
        "description": "idemspec",
        "redirectUrl": "https://example.invalid/return",
    }
)
print(payment.id)
