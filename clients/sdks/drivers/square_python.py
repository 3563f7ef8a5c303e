"""One Square payment create through squareup (v46, Fern-generated); the caller gives the
idempotency_key (a required body field) and the client retries by default (max_retries=2),
pointed at idemspec by base_url."""
import os
import uuid
from square import Square

client = Square(token="idemspec", base_url=os.environ["IDEMSPEC_BASE_URL"], timeout=2)
result = client.payments.create(
    source_id="cnon:card-nonce-ok",
    idempotency_key=str(uuid.uuid4()),
    amount_money={"amount": 100, "currency": "USD"},
)
print(result.payment.id)
