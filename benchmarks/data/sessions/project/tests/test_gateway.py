from billing.gateway import Charge, GatewayError, PaymentGatewayClient


class ScriptedTransport:
    """Answers each request with the next reply; an exception in the list is raised instead."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_charge_returns_the_gateway_charge():
    transport = ScriptedTransport({"id": "ch_1", "status": "captured"})
    charge = PaymentGatewayClient(transport, sleep=lambda s: None).charge("INV-1", 1200, "EUR")
    assert charge == Charge("ch_1", "captured", 1200)


def test_a_server_error_is_retried():
    transport = ScriptedTransport(GatewayError(503), {"id": "ch_2", "status": "captured"})
    charge = PaymentGatewayClient(transport, sleep=lambda s: None).charge("INV-2", 500, "EUR")
    assert charge.id == "ch_2"
    assert len(transport.requests) == 2
