"""One DigitalOcean droplet create through pydo; its azure-core pipeline retries by default,
pointed at idemspec by endpoint."""
import os
from pydo import Client

client = Client(token="idemspec", endpoint=os.environ["IDEMSPEC_BASE_URL"], timeout=2, retry_total=3)
droplet = client.droplets.create(
    body={"name": "idemspec", "region": "nyc3", "size": "s-1vcpu-1gb", "image": "debian-12-x64"},
    # azure-core refuses a bearer token over plain http; idemspec listens on http://127.0.0.1.
    enforce_https=False,
)
print(droplet["droplet"]["id"])
