// SPDX-License-Identifier: AGPL-3.0-or-later
// The commerce system behind the sample's order edit endpoints: orders and
// their lines (read from conf/data, the same records the gateway's store
// starts with), order edits over REST and the same edits over GraphQL.
// It checks every request strictly and answers 400 or 422 naming what was
// wrong, so that a request the gateway builds differently never passes:
//
//   POST /erp/orders/{number}/edits/begin.json             body {"reason": string, ...}
//   POST /erp/orders/{number}/edits/{calc}/line_items/{line}.json
//                                                          body exactly {"lineItem": {"quantity": int}}
//                                                          (quantity 0 removes the line, as Shopify's edits do)
//   POST /erp/orders/{number}/edits/{calc}/line_items.json body exactly {"lineItem": {"sku": string, "quantity": int > 0}}
//                                                          adds a line (its unit price from the catalog below)
//   POST /erp/orders/{number}/edits/{calc}/commit.json     no body
//   POST /erp/graphql  orderEditBegin(id), orderEditSetQuantity(id, lineItemId, quantity),
//                      orderEditCommit(id), variables with exactly those keys
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const DATA_DIR = path.resolve(here, '../../conf/data');

function readEntities(name) {
  return JSON.parse(fs.readFileSync(path.join(DATA_DIR, `${name}.json`), 'utf8')).entities;
}

function sameKeys(obj, keys) {
  return obj !== null && typeof obj === 'object' && !Array.isArray(obj) &&
    JSON.stringify(Object.keys(obj).sort()) === JSON.stringify([...keys].sort());
}

export class Commerce {
  constructor() {
    this.reset();
  }

  reset() {
    const lines = readEntities('OrderLines');
    this.orders = new Map();
    for (const o of readEntities('Orders')) {
      this.orders.set(o.OrderNumber, {
        id: o.id, number: o.OrderNumber,
        lines: lines.filter((l) => l.Order === o.id)
          .map((l) => ({ id: l.id, sku: l.SKU, quantity: l.Quantity, unitPrice: l.UnitPrice ?? 0 })),
      });
    }
    this.edits = new Map(); // calculated order id -> edit
    this.count = 0;
  }

  total(lines) {
    return Math.round(lines.reduce((sum, l) => sum + l.quantity * l.unitPrice, 0) * 100) / 100;
  }

  // An edit: a calculated copy of the order's lines with their own ids.
  begin(number, prefix) {
    const order = this.orders.get(number);
    if (!order) return null;
    const n = ++this.count;
    const edit = {
      id: prefix === 'gid' ? `gid://shop/CalculatedOrder/${n}` : `calc-${n}`, order, committed: false,
      lines: order.lines.map((l, k) => ({
        id: prefix === 'gid' ? `gid://shop/CalculatedLineItem/${n}-${k + 1}` : `cli-${n}-${k + 1}`,
        original: l, sku: l.sku, quantity: l.quantity, unitPrice: l.unitPrice,
      })),
    };
    this.edits.set(edit.id, edit);
    return edit;
  }

  commit(edit) {
    edit.committed = true;
    for (const l of edit.lines) {
      if (l.original) l.original.quantity = l.quantity;
      else edit.order.lines.push({ id: l.id, sku: l.sku, quantity: l.quantity, unitPrice: l.unitPrice });
    }
    return this.total(edit.order.lines);
  }

  openEdit(id, number) {
    const edit = this.edits.get(id);
    if (!edit || (number !== undefined && edit.order.number !== number)) return [null, `no open edit ${id}`];
    if (edit.committed) return [null, `edit ${id} is already committed`];
    return [edit, null];
  }

  // ---- REST --------------------------------------------------------------------

  // Answers [status, body] for /erp/orders/.../edits/... routes, or null.
  rest(method, pathname, text, headers) {
    const m = /^\/erp\/orders\/([^/]+)\/edits\/(?:(begin)\.json|([^/]+)\/(?:line_items\/([^/]+)\.json|(commit)\.json|(line_items)\.json))$/
      .exec(pathname);
    if (!m || method !== 'POST') return null;
    const number = decodeURIComponent(m[1]);
    if (m[2]) return this.restBegin(number, text, headers);
    const [edit, why] = this.openEdit(decodeURIComponent(m[3]), number);
    if (!edit) return [409, { error: why }];
    if (m[5]) {
      if (text !== '') return [400, { error: 'commit takes no body' }];
      const amount = this.commit(edit);
      return [200, { order: { id: edit.order.id, number, total: { amount, currency: 'EUR' } } }];
    }
    if (m[6]) return this.restAdd(edit, text);
    return this.restLine(edit, decodeURIComponent(m[4]), text);
  }

  restBegin(number, text, headers) {
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return [400, { error: 'the body must be JSON' }];
    }
    if (!/^application\/json/.test(headers['content-type'] || '')) return [400, { error: 'Content-Type must be application/json' }];
    if (typeof body?.reason !== 'string') return [400, { error: 'reason must be a string' }];
    const edit = this.begin(number);
    if (!edit) return [404, { error: `order ${number} not found` }];
    return [200, {
      calculatedOrder: {
        id: edit.id,
        lineItems: edit.lines.map((l) => ({ id: l.id, sku: l.sku, quantity: l.quantity, unitPrice: l.unitPrice })),
      },
    }];
  }

  // A new line: its unit price is the one the order's other lines with the
  // same SKU have, else 10.
  restAdd(edit, text) {
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return [400, { error: 'the body must be JSON' }];
    }
    if (!sameKeys(body, ['lineItem']) || !sameKeys(body.lineItem, ['sku', 'quantity']) ||
        typeof body.lineItem.sku !== 'string' || !Number.isInteger(body.lineItem.quantity) || body.lineItem.quantity < 1)
      return [422, { error: 'the body must be exactly {"lineItem": {"sku": <string>, "quantity": <whole number >= 1>}}' }];
    const same = edit.lines.find((l) => l.sku === body.lineItem.sku);
    const line = { id: `${edit.id.replace('calc-', 'cli-')}-${edit.lines.length + 1}`, original: null,
      sku: body.lineItem.sku, quantity: body.lineItem.quantity, unitPrice: same ? same.unitPrice : 10 };
    edit.lines.push(line);
    return [201, { lineItem: { id: line.id, sku: line.sku, quantity: line.quantity, unitPrice: line.unitPrice } }];
  }

  restLine(edit, lineId, text) {
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return [400, { error: 'the body must be JSON' }];
    }
    if (!sameKeys(body, ['lineItem']) || !sameKeys(body.lineItem, ['quantity']) ||
        !Number.isInteger(body.lineItem.quantity) || body.lineItem.quantity < 0)
      return [422, { error: 'the body must be exactly {"lineItem": {"quantity": <whole number >= 0>}}' }];
    const line = edit.lines.find((l) => l.id === lineId);
    if (!line) return [404, { error: `no line item ${lineId} in edit ${edit.id}` }];
    line.quantity = body.lineItem.quantity;
    return [200, { lineItem: { id: line.id, sku: line.sku, quantity: line.quantity, unitPrice: line.unitPrice } }];
  }

  // ---- GraphQL -------------------------------------------------------------------

  graphql(text) {
    let q;
    try {
      q = JSON.parse(text);
    } catch {
      return { errors: [{ message: 'the body must be JSON' }] };
    }
    const v = q?.variables;
    const op = q?.operationName;
    if (op === 'orderEditBegin' && sameKeys(v, ['id'])) return this.gqlBegin(v.id);
    if (op === 'orderEditSetQuantity' && sameKeys(v, ['id', 'lineItemId', 'quantity'])) return this.gqlSet(v);
    if (op === 'orderEditCommit' && sameKeys(v, ['id'])) return this.gqlCommit(v.id);
    return { errors: [{ message: `unknown operation ${op} or wrong variables ${JSON.stringify(v)}` }] };
  }

  gqlBegin(id) {
    const m = /^gid:\/\/shop\/Order\/(.+)$/.exec(id || '');
    const edit = m ? this.begin(m[1], 'gid') : null;
    if (!edit) return { data: { orderEditBegin: null }, errors: [{ message: `order ${id} not found` }] };
    const edges = (list) => ({ edges: list.map((node) => ({ node })) });
    return {
      data: {
        orderEditBegin: {
          calculatedOrder: {
            id: edit.id,
            originalOrder: { lineItems: edges(edit.lines.map((l) => ({ id: l.original.id, sku: l.sku, quantity: l.original.quantity }))) },
            lineItems: edges(edit.lines.map((l) => ({ id: l.id, sku: l.sku, quantity: l.quantity }))),
          },
          userErrors: [],
        },
      },
    };
  }

  gqlSet(v) {
    const [edit, why] = this.openEdit(v.id);
    const line = edit?.lines.find((l) => l.id === v.lineItemId);
    if (!line || !Number.isInteger(v.quantity)) return { errors: [{ message: why || `bad line item ${v.lineItemId} or quantity ${v.quantity}` }] };
    line.quantity = v.quantity;
    return { data: { orderEditSetQuantity: { calculatedLineItem: { id: line.id, quantity: line.quantity }, userErrors: [] } } };
  }

  gqlCommit(id) {
    const [edit, why] = this.openEdit(id);
    if (!edit) return { errors: [{ message: why }] };
    const amount = this.commit(edit);
    return { data: { orderEditCommit: { order: { id: `gid://shop/Order/${edit.order.number}`, totalPrice: amount.toFixed(2) }, userErrors: [] } } };
  }
}
