"""One Linode instance create through linode_api4; LinodeClient retries by default
(retry=True), pointed at idemspec by base_url."""
import os
from linode_api4 import LinodeClient

client = LinodeClient("idemspec", base_url=os.environ["IDEMSPEC_BASE_URL"])
instance = client.linode.instance_create(
    "g6-nanode-1", "us-east", image="linode/debian12", root_pass="idemspec-Root-pass-1"
)
print(instance.id)
