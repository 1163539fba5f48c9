import pytest

from billing.money import UnsupportedCurrency, format_cents, to_cents


def test_to_cents_parses_what_users_type():
    assert to_cents("12.30") == 1230
    assert to_cents("0.005") == 0


def test_format_cents_pads_cents():
    assert format_cents(1230, "EUR") == "12.30 EUR"
    assert format_cents(-5, "USD") == "-0.05 USD"


def test_format_cents_refuses_other_currencies():
    with pytest.raises(UnsupportedCurrency):
        format_cents(100, "GBP")
