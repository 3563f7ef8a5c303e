"""One ECS task started through boto3's run_task (AWS JSON 1.1 protocol); botocore fills the
body's clientToken itself (the model's idempotencyToken) and retries in its standard mode
(boto3's documented retry configuration), pointed at idemspec by endpoint_url."""
import os
import boto3
from botocore.config import Config

ecs = boto3.client(
    "ecs",
    region_name="us-east-1",
    endpoint_url=os.environ["IDEMSPEC_BASE_URL"],
    aws_access_key_id="AKIDIDEMSPEC",
    aws_secret_access_key="idemspec",
    config=Config(
        retries={"mode": "standard"},  # 3 attempts in all (botocore/config.py:155-163)
        connect_timeout=2,
        read_timeout=2,
    ),
)
result = ecs.run_task(cluster="idemspec", taskDefinition="idemspec:1", count=1)
print(result["tasks"][0]["taskArn"])
