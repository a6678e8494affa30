"""Invoices: line items, the bulk discount and VAT."""

from __future__ import annotations

from dataclasses import dataclass, field

from .stock import Inventory

#: Orders of this many units or more of one item get BULK_RATE off that line.
BULK_THRESHOLD = 10
BULK_RATE = 0.10
VAT_RATE = 0.20


def bulk_discount(quantity: int, amount: float) -> float:
    """The discount on one line: BULK_RATE of its amount from BULK_THRESHOLD units."""
    if quantity > BULK_THRESHOLD:
        return round(amount * BULK_RATE, 2)
    return 0.0


@dataclass
class LineItem:
    sku: str
    quantity: int
    unit_price: float

    @property
    def amount(self) -> float:
        return round(self.quantity * self.unit_price, 2)

    @property
    def discount(self) -> float:
        return bulk_discount(self.quantity, self.amount)

    @property
    def net(self) -> float:
        return round(self.amount - self.discount, 2)


@dataclass
class Invoice:
    customer: str
    lines: list[LineItem] = field(default_factory=list)
    vat_rate: float = VAT_RATE

    def add_line(self, sku: str, quantity: int, unit_price: float) -> LineItem:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        line = LineItem(sku, quantity, unit_price)
        self.lines.append(line)
        return line

    @property
    def subtotal(self) -> float:
        return round(sum(line.net for line in self.lines), 2)

    @property
    def vat(self) -> float:
        return round(self.subtotal * self.vat_rate, 2)

    @property
    def total(self) -> float:
        return round(self.subtotal + self.vat, 2)

    def summary(self) -> str:
        rows = [f"{line.sku:<10}{line.quantity:>5} x {line.unit_price:>8.2f}"
                f"{-line.discount:>9.2f}{line.net:>10.2f}" for line in self.lines]
        rows.append(f"{'subtotal':<34}{self.subtotal:>10.2f}")
        rows.append(f"{'VAT':<34}{self.vat:>10.2f}")
        rows.append(f"{'total':<34}{self.total:>10.2f}")
        return "\n".join(rows)


def invoice_order(inventory: Inventory, customer: str, order: dict[str, int]) -> Invoice:
    """Reserve every ordered item and bill it at the current unit price."""
    invoice = Invoice(customer)
    reserved: list[tuple[str, int]] = []
    try:
        for sku, quantity in order.items():
            inventory.reserve(sku, quantity)
            reserved.append((sku, quantity))
            invoice.add_line(sku, quantity, inventory.get(sku).unit_price)
    except Exception:
        for sku, quantity in reserved:
            inventory.release(sku, quantity)
        raise
    return invoice
