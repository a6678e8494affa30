from inventory import Inventory, Invoice, StockItem, bulk_discount
from inventory.billing import invoice_order


def make_inventory() -> Inventory:
    inv = Inventory()
    inv.add(StockItem("PEN-01", "Ballpoint pen", 1.50, on_hand=100))
    inv.add(StockItem("PAD-A4", "A4 notepad", 3.20, on_hand=40))
    return inv


def test_no_discount_below_threshold():
    assert bulk_discount(9, 13.50) == 0.0


def test_discount_above_threshold():
    assert bulk_discount(12, 18.00) == 1.80


def test_invoice_totals():
    invoice = Invoice("ACME")
    invoice.add_line("PEN-01", 2, 1.50)
    invoice.add_line("PAD-A4", 1, 3.20)
    assert invoice.subtotal == 6.20
    assert invoice.vat == 1.24
    assert invoice.total == 7.44


def test_invoice_order_reserves_stock():
    inv = make_inventory()
    invoice_order(inv, "ACME", {"PEN-01": 20, "PAD-A4": 2})
    assert inv.get("PEN-01").reserved == 20
    assert inv.get("PAD-A4").available == 38
