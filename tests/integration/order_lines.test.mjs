// SPDX-License-Identifier: AGPL-3.0-or-later
// An order and its lines edited in one submit_data_entry_form call
// (childLists) against the mock commerce system of tests/upstream/: lines
// changed, added and removed, checked against the exact requests the
// upstream received and against the store; argument errors that write
// nothing and send nothing (a list that is not one of the form's, an
// unknown key, a line of another order, a caller without write access to
// the lines); an idempotent replay; and get_data_entry_form showing the
// lines as a nested list (Json) and as a repeated group (AdaptiveCard).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { startMock } from './lib/upstream.mjs';
import {
  call, checkCard, CREDS, CUSTOMERS, entity, ENV, errorText, ORDER_LINES, ORDERS, pointAt, sampleData, structured, values,
} from './lib/forms.mjs';

let mock;
let gw;
let config;

// The sales role may read OrderLines but no longer change them.
function salesReadOnlyLines(dir) {
  const file = path.join(dir, 'datagate.json');
  const conf = readJson(file);
  const sales = conf.roles.find((r) => r.name === 'sales');
  sales.models = sales.models.map((m) => (m.model === 'OrderLines' ? { model: 'OrderLines' } : m));
  writeJson(file, conf);
}

before(async () => {
  mock = await startMock({ credentials: CREDS });
  config = makeConfig({ edit: pointAt(mock.base, salesReadOnlyLines) });
  gw = await Gateway.start({ config, env: ENV });
});
after(async () => {
  await gw?.stop();
  config?.remove();
  await mock?.close();
});

function sampleOrder(number) {
  const order = sampleData('Orders').find((o) => o.OrderNumber === number);
  const lines = sampleData('OrderLines').filter((l) => l.Order === order.id);
  return { order, lines };
}

const erp = (p) => `/erp${p}`;
const bySku = (a, b) => (a.SKU < b.SKU ? -1 : a.SKU > b.SKU ? 1 : 0);

function submit(args, token) {
  return call(gw, 'submit_data_entry_form', { dataModelId: ORDERS, system: 'Claude', ...args }, token);
}

// The stored lines of an order, by id.
async function storedLines(orderId) {
  const r = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'Json', id: orderId }));
  const list = r.childLists.find((l) => l.list === 'OrderLines');
  return new Map(list.lines.map((l) => [l.id, Object.fromEntries(l.formValues.map((v) => [v.key, v.value]))]));
}

describe('one call edits an order and its lines', () => {
  it('changes three lines, adds one and removes one: one begin, the lines in SKU order, the removed one last with quantity 0, one commit', async () => {
    mock.upstream.control({ reset: true });
    const { order, lines } = sampleOrder('SO-1019');
    const sorted = [...lines].sort(bySku);
    const [removed, ...changed] = [sorted[1], sorted[0], sorted[2], sorted[3]];
    const quantity = new Map(changed.map((l, k) => [l.id, l.Quantity + k + 1]));
    const r = structured(await submit({ id: order.id, formValues: values({ Status: 'Open' }), childLists: [{
      list: 'OrderLines',
      changes: [
        ...changed.map((l) => ({ id: l.id, formValues: values({ Quantity: quantity.get(l.id) }) })),
        { formValues: values({ SKU: 'D-450', Quantity: 2 }) },
        { id: removed.id, op: 'remove' },
      ],
    }] }));
    assert.equal(r.status, 'succeeded', JSON.stringify(r));
    assert.equal(r.childLists.length, 1);
    const [added] = r.childLists[0].added;
    assert.match(added, /^[0-9a-f-]{36}$/);
    assert.deepEqual(r.childLists[0], { list: 'OrderLines', added: [added], updated: changed.map((l) => l.id), removed: [removed.id] });

    // Exactly what the commerce system received.
    const item = (l) => `cli-1-${lines.indexOf(l) + 1}`;
    const kept = [...changed, { id: added, SKU: 'D-450' }].sort(bySku);
    const want = [
      { path: erp('/orders/SO-1019/edits/begin.json'), body: JSON.stringify({ reason: 'datagate form edit', status: 'Open' }) },
      ...kept.map((l) => (l.id === added
        ? { path: erp('/orders/SO-1019/edits/calc-1/line_items.json'), body: JSON.stringify({ lineItem: { sku: 'D-450', quantity: 2 } }) }
        : { path: erp(`/orders/SO-1019/edits/calc-1/line_items/${item(l)}.json`), body: JSON.stringify({ lineItem: { quantity: quantity.get(l.id) } }) })),
      { path: erp(`/orders/SO-1019/edits/calc-1/line_items/${item(removed)}.json`), body: JSON.stringify({ lineItem: { quantity: 0 } }) },
      { path: erp('/orders/SO-1019/edits/calc-1/commit.json'), body: '' },
    ];
    assert.deepEqual(mock.upstream.log.map((q) => ({ path: q.path, body: q.body })), want);

    // The result names each line's operation and endpoint.
    const saves = r.actions.find((a) => a.type === 'ChildSaves').saves;
    assert.deepEqual(saves.map((s) => [s.id, s.operation ?? null, s.endpoint ?? null, s.status]),
      [...kept.map((l) => (l.id === added ? [added, 'Create', 'OrderLineAdd', 'succeeded'] : [l.id, null, null, 'succeeded'])),
        [removed.id, 'Delete', null, 'succeeded']]);

    // The store: the removed line is gone, the added one belongs to the
    // order with the values the upstream gave it, the others changed.
    assert.equal(await entity(gw, ORDER_LINES, removed.id), undefined);
    const a = await entity(gw, ORDER_LINES, added);
    assert.equal(a.order, order.id);
    assert.equal(a.lineItemId, `cli-1-${lines.length + 1}`);
    assert.equal(a.unitPrice, 10);
    for (const l of changed) assert.equal((await entity(gw, ORDER_LINES, l.id)).quantity, quantity.get(l.id));
    const total = Math.round((changed.reduce((s, l) => s + quantity.get(l.id) * l.UnitPrice, 0) + 2 * 10) * 100) / 100;
    const o = await entity(gw, ORDERS, order.id);
    assert.equal(o.amount, total);
    assert.equal(o.status, 'Open');
    assert.equal((await storedLines(order.id)).size, lines.length);
  });
});

describe('a new order with its lines', () => {
  it('creates the order and its lines in one call (the sample tree runs only for modified orders)', async () => {
    mock.upstream.control({ reset: true });
    const number = `SO-${randomUUID().slice(0, 8)}`;
    const r = structured(await submit({ formValues: values({ OrderNumber: number }), childLists: [{ list: 'OrderLines',
      changes: [{ formValues: values({ SKU: 'W-100', Quantity: 3 }) }, { formValues: values({ SKU: 'G-200' }) }] }] }));
    assert.equal(r.status, 'succeeded', JSON.stringify(r));
    assert.equal(r.created, true);
    assert.equal(r.childLists[0].added.length, 2);
    assert.equal(mock.upstream.log.length, 0);
    const stored = await storedLines(r.id);
    assert.deepEqual([...stored.keys()].sort(), [...r.childLists[0].added].sort());
    assert.deepEqual([...stored.values()].map((v) => [v.SKU, v.Quantity]).sort(), [['G-200', '1'], ['W-100', '3']]);
    for (const id of r.childLists[0].added) assert.equal((await entity(gw, ORDER_LINES, id)).order, r.id);
    assert.match(errorText(await submit({ formValues: values({ OrderNumber: `${number}-2` }),
      childLists: [{ list: 'OrderLines', changes: [{ id: r.childLists[0].added[0], op: 'remove' }] }] })),
    /^Invalid argument 'childLists\[0\]\.changes\[0\]\.op': "remove" is not possible while the Orders record is created/);
  });

  it('a model without a form endpoint has no lists to edit with its records', async () => {
    const customer = sampleData('Customers')[0];
    const f = structured(await call(gw, 'get_data_entry_form', { dataModelId: CUSTOMERS, format: 'Json', id: customer.id }));
    assert.deepEqual(f.childLists, []);
    assert.match(errorText(await call(gw, 'submit_data_entry_form', { dataModelId: CUSTOMERS, id: customer.id, formValues: [],
      childLists: [{ list: 'Orders', changes: [] }] })),
    /^Invalid argument 'childLists\[0\]\.list': 'Orders' is not a list of lines of the Customers form; its lists are: none\.$/);
  });
});

describe('the GraphQL order edit', () => {
  let graphql;
  let graphqlConfig;
  before(async () => {
    graphqlConfig = makeConfig({ edit: pointAt(mock.base, (dir) => {
      const file = path.join(dir, 'endpoints.json');
      const doc = readJson(file);
      for (const e of doc.endpoints) e.formSubmit = e.name === 'OrderEditGraphql';
      writeJson(file, doc);
    }) });
    graphql = await Gateway.start({ config: graphqlConfig, env: ENV });
  });
  after(async () => {
    await graphql?.stop();
    graphqlConfig?.remove();
  });

  it('removes a line by setting its calculated line item to quantity 0 after the kept lines', async () => {
    mock.upstream.control({ reset: true });
    const { order, lines } = sampleOrder('SO-1003');
    const [kept, removed] = lines;
    const r = structured(await call(graphql, 'submit_data_entry_form', { dataModelId: ORDERS, id: order.id,
      formValues: values({ Status: 'Open' }), childLists: [{ list: 'OrderLines', changes: [
        { id: kept.id, formValues: values({ Quantity: 7 }) }, { id: removed.id, op: 'remove' }] }] }));
    assert.equal(r.status, 'succeeded', JSON.stringify(r));
    const bodies = mock.upstream.log.map((q) => JSON.parse(q.body));
    const calcLine = (l) => `gid://shop/CalculatedLineItem/1-${lines.indexOf(l) + 1}`;
    assert.deepEqual(bodies.map((b) => [b.operationName, b.variables]), [
      ['orderEditBegin', { id: 'gid://shop/Order/SO-1003' }],
      ['orderEditSetQuantity', { id: 'gid://shop/CalculatedOrder/1', lineItemId: calcLine(kept), quantity: 7 }],
      ['orderEditSetQuantity', { id: 'gid://shop/CalculatedOrder/1', lineItemId: calcLine(removed), quantity: 0 }],
      ['orderEditCommit', { id: 'gid://shop/CalculatedOrder/1' }],
    ]);
    assert.equal((await entity(graphql, ORDERS, order.id)).amount, Math.round(7 * kept.UnitPrice * 100) / 100);
    assert.equal(await entity(graphql, ORDER_LINES, removed.id), undefined);
  });
});

describe('a call refused as a whole writes nothing and sends nothing', () => {
  const { order, lines } = sampleOrder('SO-1024');
  const other = sampleOrder('SO-1023').lines[0];

  async function refused(args, token, pattern) {
    mock.upstream.control({ reset: true });
    const before = await storedLines(order.id);
    const text = errorText(await submit({ id: order.id, formValues: values({ Status: 'Cancelled' }), ...args }, token));
    assert.match(text, pattern);
    assert.equal(mock.upstream.log.length, 0);
    assert.deepEqual(await storedLines(order.id), before);
    assert.notEqual((await entity(gw, ORDERS, order.id)).status, 'Cancelled');
    return text;
  }
  const update = (l, q) => ({ id: l.id, formValues: values({ Quantity: q }) });

  it('a list the form does not have', async () => {
    await refused({ childLists: [{ list: 'OrderLines', changes: [update(lines[0], 9)] }, { list: 'Payments', changes: [] }] }, undefined,
      /^Invalid argument 'childLists\[1\]\.list': 'Payments' is not a list of lines of the Orders form saved by endpoint OrderEdit; its lists are: OrderLines\.$/);
    await refused({ childLists: [{ list: 'Nope', changes: [] }] }, undefined,
      /^Invalid argument 'childLists\[0\]\.list': 'Nope' is not a list of lines/);
  });

  it('an unknown key, named by its full path', async () => {
    await refused({ childLists: [{ list: 'OrderLines', changes: [update(lines[0], 9), update(lines[1], 9),
      { formValues: [{ key: 'SKU', value: 'X-1' }, { key: 'Colour', value: 'red' }] }] }] }, undefined,
    /^Invalid argument 'childLists\[0\]\.changes\[2\]\.formValues\[1\]\.key': 'Colour' is not a field of this form; the fields of the OrderLines form are: Order, Product, SKU, Quantity, UnitPrice\.$/);
  });

  it('the line\'s order given, a required field cleared, a value of the wrong type', async () => {
    await refused({ childLists: [{ list: 'OrderLines', changes: [update(lines[0], '')] }] }, undefined,
      /^Invalid argument 'childLists\[0\]\.changes\[0\]\.formValues\[0\]\.value': 'Quantity' is required and cannot be cleared/);
    await refused({ childLists: [{ list: 'OrderLines', changes: [{ formValues: values({ Quantity: 'many' }) }] }] }, undefined,
      /^Invalid argument 'childLists\[0\]\.changes\[0\]\.formValues\[0\]\.value'/);
    await refused({ childLists: [{ list: 'OrderLines', changes: [{ formValues: values({ Order: order.id, Quantity: 1 }) }] }] }, undefined,
      /^Invalid argument 'childLists\[0\]\.changes\[0\]\.formValues\[0\]\.key': 'Order' is set by the call/);
  });

  it('changing or removing a line of another order', async () => {
    await refused({ childLists: [{ list: 'OrderLines', changes: [update(lines[0], 9), { id: other.id, op: 'remove' }] }] }, undefined,
      new RegExp(`^Invalid argument 'childLists\\[0\\]\\.changes\\[1\\]\\.id': '${other.id}' is not a line of this Orders record`));
    await refused({ childLists: [{ list: 'OrderLines', changes: [update(other, 9)] }] }, undefined,
      /^Invalid argument 'childLists\[0\]\.changes\[0\]\.id': '[0-9a-f-]+' is not a line of this Orders record/);
    assert.equal((await entity(gw, ORDER_LINES, other.id)).quantity, other.Quantity);
  });

  it('a caller who may not write the lines', async () => {
    await refused({ childLists: [{ list: 'OrderLines', changes: [update(lines[0], 9)] }] }, TOKENS.sales,
      /^Invalid argument 'childLists\[0\]\.list': you may read OrderLines records but not create, modify or remove them/);
  });

  it('the same line twice, an added line with an id, a removed line with values', async () => {
    await refused({ childLists: [{ list: 'OrderLines', changes: [update(lines[0], 9), { id: lines[0].id, op: 'remove' }] }] }, undefined,
      /^Invalid argument 'childLists\[0\]\.changes\[1\]\.id': line '[0-9a-f-]+' is given twice/);
    await refused({ childLists: [{ list: 'OrderLines', changes: [{ id: lines[0].id, op: 'add', formValues: values({ Quantity: 1 }) }] }] }, undefined,
      /^Invalid argument 'childLists\[0\]\.changes\[0\]\.id': an added line gets its id from the gateway/);
    await refused({ childLists: [{ list: 'OrderLines', changes: [{ id: lines[0].id, op: 'remove', formValues: values({ Quantity: 1 }) }] }] }, undefined,
      /^Invalid argument 'childLists\[0\]\.changes\[0\]\.formValues': a removed line takes no values/);
  });
});

describe('an idempotent replay of a call with lines', () => {
  it('returns the first outcome and changes nothing again; the key with other lines is refused', async () => {
    mock.upstream.control({ reset: true });
    const { order, lines } = sampleOrder('SO-1016');
    const args = { id: order.id, formValues: values({ Status: 'Open' }), idempotencyKey: `lines-${order.id}`, childLists: [{
      list: 'OrderLines', changes: [{ formValues: values({ SKU: 'W-100', Quantity: 1 }) }, { id: lines[0].id, op: 'remove' }] }] };
    const first = structured(await submit(args));
    assert.equal(first.status, 'succeeded', JSON.stringify(first));
    const sent = mock.upstream.log.length;
    const again = structured(await submit(args));
    assert.equal(again.replayed, true);
    assert.deepEqual({ ...again, replayed: false }, first);
    assert.equal(mock.upstream.log.length, sent);
    assert.equal((await storedLines(order.id)).size, lines.length);
    const other = { ...args, childLists: [{ list: 'OrderLines', changes: [{ formValues: values({ SKU: 'W-100', Quantity: 2 }) }] }] };
    assert.match(errorText(await submit(other)), /^Invalid argument 'idempotencyKey': 'lines-[0-9a-f-]+' was already used for a different submission/);
    assert.equal((await storedLines(order.id)).size, lines.length);
  });
});

describe('get_data_entry_form shows the lines', () => {
  const { order, lines } = sampleOrder('SO-1012');
  const sorted = [...lines].sort(bySku);
  const shown = (l) => [
    ...(l.Product ? [{ key: 'Product', value: l.Product }] : []),
    ...(l.SKU ? [{ key: 'SKU', value: l.SKU }] : []),
    { key: 'Quantity', value: String(l.Quantity) },
    ...(l.UnitPrice !== undefined ? [{ key: 'UnitPrice', value: String(l.UnitPrice) }] : []),
  ];

  it('as a nested list (Json) whose formValues submit takes back', async () => {
    const r = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'Json', id: order.id }));
    assert.equal(r.childLists.length, 1);
    const l = r.childLists[0];
    assert.equal(l.list, 'OrderLines');
    assert.equal(l.dataModelId, ORDER_LINES);
    assert.equal(l.removable, true);
    assert.deepEqual(l.fields.map((f) => f.key), ['Product', 'SKU', 'Quantity', 'UnitPrice']);
    assert.deepEqual(l.lines, sorted.map((x) => ({ id: x.id, formValues: shown(x) })));
    // The lines as shown go back unchanged: nothing but the tree runs.
    mock.upstream.control({ reset: true });
    const back = structured(await submit({ id: order.id, formValues: r.formValues,
      childLists: [{ list: 'OrderLines', changes: l.lines.map((x) => ({ id: x.id, formValues: x.formValues })) }] }));
    assert.equal(back.status, 'succeeded', JSON.stringify(back));
    assert.deepEqual(back.childLists[0].updated, sorted.map((x) => x.id));
  });

  it('as a repeated group per line (AdaptiveCard)', async () => {
    const r = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'AdaptiveCard', id: order.id }));
    const inputs = checkCard(r.card);
    sorted.forEach((x, n) => {
      assert.equal(inputs.get(`OrderLines[${n}].id`).value, x.id);
      assert.equal(inputs.get(`OrderLines[${n}].id`).isVisible, false);
      assert.equal(inputs.get(`OrderLines[${n}].Quantity`).value, x.Quantity);
      assert.equal(inputs.get(`OrderLines[${n}].SKU`).value, x.SKU);
    });
    assert.equal(inputs.has(`OrderLines[${sorted.length}].id`), false);
    assert.equal(inputs.has('OrderLines[0].Order'), false);
    const group = r.card.body.find((el) => el.type === 'Container' && el.items[0].text === `OrderLines (${lines.length})`);
    assert.equal(group.items.length, lines.length + 1);
    assert.ok(group.items.slice(1).every((g) => g.type === 'Container' && g.style === 'emphasis'));
  });

  it('an empty list for a new order, and none for a caller who may not write the lines', async () => {
    const r = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'Json' }));
    assert.deepEqual(r.childLists.map((l) => [l.list, l.lines.length]), [['OrderLines', 0]]);
    const sales = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'Json', id: order.id }, TOKENS.sales));
    assert.deepEqual(sales.childLists, []);
  });
});
