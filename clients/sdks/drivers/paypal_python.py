"""One PayPal order create through paypal-server-sdk (APIMatic-generated); the caller gives the
PayPal-Request-Id (the create's paypal_request_id option) and the client retries as its README's
Configuration table says: max_retries (default 0) on the methods in retry_methods (default GET,
PUT), so POST is added here. The SDK has no base-URL setting: the environment table it reads
(Configuration.environments) points at idemspec."""
import os
import uuid
from paypalserversdk.configuration import Configuration, Environment, Server
from paypalserversdk.http.auth.o_auth_2 import ClientCredentialsAuthCredentials
from paypalserversdk.models.amount_with_breakdown import AmountWithBreakdown
from paypalserversdk.models.checkout_payment_intent import CheckoutPaymentIntent
from paypalserversdk.models.order_request import OrderRequest
from paypalserversdk.models.purchase_unit_request import PurchaseUnitRequest
from paypalserversdk.paypal_serversdk_client import PaypalServersdkClient

Configuration.environments[Environment.SANDBOX][Server.DEFAULT] = os.environ["IDEMSPEC_BASE_URL"]
client = PaypalServersdkClient(
    client_credentials_auth_credentials=ClientCredentialsAuthCredentials(
        o_auth_client_id="idemspec", o_auth_client_secret="idemspec"
    ),
    environment=Environment.SANDBOX,
    timeout=2,
    max_retries=3,
    retry_methods=["GET", "PUT", "POST"],
)
response = client.orders.create_order(
    {
        "body": OrderRequest(
            intent=CheckoutPaymentIntent.CAPTURE,
            purchase_units=[PurchaseUnitRequest(amount=AmountWithBreakdown(currency_code="USD", value="10.00"))],
        ),
        "paypal_request_id": str(uuid.uuid4()),
        "prefer": "return=minimal",
    }
)
if response.status_code >= 400:  # ApiResponse: errors the SDK maps are raised, others returned
    raise SystemExit(f"error: {response.status_code} {response.text}")
print(response.body.id)
