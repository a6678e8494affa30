"""A toy stock-keeping and billing library (streameval example repository)."""

from .billing import BULK_THRESHOLD, Invoice, LineItem, bulk_discount
from .stock import Inventory, OutOfStock, StockItem

__all__ = [
    "BULK_THRESHOLD",
    "Invoice",
    "Inventory",
    "LineItem",
    "OutOfStock",
    "StockItem",
    "bulk_discount",
]
