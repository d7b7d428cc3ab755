// SPDX-License-Identifier: AGPL-3.0-or-later
// The save action tree end to end through the official MCP client against
// the mock commerce system of tests/upstream/: the seed's worked order
// edit over REST (begin, the calculated order id and per-line session
// values, child saves in order, the commit) and over GraphQL (Multiple
// Lists), with the exact URLs and bodies the upstream received and the
// values written back to the records (the line saves read the calculated
// order id of the parent's run as {SESSION:Order.CalculatedOrderId}); lists
// of unequal length; a failure in each phase stopping the tree; 2xx
// answers that are not JSON failing the action that got them; values an
// earlier run extracted never read; a replay that is the first answer; a
// create the tree does not run for; and a gateway killed in the middle of
// a tree, whose record shows the failure after a restart.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { requestsTo, startMock } from './lib/upstream.mjs';
import {
  assertReplayOf, call, CREDS, entity, ENV, ORDER_LINES, ORDERS, pointAt, sampleData, structured, values,
} from './lib/forms.mjs';

let mock;
const started = [];

before(async () => {
  mock = await startMock({ credentials: CREDS });
});
after(async () => {
  for (const s of started) {
    await s.gw.stop();
    s.config.remove();
  }
  await mock?.close();
});

async function gateway(more) {
  const config = makeConfig({ edit: pointAt(mock.base, more) });
  const gw = await Gateway.start({ config, env: ENV });
  started.push({ gw, config });
  return gw;
}

// The GraphQL endpoints save the forms of Orders instead of the REST ones.
function useGraphql(dir) {
  const file = path.join(dir, 'endpoints.json');
  const doc = readJson(file);
  for (const e of doc.endpoints) e.formSubmit = e.name === 'OrderEditGraphql';
  writeJson(file, doc);
}

// An order of the sample with its lines as the commerce system lists them.
function sampleOrder(number) {
  const order = sampleData('Orders').find((o) => o.OrderNumber === number);
  const lines = sampleData('OrderLines').filter((l) => l.Order === order.id);
  return { order, lines };
}

function submitOrder(gw, id, formValues, extra = {}) {
  return call(gw, 'submit_data_entry_form', { dataModelId: ORDERS, id, system: 'Claude', formValues, ...extra });
}

const erp = (p) => `/erp${p}`;
const bySku = (a, b) => (a.SKU < b.SKU ? -1 : a.SKU > b.SKU ? 1 : 0);

describe('the REST order edit', () => {
  let gw;
  before(async () => {
    gw = await gateway();
  });

  it('begins the edit, sets each line with its line item id in SKU order, commits, and writes the results back', async () => {
    mock.upstream.control({ reset: true });
    const { order, lines } = sampleOrder('SO-1002');
    // A line changed through its own form first (OrderLines have no save tree).
    const changed = lines[1];
    structured(await call(gw, 'submit_data_entry_form', { dataModelId: ORDER_LINES, id: changed.id,
      formValues: values({ Quantity: 6 }) }));
    const quantity = (l) => (l.id === changed.id ? 6 : l.Quantity);
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'succeeded', JSON.stringify(r));
    assert.equal(r.endpoint, 'OrderEdit');
    // What the commerce system received, exactly.
    const seen = mock.upstream.log.filter((q) => q.path.startsWith('/erp/orders/SO-1002/edits'));
    const calc = 'calc-1';
    const itemId = (l) => `cli-1-${lines.indexOf(l) + 1}`; // the commerce system's order of lines
    const want = [
      { path: erp('/orders/SO-1002/edits/begin.json'), body: JSON.stringify({ reason: 'datagate form edit', status: 'Open' }) },
      ...[...lines].sort(bySku).map((l) => ({ path: erp(`/orders/SO-1002/edits/${calc}/line_items/${itemId(l)}.json`),
        body: JSON.stringify({ lineItem: { quantity: quantity(l) } }) })),
      { path: erp(`/orders/SO-1002/edits/${calc}/commit.json`), body: '' },
    ];
    assert.deepEqual(seen.map((q) => ({ path: q.path, body: q.body })), want);
    assert.ok(seen.every((q) => q.method === 'POST' && q.headers.authorization === `Bearer ${CREDS.erpToken}`));
    // The result: every action in execution order with its upstream call.
    assert.deepEqual(r.actions.map((a) => [a.type === 'ChildSaves' ? 'ChildSaves' : a.title, a.status]), [
      ['Begin Order Edit', 'succeeded'], ['Extract Edit Session', 'succeeded'], ['ChildSaves', 'succeeded'],
      ['Save Line Changes', 'succeeded']]);
    assert.equal(r.actions[0].upstream.status, 200);
    assert.equal(r.actions[1].sessionValues.CalculatedOrderId, calc);
    assert.deepEqual(r.actions[1].matched.LineItemId, { list: 'OrderLines', items: lines.length, matchedItems: lines.length,
      records: lines.length, listRecords: lines.length });
    assert.deepEqual(r.actions[2].saves.map((s) => s.id), [...lines].sort(bySku).map((l) => l.id));
    // Values written back: the session values and the response mappings.
    const total = Math.round(lines.reduce((s, l) => s + quantity(l) * l.UnitPrice, 0) * 100) / 100;
    const o = await entity(gw, ORDERS, order.id);
    assert.equal(o.calculatedOrderId, calc);
    assert.equal(o.amount, total);
    assert.equal(o.status, 'Open');
    for (const l of lines) {
      const e = await entity(gw, ORDER_LINES, l.id);
      assert.equal(e.lineItemId, itemId(l));
      assert.equal(e.unitPrice, l.UnitPrice);
    }
    const f = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'Json', id: order.id }));
    assert.equal(f.lastSubmission.status, 'succeeded');
    assert.equal(f.lastSubmission.endpoint, 'OrderEdit');
  });

  it('continues the traceparent of the request on every call of the tree, each with its own span id', async () => {
    mock.upstream.control({ reset: true });
    const { order } = sampleOrder('SO-1006');
    const trace = '0af7651916cd43dd8448eb211c80319c';
    const { client, transport } = await httpClient(gw, { headers: { traceparent: `00-${trace}-b7ad6b7169203331-01` } });
    try {
      const r = structured(await client.callTool({ name: 'submit_data_entry_form', arguments: {
        dataModelId: ORDERS, id: order.id, system: 'Claude', formValues: values({ Status: 'Open' }) } }));
      assert.equal(r.status, 'succeeded', JSON.stringify(r));
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
    const seen = mock.upstream.log.filter((q) => q.path.startsWith('/erp/orders/SO-1006/edits'));
    assert.ok(seen.length >= 3, `begin, line changes and commit: ${seen.length}`);
    const spans = seen.map((q) => {
      const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(q.headers.traceparent);
      assert.ok(m, q.headers.traceparent);
      assert.equal(m[1], trace);
      return m[2];
    });
    assert.equal(new Set(spans).size, spans.length, 'a new span id per call');
    assert.ok(!spans.includes('b7ad6b7169203331'));
  });

  it('saves a long list of children (120 lines, read from the store off the loop)', async () => {
    mock.upstream.control({ reset: true });
    const { order, lines } = sampleOrder('SO-1001');
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'succeeded', JSON.stringify(r).slice(0, 2000));
    const children = r.actions.find((a) => a.type === 'ChildSaves');
    assert.equal(children.count, lines.length);
    assert.equal(children.saves.length, 100); // detailed up to 100
    assert.equal(children.omitted, lines.length - 100);
    assert.equal(requestsTo(mock, erp('/orders/SO-1001/edits/begin.json')).length, 1);
    assert.equal(mock.upstream.log.filter((q) => q.path.includes('/line_items/')).length, lines.length);
    for (const l of lines.slice(0, 5))
      assert.match((await entity(gw, ORDER_LINES, l.id)).lineItemId, /^cli-1-\d+$/);
  });

  it('a replay of a tree run is the first answer, marked as a replay, and sends nothing', async () => {
    mock.upstream.control({ reset: true });
    const { order } = sampleOrder('SO-1004');
    const key = `replay-${randomUUID()}`;
    const first = await submitOrder(gw, order.id, values({ Status: 'Open' }), { idempotencyKey: key });
    assert.equal(structured(first).status, 'succeeded');
    const sent = mock.upstream.log.length;
    const again = await submitOrder(gw, order.id, values({ Status: 'Open' }), { idempotencyKey: key });
    assertReplayOf(again, first);
    assert.equal(mock.upstream.log.length, sent);
  });

  it('does not run the tree when a form creates an order (the edit is for existing orders)', async () => {
    mock.upstream.control({ reset: true });
    const r = structured(await call(gw, 'submit_data_entry_form', { dataModelId: ORDERS,
      formValues: values({ OrderNumber: `SO-${randomUUID().slice(0, 8)}` }) }));
    assert.equal(r.status, 'succeeded');
    assert.equal(r.created, true);
    assert.ok(r.actions.every((a) => a.status === 'skipped'));
    assert.equal(r.actions[0].reason, 'the action runs only when a record is modified');
    assert.equal(mock.upstream.log.length, 0);
  });

  describe('a failure stops the tree', () => {
    const { order, lines } = sampleOrder('SO-1019');
    const sorted = [...lines].sort(bySku);
    const calc = 'calc-1';
    const begin = erp('/orders/SO-1019/edits/begin.json');
    const commit = erp(`/orders/SO-1019/edits/${calc}/commit.json`);
    const linePath = (l) => erp(`/orders/SO-1019/edits/${calc}/line_items/cli-1-${lines.indexOf(l) + 1}.json`);
    const statuses = (r) => r.actions.map((a) => a.status);

    it('in the root action', async () => {
      mock.upstream.control({ reset: true, script: { path: begin, responses: [{ status: 503, json: { error: 'edits are paused' } }] } });
      const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
      assert.equal(r.status, 'failed');
      assert.equal(r.failedAction, 'Begin Order Edit (/endpoints/0/save)');
      assert.match(r.reason, /^upstream 'SampleErp' POST http:\/\/127\.0\.0\.1:\d+\/erp\/orders\/SO-1019\/edits\/begin\.json answered 503/);
      assert.deepEqual(statuses(r), ['failed', 'skipped', 'skipped', 'skipped']);
      assert.equal(r.actions[0].upstream.status, 503);
      assert.equal(r.actions[0].upstream.excerpt, '{"error":"edits are paused"}');
      assert.equal(mock.upstream.log.length, 1);
      // The record keeps the submitted value and shows the failure.
      assert.equal((await entity(gw, ORDERS, order.id)).status, 'Open');
      const f = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'Json', id: order.id }));
      assert.equal(f.lastSubmission.status, 'failed');
      assert.equal(f.lastSubmission.failedAction, r.failedAction);
      assert.equal(f.lastSubmission.reason, r.reason);
    });

    it('in a child save: the later children and the commit do not run', async () => {
      mock.upstream.control({ reset: true, script: { path: linePath(sorted[1]), responses: [{ status: 422, json: { error: 'quantity' } }] } });
      const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
      assert.equal(r.status, 'failed');
      assert.equal(r.failedAction, 'Set Line Quantity (/endpoints/1/save)');
      assert.deepEqual(statuses(r), ['succeeded', 'succeeded', 'failed', 'skipped']);
      const children = r.actions[2];
      assert.deepEqual(children.saves.map((s) => [s.id, s.status]), [[sorted[0].id, 'succeeded'], [sorted[1].id, 'failed']]);
      assert.equal(children.notStarted, lines.length - 2);
      assert.equal(children.saves[1].actions[0].upstream.status, 422);
      assert.deepEqual(mock.upstream.log.map((q) => q.path), [begin, linePath(sorted[0]), linePath(sorted[1])]);
    });

    it('in a post-child action', async () => {
      mock.upstream.control({ reset: true, script: { path: commit, responses: [{ status: 409, json: { error: 'locked' } }] } });
      const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
      assert.equal(r.status, 'failed');
      assert.equal(r.failedAction, 'Save Line Changes (/endpoints/0/save/actions/1)');
      assert.deepEqual(statuses(r), ['succeeded', 'succeeded', 'succeeded', 'failed']);
      assert.equal(mock.upstream.log.length, lines.length + 2);
    });
  });
});

// OrderEdit with an inner pre-child save whose answer an extraction reads,
// and OrderEditGraphql's commit without response mappings, accepting any
// answer.
function withReservation(dir) {
  const file = path.join(dir, 'endpoints.json');
  const doc = readJson(file);
  doc.endpoints[0].save.actions.splice(1, 0, {
    type: 'EndpointSave', title: 'Reserve Stock',
    request: { method: 'POST', path: '/orders/{OrderNumber}/reservations.json' },
    actions: [{ type: 'GetSessionValues', title: 'Read Reservation',
      extractions: [{ modelProperty: 'WarehouseId', connectorProperty: 'reservation.warehouse' }] }],
  });
  writeJson(file, doc);
}

describe('a 2xx answer that is not JSON', () => {
  let gw;
  before(async () => {
    gw = await gateway(withReservation);
  });
  const { order, lines } = sampleOrder('SO-1019');
  const begin = erp('/orders/SO-1019/edits/begin.json');
  const reserve = erp('/orders/SO-1019/reservations.json');
  const commit = erp('/orders/SO-1019/edits/calc-1/commit.json');
  const html = '<html><body>Service temporarily moved</body></html>';
  const reservation = { status: 200, json: { reservation: { warehouse: randomUUID() } } };
  const url = (p) => `http://127\\.0\\.0\\.1:\\d+${p.replaceAll('.', '\\.')}`;

  it('fails the root that answered it, not the first child', async () => {
    mock.upstream.control({ reset: true, script: { path: begin,
      responses: [{ status: 200, body: html, headers: { 'Content-Type': 'text/html; charset=utf-8' } }] } });
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'failed');
    assert.equal(r.failedAction, 'Begin Order Edit (/endpoints/0/save)');
    assert.match(r.reason, new RegExp(`^the answer of Begin Order Edit \\(/endpoints/0/save\\) is not JSON: upstream 'SampleErp' POST ${url(begin)} answered 200 with Content-Type text/html; charset=utf-8 and ${html.length} bytes, starting '<html><body>Service`));
    assert.ok(!r.reason.includes(CREDS.erpToken));
    assert.equal(r.actions[0].status, 'failed');
    assert.equal(r.actions[0].upstream.contentType, 'text/html; charset=utf-8');
    assert.equal(r.actions[0].upstream.excerpt, html);
    assert.deepEqual(r.actions.slice(1).map((a) => a.status), Array(5).fill('skipped'));
    assert.deepEqual(mock.upstream.log.map((q) => q.path), [begin]);
  });

  it('fails the root when a large answer does not parse (read off the loop)', async () => {
    const big = `{"calculatedOrder": {"id": "calc-1", "note": "${'x'.repeat(70000)}`;
    mock.upstream.control({ reset: true, script: { path: begin, responses: [{ status: 200, body: big }] } });
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.failedAction, 'Begin Order Edit (/endpoints/0/save)');
    assert.match(r.reason, new RegExp(`is not JSON: .* answered 200 with Content-Type application/json and ${big.length} bytes, starting '\\{"calculatedOrder"`));
    assert.deepEqual(mock.upstream.log.map((q) => q.path), [begin]);
  });

  it('fails an inner save whose answer an extraction reads', async () => {
    mock.upstream.control({ reset: true, script: { path: reserve, responses: [{ malformed: true }] } });
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'failed');
    assert.equal(r.failedAction, 'Reserve Stock (/endpoints/0/save/actions/1)');
    assert.match(r.reason, new RegExp(`^the answer of Reserve Stock \\(/endpoints/0/save/actions/1\\) is not JSON: upstream 'SampleErp' POST ${url(reserve)} answered 200 with Content-Type application/json and \\d+ bytes, starting '\\{"order"`));
    assert.deepEqual(r.actions.map((a) => [a.title ?? a.type, a.status]), [['Begin Order Edit', 'succeeded'],
      ['Extract Edit Session', 'succeeded'], ['Reserve Stock', 'failed'], ['Read Reservation', 'skipped'],
      ['ChildSaves', 'skipped'], ['Save Line Changes', 'skipped']]);
    assert.deepEqual(mock.upstream.log.map((q) => q.path), [begin, reserve]);
  });

  it('fails a post-child action whose answer its response mappings read', async () => {
    mock.upstream.control({ reset: true, script: { path: commit,
      responses: [{ status: 200, body: 'OK', headers: { 'Content-Type': 'text/plain' } }] } });
    mock.upstream.control({ script: { path: reserve, responses: [reservation] } });
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'failed');
    assert.equal(r.failedAction, 'Save Line Changes (/endpoints/0/save/actions/2)');
    assert.match(r.reason, new RegExp(`^the answer of Save Line Changes \\(/endpoints/0/save/actions/2\\) is not JSON: upstream 'SampleErp' POST ${url(commit)} answered 200 with Content-Type text/plain and 2 bytes, starting 'OK'$`));
    assert.equal(r.actions.at(-1).upstream.excerpt, 'OK');
    assert.equal(mock.upstream.log.length, lines.length + 3);
  });
});

describe('an action that accepts any answer', () => {
  // OrderEditGraphql for forms, its commit a notice without response
  // mappings; with expect given, it accepts any answer.
  const notifying = (expect) => (dir) => {
    const file = path.join(dir, 'endpoints.json');
    const doc = readJson(file);
    for (const e of doc.endpoints) e.formSubmit = e.name === 'OrderEditGraphql';
    const commitAction = doc.endpoints[2].save.actions[1];
    delete commitAction.responseMappings;
    commitAction.request = { method: 'POST', path: '/orders/{OrderNumber}/edits/commit-notice' };
    if (expect) commitAction.expect = expect;
    writeJson(file, doc);
  };
  const { order } = sampleOrder('SO-1003');
  const notice = erp('/orders/SO-1003/edits/commit-notice');
  const answer = { status: 200, body: 'accepted', headers: { 'Content-Type': 'text/plain' } };

  it('succeeds on a 2xx that is not JSON with "expect": "any"', async () => {
    const gw = await gateway(notifying('any'));
    mock.upstream.control({ reset: true, script: { path: notice, responses: [answer] } });
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'succeeded', JSON.stringify(r));
    assert.equal(r.actions.at(-1).upstream.status, 200);
    assert.equal(requestsTo(mock, notice).length, 1);
  });

  it('fails on the same answer by default', async () => {
    const gw = await gateway(notifying(null));
    mock.upstream.control({ reset: true, script: { path: notice, responses: [answer] } });
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'failed');
    assert.equal(r.failedAction, 'Save Line Changes (/endpoints/2/save/actions/1)');
    assert.match(r.reason, /is not JSON: .* answered 200 with Content-Type text\/plain and 8 bytes, starting 'accepted'$/);
  });
});

describe('values extracted in an earlier run', () => {
  let gw;
  before(async () => {
    gw = await gateway();
  });
  const noValue = 'CalculatedOrderId has no value in this run: the extraction at /endpoints/0/save/actions/0/extractions/0 found nothing at calculatedOrder.id';

  it('are never read by a child: a begin answer without the id sends nothing more', async () => {
    mock.upstream.control({ reset: true });
    const { order, lines } = sampleOrder('SO-1002');
    const begin = erp('/orders/SO-1002/edits/begin.json');
    const firstRun = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(firstRun.status, 'succeeded', JSON.stringify(firstRun));
    assert.equal((await entity(gw, ORDERS, order.id)).calculatedOrderId, 'calc-1');
    // The second begin answers lines but no calculated order id.
    const lineItems = lines.map((l, k) => ({ id: `cli-9-${k + 1}`, sku: l.SKU, quantity: l.Quantity }));
    mock.upstream.control({ reset: true, script: { path: begin, responses: [{ status: 200, json: { calculatedOrder: { lineItems } } }] } });
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'failed');
    assert.equal(r.failedAction, 'Set Line Quantity (/endpoints/1/save)');
    assert.ok(r.reason.startsWith(noValue), r.reason);
    assert.deepEqual(mock.upstream.log.map((q) => q.path), [begin]);
    assert.deepEqual(r.actions.map((a) => a.status), ['succeeded', 'succeeded', 'failed', 'skipped']);
  });

  it('are never read by the same tree: the commit is not sent', async () => {
    // A new order has no lines; the commerce system's answers are scripted.
    const number = `SO-9${randomUUID().slice(0, 6)}`;
    const created = structured(await call(gw, 'submit_data_entry_form', { dataModelId: ORDERS,
      formValues: values({ OrderNumber: number }) }));
    const begin = erp(`/orders/${number}/edits/begin.json`);
    mock.upstream.control({ reset: true, script: { path: begin,
      responses: [{ status: 200, json: { calculatedOrder: { id: 'calc-old', lineItems: [] } } }] } });
    mock.upstream.control({ script: { path: erp(`/orders/${number}/edits/calc-old/commit.json`),
      responses: [{ status: 200, json: { order: { total: { amount: 1 } } } }] } });
    const firstRun = structured(await submitOrder(gw, created.id, values({ Status: 'Open' })));
    assert.equal(firstRun.status, 'succeeded', JSON.stringify(firstRun));
    assert.equal((await entity(gw, ORDERS, created.id)).calculatedOrderId, 'calc-old');
    mock.upstream.control({ reset: true, script: { path: begin,
      responses: [{ status: 200, json: { calculatedOrder: { lineItems: [] } } }] } });
    const r = structured(await submitOrder(gw, created.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'failed');
    assert.equal(r.failedAction, 'Save Line Changes (/endpoints/0/save/actions/1)');
    assert.ok(r.reason.startsWith(noValue), r.reason);
    assert.deepEqual(mock.upstream.log.map((q) => q.path), [begin]);
  });
});

describe('the GraphQL order edit', () => {
  let gw;
  before(async () => {
    gw = await gateway(useGraphql);
  });

  it('matches the disconnected original and calculated lists by position (Multiple Lists)', async () => {
    mock.upstream.control({ reset: true });
    const { order, lines } = sampleOrder('SO-1003');
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    assert.equal(r.status, 'succeeded', JSON.stringify(r));
    assert.equal(r.endpoint, 'OrderEditGraphql');
    const bodies = requestsTo(mock, '/erp/graphql', 'POST').map((q) => JSON.parse(q.body));
    const calcLine = (l) => `gid://shop/CalculatedLineItem/1-${lines.indexOf(l) + 1}`;
    assert.deepEqual(bodies.map((b) => [b.operationName, b.variables]), [
      ['orderEditBegin', { id: 'gid://shop/Order/SO-1003' }],
      ...[...lines].sort((a, b) => (a.id < b.id ? -1 : 1)).map((l) => ['orderEditSetQuantity',
        { id: 'gid://shop/CalculatedOrder/1', lineItemId: calcLine(l), quantity: l.Quantity }]),
      ['orderEditCommit', { id: 'gid://shop/CalculatedOrder/1' }],
    ]);
    assert.match(bodies[0].query, /^mutation orderEditBegin/);
    for (const l of lines)
      assert.equal((await entity(gw, ORDER_LINES, l.id)).calculatedLineItemId, calcLine(l));
    const total = Math.round(lines.reduce((s, l) => s + l.Quantity * l.UnitPrice, 0) * 100) / 100;
    assert.equal((await entity(gw, ORDERS, order.id)).amount, total);
  });

  it('skips a Multiple Lists extraction whose lists differ in length, with a warning logged and reported', async () => {
    const { order, lines } = sampleOrder('SO-1003');
    const edges = (list) => ({ edges: list.map((node) => ({ node })) });
    mock.upstream.control({ reset: true, script: { path: '/erp/graphql', responses: [{ status: 200, json: { data: { orderEditBegin: {
      calculatedOrder: { id: 'gid://shop/CalculatedOrder/9',
        originalOrder: { lineItems: edges(lines.map((l) => ({ id: l.id }))) },
        lineItems: edges(lines.slice(1).map((l, k) => ({ id: `gid://x/${k}` }))) } } } } }] } });
    const r = structured(await submitOrder(gw, order.id, values({ Status: 'Open' })));
    const warning = `CalculatedLineItemId: the lists have different numbers of items (original ${lines.length}, calculated ${lines.length - 1}); the extraction is skipped`;
    assert.deepEqual(r.actions[1].warnings, [warning]);
    assert.ok(r.warnings.some((w) => w.endsWith(warning)));
    await gw.waitForLog((l) => l.event === 'session_values_skipped' && l.msg === warning);
    // Without their value the child saves cannot run: the first fails.
    assert.equal(r.status, 'failed');
    assert.equal(r.failedAction, 'Set Line Quantity (/endpoints/3/save)');
    assert.match(r.reason, /^\{SESSION:CalculatedLineItemId\} has no value for this record/);
    assert.equal(requestsTo(mock, '/erp/graphql').length, 1);
  });
});

describe('a gateway killed in the middle of a tree', () => {
  it('leaves the record showing the failure after a restart', async () => {
    const config = makeConfig({ edit: pointAt(mock.base) });
    let gw = await Gateway.start({ config, env: ENV });
    const { order } = sampleOrder('SO-1007');
    const commit = erp('/orders/SO-1007/edits/calc-1/commit.json');
    mock.upstream.control({ reset: true, script: { path: commit, responses: [{ hang: true }] } });
    const key = `kill-${randomUUID()}`;
    const pending = submitOrder(gw, order.id, values({ Status: 'Open' }), { idempotencyKey: key }).catch((e) => e);
    while (requestsTo(mock, commit).length === 0) await new Promise((r) => setTimeout(r, 20));
    gw.child.kill('SIGKILL');
    await gw.waitExit();
    await pending;
    gw = await Gateway.start({ config, env: ENV });
    started.push({ gw, config });
    const log = await gw.waitForLog((l) => l.event === 'submissions_interrupted');
    assert.equal(log.count, 1);
    const f = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'Json', id: order.id }));
    assert.equal(f.lastSubmission.status, 'failed');
    assert.match(f.lastSubmission.reason, /^interrupted: the gateway process stopped before the save tree finished/);
    assert.equal((await entity(gw, ORDERS, order.id)).status, 'Open');
    // A retry with the same key answers with that outcome instead of saving twice.
    const again = structured(await submitOrder(gw, order.id, values({ Status: 'Open' }), { idempotencyKey: key }));
    assert.equal(again.replayed, true);
    assert.equal(again.status, 'failed');
    assert.equal(again.reason, f.lastSubmission.reason);
    assert.equal(requestsTo(mock, erp('/orders/SO-1007/edits/begin.json')).length, 1);
  });
});
