// Cart widget of the example shop: mirrors inventory/billing.py for the browser.

const BULK_THRESHOLD = 10;
const BULK_RATE = 0.1;
const VAT_RATE = 0.2;

const round2 = (x) => Math.round(x * 100) / 100;

function formatPrice(amount, currency = "EUR") {
  return new Intl.NumberFormat("en-GB", { style: "currency", currency }).format(amount);
}

class Cart {
  constructor(catalog) {
    this.catalog = catalog;
    this.lines = new Map();
  }

  add(sku, quantity = 1) {
    if (!this.catalog[sku]) {
      throw new Error(`unknown sku ${sku}`);
    }
    this.lines.set(sku, (this.lines.get(sku) || 0) + quantity);
  }

  remove(sku) {
    this.lines.delete(sku);
  }

  lineDiscount(quantity, amount) {
    return quantity >= BULK_THRESHOLD ? round2(amount * BULK_RATE) : 0;
  }

  subtotal() {
    let sum = 0;
    for (const [sku, quantity] of this.lines) {
      const amount = round2(quantity * this.catalog[sku].unitPrice);
      sum += amount - this.lineDiscount(quantity, amount);
    }
    return round2(sum);
  }

  total() {
    const subtotal = this.subtotal();
    return round2(subtotal + subtotal * VAT_RATE);
  }

  render(element) {
    const rows = [...this.lines].map(
      ([sku, quantity]) => `<li>${this.catalog[sku].name} x ${quantity}</li>`,
    );
    element.innerHTML = `<ul>${rows.join("")}</ul><p>${formatPrice(this.total())}</p>`;
  }
}

module.exports = { Cart, formatPrice };
