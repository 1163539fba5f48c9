"""Amounts: parsed from what users type, formatted for invoices."""

from decimal import ROUND_HALF_EVEN, Decimal

SUPPORTED_CURRENCIES = ("EUR", "USD")


class UnsupportedCurrency(ValueError):
    """A currency the gateway contract does not cover."""


def to_cents(amount: str) -> int:
    """Parse a decimal amount typed by a user ("12.30") into cents."""
    return int((Decimal(amount) * 100).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def format_cents(cents: int, currency: str) -> str:
    if currency not in SUPPORTED_CURRENCIES:
        raise UnsupportedCurrency(currency)
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    return f"{sign}{whole}.{rest:02d} {currency}"
