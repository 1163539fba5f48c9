"""Northwind billing: invoices and card charges."""
