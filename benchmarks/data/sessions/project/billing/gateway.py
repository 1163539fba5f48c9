"""Client of the card payment gateway; its HTTP transport is injected."""

import time
from collections.abc import Callable
from dataclasses import dataclass


class GatewayError(Exception):
    """The gateway refused or failed a request."""

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


@dataclass
class Charge:
    id: str
    status: str  # "authorized" or "captured"
    amount_cents: int


class PaymentGatewayClient:
    def __init__(self, transport: Callable[[dict], dict], sleep: Callable[[float], None] = time.sleep) -> None:
        self.transport = transport
        self.sleep = sleep

    def charge(self, invoice_id: str, amount_cents: int, currency: str) -> Charge:
        request = {"invoice": invoice_id, "amount": amount_cents, "currency": currency}
        for attempt in range(3):
            try:
                reply = self.transport(request)
                return Charge(reply["id"], reply["status"], amount_cents)
            except GatewayError:
                if attempt == 2:
                    raise
                self.sleep(1.0)
        raise AssertionError("unreachable")
