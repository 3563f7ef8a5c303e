"""One Hetzner Cloud server create through hcloud-python; its Client retries by default
(documented in Client's docstring), pointed at idemspec by api_endpoint."""
import os
from hcloud import Client
from hcloud.images import Image
from hcloud.server_types import ServerType

client = Client(token="idemspec", api_endpoint=os.environ["IDEMSPEC_BASE_URL"], timeout=2)
created = client.servers.create(
    name="idemspec", server_type=ServerType(name="cx22"), image=Image(name="debian-12")
)
print(created.server.id)
