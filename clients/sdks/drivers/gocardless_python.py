"""One GoCardless payment create through gocardless_pro; the client keys every POST and
retries creates itself (BaseService(max_network_retries=3)), pointed at idemspec by base_url."""
import os
import gocardless_pro

client = gocardless_pro.Client(access_token="idemspec", base_url=os.environ["IDEMSPEC_BASE_URL"], timeout=2)
payment = client.payments.create(
    params={"amount": 1000, "currency": "GBP", "links": {"mandate": "MD000IDEMSPEC"}}
)
print(payment.id)
