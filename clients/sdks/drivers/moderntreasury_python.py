"""One Modern Treasury counterparty create through modern-treasury (Stainless-generated); the
client makes an Idempotency-Key for every non-GET request and retries by default
(max_retries=2), pointed at idemspec by base_url."""
import os
from modern_treasury import ModernTreasury

client = ModernTreasury(
    api_key="idemspec",
    organization_id="idemspec-org",
    base_url=os.environ["IDEMSPEC_BASE_URL"],
    timeout=2,
)
counterparty = client.counterparties.create(name="idemspec")
print(counterparty.id)
