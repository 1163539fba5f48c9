from datetime import date

from billing.invoices import Invoice, LineItem, invoice_total, line_total


def test_line_total_adds_tax():
    assert line_total(LineItem("desk", 2, 10_000, 20)) == 24_000


def test_tax_rounds_half_even():
    assert line_total(LineItem("pen", 1, 250, 1)) == 252


def test_invoice_total_sums_lines():
    invoice = Invoice("INV-1", "EUR", date(2026, 1, 31), [LineItem("a", 1, 100), LineItem("b", 3, 50)])
    assert invoice_total(invoice) == 250
