"""Invoices: line items, tax and totals."""

from dataclasses import dataclass, field
from datetime import date


@dataclass(frozen=True)
class LineItem:
    description: str
    quantity: int
    unit_cents: int
    tax_rate_percent: int = 0


@dataclass
class Invoice:
    id: str
    currency: str
    due: date
    lines: list[LineItem] = field(default_factory=list)


def line_total(item: LineItem) -> int:
    net = item.quantity * item.unit_cents
    tax = net * item.tax_rate_percent / 100
    return net + int(tax + 0.5)


def invoice_total(invoice: Invoice) -> int:
    return sum(line_total(item) for item in invoice.lines)
