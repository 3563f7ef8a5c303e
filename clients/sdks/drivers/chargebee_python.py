"""One Chargebee customer create through chargebee-python v3, retries enabled as its README
says (RetryConfig(enabled=True), which also makes it key every idempotent POST), pointed at
idemspec by its site/domain/protocol settings."""
import os
from urllib.parse import urlsplit
from chargebee import Chargebee
from chargebee.retry_config import RetryConfig

base = urlsplit(os.environ["IDEMSPEC_BASE_URL"])
host, _, rest = base.netloc.partition(".")  # "127" and "0.0.1:PORT": api_endpoint is
cb = Chargebee(                             # protocol://site.domain/api/v2
    api_key="test_idemspec",
    site=host,
    chargebee_domain=rest,
    protocol="http",
    connection_time_out=2,
    read_time_out=2,
)
# update_protocol("http") sets verify_ca_certs on the instance, but http_request.py reads the
# class attribute to pick the scheme (chargebee/http_request.py:83), so plain http needs this.
Chargebee.verify_ca_certs = False
cb.update_retry_config(RetryConfig(enabled=True, max_retries=3))
response = cb.Customer.create(cb.Customer.CreateParams(first_name="Idem", email="idemspec@example.com"))
print(response.customer.id)
