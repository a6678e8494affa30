"""Stock levels and reservations."""

from __future__ import annotations

from dataclasses import dataclass, field


class OutOfStock(Exception):
    """Raised when an order asks for more units than are available."""

    def __init__(self, sku: str, wanted: int, available: int):
        super().__init__(f"{sku}: wanted {wanted}, only {available} available")
        self.sku = sku
        self.wanted = wanted
        self.available = available


@dataclass
class StockItem:
    sku: str
    name: str
    unit_price: float
    on_hand: int = 0
    reserved: int = 0

    @property
    def available(self) -> int:
        return self.on_hand - self.reserved


@dataclass
class Inventory:
    items: dict[str, StockItem] = field(default_factory=dict)

    def add(self, item: StockItem) -> None:
        if item.sku in self.items:
            raise ValueError(f"duplicate sku {item.sku}")
        self.items[item.sku] = item

    def get(self, sku: str) -> StockItem:
        try:
            return self.items[sku]
        except KeyError:
            raise KeyError(f"unknown sku {sku}") from None

    def restock(self, sku: str, quantity: int) -> int:
        if quantity <= 0:
            raise ValueError("restock quantity must be positive")
        item = self.get(sku)
        item.on_hand += quantity
        return item.on_hand

    def reserve(self, sku: str, quantity: int) -> None:
        item = self.get(sku)
        if quantity > item.available:
            raise OutOfStock(sku, quantity, item.available)
        item.reserved += quantity

    def release(self, sku: str, quantity: int) -> None:
        item = self.get(sku)
        item.reserved = max(0, item.reserved - quantity)

    def ship(self, sku: str, quantity: int) -> None:
        """Ship reserved units: they leave both the shelf and the reservation."""
        item = self.get(sku)
        if quantity > item.reserved:
            raise ValueError(f"{sku}: cannot ship {quantity}, {item.reserved} reserved")
        item.reserved -= quantity
        item.on_hand -= quantity

    def low_stock(self, threshold: int = 5) -> list[StockItem]:
        return sorted((i for i in self.items.values() if i.available < threshold),
                      key=lambda i: i.available)

    def value(self) -> float:
        return round(sum(i.unit_price * i.on_hand for i in self.items.values()), 2)
