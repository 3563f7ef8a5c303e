"""One EC2 instance launch through boto3's run_instances; botocore fills ClientToken itself
(the model's idempotencyToken) and retries in its standard mode (boto3's documented retry
configuration), pointed at idemspec by endpoint_url."""
import os
import boto3
from botocore.config import Config

ec2 = boto3.client(
    "ec2",
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
reservation = ec2.run_instances(ImageId="ami-0123456789abcdef0", InstanceType="t3.micro", MinCount=1, MaxCount=1)
print(reservation["Instances"][0]["InstanceId"])
