"""The sessions `record.py` plays through the real Claude Code CLI: what the user types, what the scripted model
answers, and what each prompt is (labels for `benchmarks/sessions.py`).

Thirteen sessions over one small project (`project/`, a billing service), written to be ordinary: decisions the
agent stores with `remember` and decisions only said in conversation; the same questions asked back in other
words, several times, in later sessions; the same chore ("run the tests and fix what fails") in several
sessions; real test runs, reads and edits; acknowledgements; a correction that supersedes a decision; and one
long session compacted with `/compact`. A step is one `claude -p` call (the first of a session starts it, the
others resume it). `$ROOT` in a model turn is the project's folder; `@label` the id the ledger gave the
decision of that label when it was stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Turn = dict[str, Any]


@dataclass(frozen=True)
class Decision:
    """A decision, constraint or definition, as worded where it was made. `key` is a phrase any faithful excerpt
    of it shows; `stored`: kept by the agent's `remember` call (else only said, by `said_by`)."""

    wording: str
    key: str
    stored: bool
    kind: str = "decision"
    said_by: str | None = None  # user or assistant, for a decision only said
    supersedes: str | None = None


DECISIONS: dict[str, Decision] = {
    "retry-v1": Decision(
        "Payment gateway client retries: exponential backoff starting at 0.5 s and doubling, at most 4 attempts in all, "
        "only on HTTP 5xx responses and timeouts; a 4xx is never retried.",
        "at most 4 attempts",
        stored=True,
    ),
    "rounding": Decision(
        "Invoice tax is rounded half-even (banker's rounding) on each line item, then the lines are summed.",
        "half-even",
        stored=True,
    ),
    "money": Decision(
        "Amounts are integer cents everywhere in billing, never floats; Decimal only when parsing what a user typed.",
        "integer cents",
        stored=True,
        kind="constraint",
    ),
    "currency": Decision(
        "Only EUR and USD are supported: charge() and format_cents() refuse any other currency with UnsupportedCurrency, "
        "before anything is sent to the gateway.",
        "EUR and USD",
        stored=True,
        kind="constraint",
    ),
    "settled": Decision(
        "Settled: the gateway confirmed the capture (charge status captured). An authorized charge is not settled.",
        "confirmed the capture",
        stored=True,
        kind="definition",
    ),
    "idempotency": Decision(
        "Let's settle the idempotency key: every charge sends Idempotency-Key charge:<invoice id>, the same on every retry "
        "of that charge, so a retried charge can never bill twice. Add it to the request.",
        "charge:<invoice id>",
        stored=False,
        said_by="user",
    ),
    "late-fee": Decision(
        "We need late fees. We just decided with finance: the late fee is 1.5% of the outstanding amount per month, "
        "capped at €25, charged from day 31 after the due date.",
        "capped at €25",
        stored=False,
        said_by="user",
    ),
    "timeout": Decision(
        "Gateway calls time out after 10 seconds (connect plus read, per call), and a timeout is retried like a 5xx. "
        "I set TIMEOUT_SECONDS = 10 in billing/gateway.py and pass it with every request.",
        "10 seconds",
        stored=False,
        said_by="assistant",
    ),
    "retry-v2": Decision(
        "Payment gateway client retries: at most 3 attempts in all, backoff 0.5 s doubling with full jitter, on HTTP 5xx, "
        "timeouts and 429 (waiting the Retry-After it sends); never on another 4xx.",
        "at most 3 attempts",
        stored=True,
        supersedes="retry-v1",
    ),
}


@dataclass(frozen=True)
class Step:
    """One `claude -p` call: the prompt and the model's turns. `act`: ask (asks for a decision back: `asks`), state
    (states one: `says`), chore, work, ack, or compact (`/compact`)."""

    prompt: str
    turns: list[Turn]
    act: str
    asks: str | None = None
    says: str | None = None


@dataclass(frozen=True)
class Edit:
    """A change made between sessions by someone else (the user, a teammate), not by the agent."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Session:
    slug: str
    steps: list[Step]
    before: list[Edit] = field(default_factory=list)


# -- the model's turns -----------------------------------------------------------------------------------------


def say(text: str) -> Turn:
    return {"text": text}


def tool(name: str, **arguments: Any) -> Turn:
    return {"tool": name, "input": arguments}


def load_ledger() -> Turn:
    """Claude Code defers MCP tools: the model loads their schemas with ToolSearch before calling one."""
    return tool("ToolSearch", query="select:mcp__ledger__remember,mcp__ledger__recall")


def recall(query: str, **arguments: Any) -> Turn:
    return tool("mcp__ledger__recall", query=query, **arguments)


def remember(label: str, **arguments: Any) -> Turn:
    decision = DECISIONS[label]
    extra = {"supersedes": f"@{decision.supersedes}"} if decision.supersedes else {}
    return tool("mcp__ledger__remember", text=decision.wording, kind=decision.kind, **extra, **arguments)


def pytest() -> Turn:
    return tool("Bash", command="python -m pytest -q -p no:cacheprovider", description="Run the test suite")


def read(path: str) -> Turn:
    return tool("Read", file_path=f"$ROOT/{path}")


def edit(path: str, old: str, new: str) -> Turn:
    return tool("Edit", file_path=f"$ROOT/{path}", old_string=old, new_string=new)


def append(path: str, last: str, added: str) -> Turn:
    """An edit that adds `added` after the file's last line `last`."""
    return edit(path, last, last + added)


GATEWAY, GATEWAY_TESTS = "billing/gateway.py", "tests/test_gateway.py"
INVOICES, INVOICE_TESTS = "billing/invoices.py", "tests/test_invoices.py"
RETRY_QUESTION = "Remind me, what is our retry policy for the payment gateway client?"
CHORE = "run the tests and fix what fails"


def compact(summary: str) -> Step:
    """`/compact`: Claude Code asks the model (tools offered) for an <analysis> and a <summary>."""
    return Step("/compact", [say(f"<analysis>The user worked on billing.</analysis>\n<summary>{summary}</summary>")], "compact")


# -- the sessions ----------------------------------------------------------------------------------------------

SESSIONS: list[Session] = [
    Session("01-retry-policy", [
        Step(
            "The gateway client retries every error three times with a fixed one-second sleep. Let's decide the retry "
            "policy for the payment gateway client properly.",
            [
                load_ledger(),
                recall("payment gateway client retry policy"),
                read(GATEWAY),
                say(
                    "Nothing is recorded about retries yet, and `charge()` retries every GatewayError, 4xx included, with a "
                    "fixed 1 s sleep. Proposal: exponential backoff starting at 0.5 s and doubling, at most 4 attempts in "
                    "all, only on 5xx responses and timeouts; a 4xx is a caller error and is never retried. Shall I record "
                    "it and implement it?"
                ),
            ],
            "work",
        ),
        Step(
            "Yes, go with that. Record it and implement it.",
            [
                load_ledger(),
                remember("retry-v1"),
                read(GATEWAY),
                edit(
                    GATEWAY,
                    "from dataclasses import dataclass\n",
                    "from dataclasses import dataclass\n\nMAX_ATTEMPTS = 4  # in all, the first try included\n"
                    "FIRST_DELAY_SECONDS = 0.5\n",
                ),
                edit(
                    GATEWAY,
                    "        for attempt in range(3):\n"
                    "            try:\n"
                    "                reply = self.transport(request)\n"
                    "                return Charge(reply[\"id\"], reply[\"status\"], amount_cents)\n"
                    "            except GatewayError:\n"
                    "                if attempt == 2:\n"
                    "                    raise\n"
                    "                self.sleep(1.0)\n",
                    "        delay = FIRST_DELAY_SECONDS\n"
                    "        for attempt in range(1, MAX_ATTEMPTS + 1):\n"
                    "            try:\n"
                    "                reply = self.transport(request)\n"
                    "                return Charge(reply[\"id\"], reply[\"status\"], amount_cents)\n"
                    "            except (GatewayError, TimeoutError) as exc:\n"
                    "                retryable = isinstance(exc, TimeoutError) or exc.status >= 500\n"
                    "                if not retryable or attempt == MAX_ATTEMPTS:\n"
                    "                    raise\n"
                    "                self.sleep(delay)\n"
                    "                delay *= 2\n",
                ),
                read(GATEWAY_TESTS),
                edit(GATEWAY_TESTS, "from billing.gateway import", "import pytest\n\nfrom billing.gateway import"),
                append(
                    GATEWAY_TESTS,
                    "    assert len(transport.requests) == 2\n",
                    "\n\ndef test_a_client_error_is_not_retried():\n"
                    "    transport = ScriptedTransport(GatewayError(402), {\"id\": \"ch_3\", \"status\": \"captured\"})\n"
                    "    with pytest.raises(GatewayError):\n"
                    "        PaymentGatewayClient(transport, sleep=lambda s: None).charge(\"INV-3\", 500, \"EUR\")\n"
                    "    assert len(transport.requests) == 1\n"
                    "\n\ndef test_backoff_doubles_from_half_a_second():\n"
                    "    sleeps = []\n"
                    "    transport = ScriptedTransport(GatewayError(500), TimeoutError(), GatewayError(502), "
                    "{\"id\": \"ch_4\", \"status\": \"captured\"})\n"
                    "    PaymentGatewayClient(transport, sleep=sleeps.append).charge(\"INV-4\", 500, \"EUR\")\n"
                    "    assert sleeps == [0.5, 1.0, 2.0]\n",
                ),
                pytest(),
                say(
                    "Recorded the retry decision in the ledger and implemented it: `charge()` now retries only 5xx and "
                    "timeouts, sleeping 0.5 s, 1 s, 2 s between at most 4 attempts. Two new tests cover the 4xx case and "
                    "the backoff; the rounding test in test_invoices.py was already failing before this change."
                ),
            ],
            "state",
        ),
        Step("thanks", [say("You're welcome.")], "ack"),
    ]),
    Session("02-fix-rounding", [
        Step(
            CHORE,
            [
                pytest(),
                read(INVOICES),
                edit(INVOICES, "from datetime import date\n", "from datetime import date\nfrom decimal import ROUND_HALF_EVEN, Decimal\n"),
                edit(
                    INVOICES,
                    "    tax = net * item.tax_rate_percent / 100\n    return net + int(tax + 0.5)\n",
                    "    tax = (Decimal(net) * item.tax_rate_percent / 100).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)\n"
                    "    return net + int(tax)\n",
                ),
                pytest(),
                say(
                    "One failure: test_tax_rounds_half_even. `line_total` rounded the tax half-up on a float (2.5 cents "
                    "became 3). It now computes the tax as a Decimal and rounds it half-even; all 10 tests pass."
                ),
            ],
            "chore",
        ),
        Step(
            "Good. We round tax half-even per line item and then sum the lines; that is the rule, please record it.",
            [load_ledger(), remember("rounding"), say("Recorded as a decision.")],
            "state",
        ),
        Step("ok", [say("Anything else?")], "ack"),
    ]),
    Session("03-money-rule", [
        Step(
            RETRY_QUESTION,
            [
                load_ledger(),
                recall("payment gateway client retry policy", k=3, token_budget=200),
                say(
                    "We retry only HTTP 5xx responses and timeouts, with exponential backoff starting at 0.5 s and doubling, "
                    "at most 4 attempts in all. A 4xx is never retried."
                ),
            ],
            "ask",
            asks="retry-v1",
        ),
        Step(
            "Also write down that amounts are integer cents everywhere in billing, never floats; Decimal only when "
            "parsing user input.",
            [load_ledger(), remember("money"), say("Recorded as a constraint.")],
            "state",
        ),
        Step("thanks", [say("You're welcome.")], "ack"),
    ]),
    Session("04-refunds-and-currencies", [
        Step(
            "Do we store amounts as floats or something else?",
            [say("Integer cents everywhere in billing, never floats; Decimal only when parsing what a user typed.")],
            "ask",
            asks="money",
        ),
        Step(
            "Add a refund(charge_id, amount_cents) method to the gateway client.",
            [read(GATEWAY), say("Should refunds follow the same retry rules as charges?")],
            "work",
        ),
        Step(
            "Same as before.",
            [
                read(GATEWAY),
                edit(
                    GATEWAY,
                    "        request = {\"invoice\": invoice_id, \"amount\": amount_cents, \"currency\": currency}\n"
                    "        delay = FIRST_DELAY_SECONDS\n",
                    "        request = {\"invoice\": invoice_id, \"amount\": amount_cents, \"currency\": currency}\n"
                    "        reply = self._send(request)\n"
                    "        return Charge(reply[\"id\"], reply[\"status\"], amount_cents)\n\n"
                    "    def refund(self, charge_id: str, amount_cents: int) -> Charge:\n"
                    "        reply = self._send({\"refund\": charge_id, \"amount\": amount_cents})\n"
                    "        return Charge(reply[\"id\"], reply[\"status\"], -amount_cents)\n\n"
                    "    def _send(self, request: dict) -> dict:\n"
                    "        delay = FIRST_DELAY_SECONDS\n",
                ),
                edit(
                    GATEWAY,
                    "                reply = self.transport(request)\n"
                    "                return Charge(reply[\"id\"], reply[\"status\"], amount_cents)\n",
                    "                return self.transport(request)\n",
                ),
                read(GATEWAY_TESTS),
                append(
                    GATEWAY_TESTS,
                    "    assert sleeps == [0.5, 1.0, 2.0]\n",
                    "\n\ndef test_refund_is_retried_like_a_charge():\n"
                    "    transport = ScriptedTransport(TimeoutError(), {\"id\": \"re_1\", \"status\": \"captured\"})\n"
                    "    refund = PaymentGatewayClient(transport, sleep=lambda s: None).refund(\"ch_1\", 300)\n"
                    "    assert refund == Charge(\"re_1\", \"captured\", -300)\n",
                ),
                pytest(),
                say("Added `refund()`; charges and refunds now share one retry loop (`_send`). 11 tests pass."),
            ],
            "ack",
        ),
        Step(
            "Also: we only support EUR and USD. Reject anything else before calling the gateway, and make sure every "
            "session sees that rule.",
            [
                load_ledger(),
                remember("currency", pinned=True),
                read(GATEWAY),
                edit(
                    GATEWAY,
                    "from dataclasses import dataclass\n",
                    "from dataclasses import dataclass\n\nfrom billing.money import SUPPORTED_CURRENCIES, UnsupportedCurrency\n",
                ),
                edit(
                    GATEWAY,
                    "        request = {\"invoice\": invoice_id, \"amount\": amount_cents, \"currency\": currency}\n",
                    "        if currency not in SUPPORTED_CURRENCIES:\n"
                    "            raise UnsupportedCurrency(currency)\n"
                    "        request = {\"invoice\": invoice_id, \"amount\": amount_cents, \"currency\": currency}\n",
                ),
                read(GATEWAY_TESTS),
                edit(
                    GATEWAY_TESTS,
                    "from billing.gateway import Charge, GatewayError, PaymentGatewayClient\n",
                    "from billing.gateway import Charge, GatewayError, PaymentGatewayClient\n"
                    "from billing.money import UnsupportedCurrency\n",
                ),
                append(
                    GATEWAY_TESTS,
                    "    assert refund == Charge(\"re_1\", \"captured\", -300)\n",
                    "\n\ndef test_other_currencies_are_refused():\n"
                    "    transport = ScriptedTransport()\n"
                    "    with pytest.raises(UnsupportedCurrency):\n"
                    "        PaymentGatewayClient(transport, sleep=lambda s: None).charge(\"INV-6\", 500, \"GBP\")\n"
                    "    assert transport.requests == []\n",
                ),
                pytest(),
                say("Pinned the currency rule in the ledger and enforced it in `charge()`; 12 tests pass."),
            ],
            "state",
        ),
    ]),
    Session("05-settled", [
        Step(
            "When is a payment considered settled?",
            [
                load_ledger(),
                recall("payment settled definition"),
                say(
                    "Nothing is recorded. In the code a Charge's status is \"authorized\" or \"captured\". I would call a "
                    "payment settled once the gateway confirmed the capture; an authorization alone can still be voided."
                ),
            ],
            "ask",  # asked before anything was decided: no answer yet
        ),
        Step(
            "Yes: settled means the gateway confirmed the capture, status captured; authorized is not settled. Write "
            "that down as a definition.",
            [load_ledger(), remember("settled"), say("Recorded as a definition.")],
            "state",
        ),
        Step(
            "what did we settle on for retries when the gateway times out?",
            [
                load_ledger(),
                recall("retries gateway timeout"),
                say("Timeouts are retried like 5xx responses: backoff 0.5 s doubling, at most 4 attempts in all."),
            ],
            "ask",
            asks="retry-v1",
        ),
    ]),
    Session(
        "06-idempotency",
        [
            Step(
                CHORE,
                [
                    pytest(),
                    read("billing/money.py"),
                    edit(
                        "billing/money.py",
                        "    return f\"{sign}{abs(cents) / 100} {currency}\"\n",
                        "    whole, rest = divmod(abs(cents), 100)\n    return f\"{sign}{whole}.{rest:02d} {currency}\"\n",
                    ),
                    pytest(),
                    say(
                        "One failure: test_format_cents_pads_cents. `format_cents` had been changed to divide by 100 as a "
                        "float, printing 12.3 EUR. It is back to integer arithmetic; all 12 tests pass."
                    ),
                ],
                "chore",
            ),
            Step(
                DECISIONS["idempotency"].wording,
                [
                    read(GATEWAY),
                    edit(
                        GATEWAY,
                        "        request = {\"invoice\": invoice_id, \"amount\": amount_cents, \"currency\": currency}\n",
                        "        request = {\n"
                        "            \"invoice\": invoice_id,\n"
                        "            \"amount\": amount_cents,\n"
                        "            \"currency\": currency,\n"
                        "            \"idempotency_key\": f\"charge:{invoice_id}\",\n"
                        "        }\n",
                    ),
                    read(GATEWAY_TESTS),
                    append(
                        GATEWAY_TESTS,
                        "    assert transport.requests == []\n",
                        "\n\ndef test_every_retry_sends_the_same_idempotency_key():\n"
                        "    transport = ScriptedTransport(GatewayError(500), {\"id\": \"ch_5\", \"status\": \"captured\"})\n"
                        "    PaymentGatewayClient(transport, sleep=lambda s: None).charge(\"INV-5\", 500, \"EUR\")\n"
                        "    assert [r[\"idempotency_key\"] for r in transport.requests] == [\"charge:INV-5\", \"charge:INV-5\"]\n",
                    ),
                    pytest(),
                    say(
                        "Done: each charge request carries idempotency_key charge:<invoice id>, built once per charge, so "
                        "every retry sends the same key. 13 tests pass."
                    ),
                ],
                "state",
                says="idempotency",
            ),
            Step(
                "How do invoice totals get rounded again?",
                [say("Tax is rounded half-even (banker's rounding) on each line item, then the lines are summed.")],
                "ask",
                asks="rounding",
            ),
        ],
        before=[
            Edit(
                "billing/money.py",
                "    whole, rest = divmod(abs(cents), 100)\n    return f\"{sign}{whole}.{rest:02d} {currency}\"\n",
                "    return f\"{sign}{abs(cents) / 100} {currency}\"\n",
            )
        ],
    ),
    Session("07-late-fees-long", [
        Step(
            DECISIONS["late-fee"].wording,
            [
                read(INVOICES),
                append(
                    INVOICES,
                    "    return sum(line_total(item) for item in invoice.lines)\n",
                    "\n\nLATE_FEE_PERCENT = Decimal(\"1.5\")  # of the outstanding amount, per month late\n"
                    "LATE_FEE_CAP_CENTS = 2500\n"
                    "LATE_FEE_AFTER_DAYS = 30\n"
                    "\n\ndef late_fee(outstanding_cents: int, due: date, today: date) -> int:\n"
                    "    days_late = (today - due).days\n"
                    "    if days_late <= 31:\n"
                    "        return 0\n"
                    "    months = days_late // 30\n"
                    "    fee = (Decimal(outstanding_cents) * LATE_FEE_PERCENT / 100 * months).quantize(Decimal(1), "
                    "rounding=ROUND_HALF_EVEN)\n"
                    "    return min(int(fee), LATE_FEE_CAP_CENTS)\n",
                ),
                read(INVOICE_TESTS),
                edit(
                    INVOICE_TESTS,
                    "from billing.invoices import Invoice, LineItem, invoice_total, line_total\n",
                    "from billing.invoices import Invoice, LineItem, invoice_total, late_fee, line_total\n",
                ),
                append(
                    INVOICE_TESTS,
                    "    assert invoice_total(invoice) == 250\n",
                    "\n\ndef test_late_fee_is_capped():\n"
                    "    assert late_fee(1_000_000, date(2026, 1, 1), date(2026, 3, 15)) == 2500\n"
                    "\n\ndef test_no_late_fee_within_thirty_days():\n"
                    "    assert late_fee(10_000, date(2026, 1, 1), date(2026, 1, 20)) == 0\n",
                ),
                pytest(),
                say("Added `late_fee()` in billing/invoices.py with its cap and start day, and two tests; 15 tests pass."),
            ],
            "state",
            says="late-fee",
        ),
        Step(
            "How many times do we retry a failed charge?",
            [
                load_ledger(),
                recall("how many retries failed charge"),
                say("At most 4 attempts in all, with backoff 0.5 s doubling, and only on 5xx responses and timeouts."),
            ],
            "ask",
            asks="retry-v1",
        ),
        Step(
            "What timeout should gateway calls use? Pick something sensible.",
            [
                read(GATEWAY),
                edit(GATEWAY, "FIRST_DELAY_SECONDS = 0.5\n", "FIRST_DELAY_SECONDS = 0.5\nTIMEOUT_SECONDS = 10  # per gateway call, connect plus read\n"),
                edit(GATEWAY, "                return self.transport(request)\n", "                return self.transport({**request, \"timeout\": TIMEOUT_SECONDS})\n"),
                pytest(),
                say(DECISIONS["timeout"].wording),
            ],
            "work",
            says="timeout",
        ),
        Step("ok", [say("Anything else?")], "ack"),
        Step(
            "What idempotency key do we send with a charge?",
            [say("charge:<invoice id>, built once per charge, so every retry of that charge sends the same key.")],
            "ask",
            asks="idempotency",
        ),
        compact(
            "The user added late fees (1.5% a month, capped, from day 31), asked about retries (at most 4 attempts) and "
            "the idempotency key, and had the gateway timeout set."
        ),
        Step(
            "what's the late fee rule?",
            [
                load_ledger(),
                recall("late fee rule"),
                say("1.5% of the outstanding amount per month, capped at €25, charged from day 31 after the due date."),
            ],
            "ask",
            asks="late-fee",
        ),
        Step("thanks, that's all for today", [say("Bye.")], "ack"),
    ]),
    Session("08-retry-correction", [
        Step(
            "The gateway team says 4 attempts is too many and they now send 429 with Retry-After. Change our retry "
            "policy: at most 3 attempts, backoff 0.5 s doubling with full jitter, retry on 5xx, timeouts and 429 "
            "(honouring Retry-After); never other 4xx.",
            [
                load_ledger(),
                recall("payment gateway client retry policy", k=3),
                remember("retry-v2"),
                read(GATEWAY),
                edit(GATEWAY, "MAX_ATTEMPTS = 4  # in all, the first try included\n", "MAX_ATTEMPTS = 3  # in all, the first try included\n"),
                edit(GATEWAY, "import time\n", "import random\nimport time\n"),
                edit(
                    GATEWAY,
                    "    def __init__(self, status: int, message: str = \"\") -> None:\n"
                    "        super().__init__(f\"{status}: {message}\")\n"
                    "        self.status = status\n",
                    "    def __init__(self, status: int, message: str = \"\", retry_after: float | None = None) -> None:\n"
                    "        super().__init__(f\"{status}: {message}\")\n"
                    "        self.status = status\n"
                    "        self.retry_after = retry_after  # seconds, from a 429's Retry-After header\n",
                ),
                edit(
                    GATEWAY,
                    "    def __init__(self, transport: Callable[[dict], dict], sleep: Callable[[float], None] = time.sleep) -> None:\n"
                    "        self.transport = transport\n"
                    "        self.sleep = sleep\n",
                    "    def __init__(\n"
                    "        self,\n"
                    "        transport: Callable[[dict], dict],\n"
                    "        sleep: Callable[[float], None] = time.sleep,\n"
                    "        jitter: Callable[[float, float], float] = random.uniform,\n"
                    "    ) -> None:\n"
                    "        self.transport = transport\n"
                    "        self.sleep = sleep\n"
                    "        self.jitter = jitter\n",
                ),
                edit(
                    GATEWAY,
                    "                retryable = isinstance(exc, TimeoutError) or exc.status >= 500\n"
                    "                if not retryable or attempt == MAX_ATTEMPTS:\n"
                    "                    raise\n"
                    "                self.sleep(delay)\n",
                    "                retryable = isinstance(exc, TimeoutError) or exc.status >= 500 or exc.status == 429\n"
                    "                if not retryable or attempt == MAX_ATTEMPTS:\n"
                    "                    raise\n"
                    "                retry_after = getattr(exc, \"retry_after\", None)\n"
                    "                self.sleep(retry_after if retry_after is not None else self.jitter(0, delay))\n",
                ),
                read(GATEWAY_TESTS),
                edit(
                    GATEWAY_TESTS,
                    "def test_backoff_doubles_from_half_a_second():\n"
                    "    sleeps = []\n"
                    "    transport = ScriptedTransport(GatewayError(500), TimeoutError(), GatewayError(502), "
                    "{\"id\": \"ch_4\", \"status\": \"captured\"})\n"
                    "    PaymentGatewayClient(transport, sleep=sleeps.append).charge(\"INV-4\", 500, \"EUR\")\n"
                    "    assert sleeps == [0.5, 1.0, 2.0]\n",
                    "def test_backoff_doubles_from_half_a_second_with_full_jitter():\n"
                    "    sleeps = []\n"
                    "    transport = ScriptedTransport(GatewayError(500), TimeoutError(), {\"id\": \"ch_4\", \"status\": \"captured\"})\n"
                    "    PaymentGatewayClient(transport, sleep=sleeps.append, jitter=lambda low, high: high).charge(\"INV-4\", 500, \"EUR\")\n"
                    "    assert sleeps == [0.5, 1.0]\n"
                    "\n\ndef test_three_attempts_at_most():\n"
                    "    transport = ScriptedTransport(GatewayError(500), GatewayError(500), GatewayError(500), "
                    "{\"id\": \"ch_7\", \"status\": \"captured\"})\n"
                    "    with pytest.raises(GatewayError):\n"
                    "        PaymentGatewayClient(transport, sleep=lambda s: None).charge(\"INV-7\", 500, \"EUR\")\n"
                    "    assert len(transport.requests) == 3\n"
                    "\n\ndef test_a_429_waits_for_retry_after():\n"
                    "    sleeps = []\n"
                    "    transport = ScriptedTransport(GatewayError(429, retry_after=7.0), {\"id\": \"ch_8\", \"status\": \"captured\"})\n"
                    "    PaymentGatewayClient(transport, sleep=sleeps.append).charge(\"INV-8\", 500, \"EUR\")\n"
                    "    assert sleeps == [7.0]\n",
                ),
                pytest(),
                say(
                    "Recorded the new retry policy (it supersedes the old one) and changed the client: at most 3 attempts, "
                    "full jitter on the doubling backoff, 429 retried after its Retry-After. 17 tests pass."
                ),
            ],
            "state",
        ),
        Step(
            "what timeout do we use for gateway calls?",
            [say("10 seconds per call (connect plus read), TIMEOUT_SECONDS in billing/gateway.py; a timeout is retried.")],
            "ask",
            asks="timeout",
        ),
    ]),
    Session(
        "09-late-fee-boundary",
        [
            Step(
                CHORE,
                [
                    pytest(),
                    read(INVOICES),
                    edit(INVOICES, "    if days_late <= 31:\n", "    if days_late <= LATE_FEE_AFTER_DAYS:\n"),
                    pytest(),
                    say(
                        "One failure: test_late_fee_starts_on_day_31. `late_fee` only started charging on day 32; it now "
                        "charges from day 31 (after LATE_FEE_AFTER_DAYS). All 18 tests pass."
                    ),
                ],
                "chore",
            ),
            Step(
                "what did we decide about representing money in billing?",
                [
                    load_ledger(),
                    recall("representing money amounts billing"),
                    say("Integer cents everywhere in billing, never floats; Decimal only when parsing what a user typed."),
                ],
                "ask",
                asks="money",
            ),
            Step(
                "Which currencies do we support?",
                [say("EUR and USD only; anything else is refused with UnsupportedCurrency before the gateway is called.")],
                "ask",
                asks="currency",
            ),
        ],
        before=[
            Edit(
                INVOICE_TESTS,
                "    assert late_fee(10_000, date(2026, 1, 1), date(2026, 1, 20)) == 0\n",
                "    assert late_fee(10_000, date(2026, 1, 1), date(2026, 1, 20)) == 0\n"
                "\n\ndef test_late_fee_starts_on_day_31():\n"
                "    assert late_fee(10_000, date(2026, 1, 1), date(2026, 2, 1)) == 150\n",
            )
        ],
    ),
    Session("10-asked-again", [
        Step(
            RETRY_QUESTION,
            [
                load_ledger(),
                recall("payment gateway client retry policy", k=3, token_budget=200),
                say(
                    "At most 3 attempts in all, backoff 0.5 s doubling with full jitter, on 5xx, timeouts and 429 (waiting "
                    "its Retry-After); never on another 4xx. This replaced the earlier 4-attempt policy."
                ),
            ],
            "ask",
            asks="retry-v2",
        ),
        Step(
            "what did we settle on for the idempotency key?",
            [
                load_ledger(),
                recall("idempotency key charge"),
                say("charge:<invoice id>, the same on every retry of that charge."),
            ],
            "ask",
            asks="idempotency",
        ),
        Step("thanks", [say("You're welcome.")], "ack"),
    ]),
    Session("11-settled-property", [
        Step(
            "what does 'settled' mean for us?",
            [
                load_ledger(),
                recall("settled meaning", k=3, token_budget=200),
                say("Settled means the gateway confirmed the capture (status captured); an authorized charge is not settled."),
            ],
            "ask",
            asks="settled",
        ),
        Step(
            "remind me of the rounding rule for line items",
            [say("Tax is rounded half-even on each line item, then the lines are summed.")],
            "ask",
            asks="rounding",
        ),
        Step(
            "Add a settled property to Charge that follows our definition.",
            [
                read(GATEWAY),
                edit(
                    GATEWAY,
                    "    status: str  # \"authorized\" or \"captured\"\n    amount_cents: int\n",
                    "    status: str  # \"authorized\" or \"captured\"\n    amount_cents: int\n\n"
                    "    @property\n"
                    "    def settled(self) -> bool:\n"
                    "        \"\"\"The gateway confirmed the capture; an authorization alone is not settled.\"\"\"\n"
                    "        return self.status == \"captured\"\n",
                ),
                read(GATEWAY_TESTS),
                append(
                    GATEWAY_TESTS,
                    "    assert [r[\"idempotency_key\"] for r in transport.requests] == [\"charge:INV-5\", \"charge:INV-5\"]\n",
                    "\n\ndef test_only_a_captured_charge_is_settled():\n"
                    "    assert Charge(\"ch_9\", \"captured\", 100).settled\n"
                    "    assert not Charge(\"ch_9\", \"authorized\", 100).settled\n",
                ),
                pytest(),
                say("Added `Charge.settled` (true only for captured charges) and a test; 19 tests pass."),
            ],
            "work",
        ),
    ]),
    Session("12-chores-and-questions", [
        Step(CHORE, [pytest(), say("All 19 tests pass; nothing to fix.")], "chore"),
        Step(
            "what's the backoff between gateway retries now?",
            [
                load_ledger(),
                recall("backoff between gateway retries"),
                say("0.5 s doubling with full jitter (a random wait up to that bound), at most 3 attempts in all."),
            ],
            "ask",
            asks="retry-v2",
        ),
        Step(
            "Remind me how late fees work",
            [say("1.5% of the outstanding amount per month late, capped at €25, charged from day 31 after the due date.")],
            "ask",
            asks="late-fee",
        ),
        Step("ok", [say("Anything else?")], "ack"),
    ]),
    Session("13-release-notes", [
        Step(
            "Before I write the release notes: how many attempts does the gateway client make at most, and on which errors?",
            [
                load_ledger(),
                recall("gateway client attempts at most which errors", k=3, token_budget=200),
                say("At most 3 attempts, on 5xx, timeouts and 429 (after its Retry-After); never on another 4xx."),
            ],
            "ask",
            asks="retry-v2",
        ),
        Step(
            "And what timeout do gateway calls use?",
            [say("10 seconds per call, connect plus read.")],
            "ask",
            asks="timeout",
        ),
        Step("thanks", [say("You're welcome.")], "ack"),
    ]),
]
