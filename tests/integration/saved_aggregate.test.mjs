// SPDX-License-Identifier: AGPL-3.0-or-later
// aggregate_saved_query through the official MCP client against the mock
// upstream of tests/upstream/: totals and groups over the whole live answer
// (also past the maxResults that caps execute_saved_query), each function,
// the fields a role hides, every refused argument and upstream failures.
// Every expectation is computed here from the mock's own records.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { defaultCredentials, sampleOrder, startMock } from './lib/upstream.mjs';

const creds = { ...defaultCredentials(), erpToken: `erp-${randomUUID()}`, financeUser: 'finance', financePassword: `pw-${randomUUID()}` };
const env = {
  DATAGATE_SAMPLE_ERP_TOKEN: creds.erpToken,
  DATAGATE_SAMPLE_FINANCE_USER: creds.financeUser,
  DATAGATE_SAMPLE_FINANCE_PASSWORD: creds.financePassword,
};

let mock;
let config;
let gw;
let tmp;
const ids = {};
const clients = {};

function editConfig(dir) {
  const conns = readJson(path.join(dir, 'connectors.json'));
  for (const c of conns.connectors) {
    c.baseUrl = c.baseUrl.replace('http://127.0.0.1:8091', mock.base);
    if (c.auth.tokenUrl) c.auth.tokenUrl = c.auth.tokenUrl.replace('http://127.0.0.1:8091', mock.base);
  }
  writeJson(path.join(dir, 'connectors.json'), conns);
  for (const q of readJson(path.join(dir, 'saved_queries.json')).savedQueries) ids[q.name] = q.id;
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-saved-aggregate-'));
  mock = await startMock({ tlsDir: tmp, credentials: creds });
  config = makeConfig({ edit: editConfig });
  gw = await Gateway.start({ config, env });
  for (const user of ['admin', 'sales', 'auditor']) clients[user] = await httpClient(gw, { token: TOKENS[user] });
});
after(async () => {
  for (const { client } of Object.values(clients)) await client.close();
  await gw?.stop();
  config?.remove();
  await mock?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const inputs = (values) => Object.entries(values).map(([key, value]) => ({ key, value: String(value) }));

async function call(name, args, user = 'admin') {
  return clients[user].client.callTool({ name, arguments: args });
}

async function aggregate(query, values, rest, user) {
  const r = await call('aggregate_saved_query', { savedQueryId: ids[query], inputs: inputs(values), ...rest }, user);
  assert.notEqual(r.isError, true, `tool failed: ${JSON.stringify(r.content)}`);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  return r.structuredContent;
}

function refused(r, param) {
  assert.equal(r.isError, true, `expected an error naming ${param}: ${JSON.stringify(r).slice(0, 300)}`);
  const text = r.content[0].text;
  assert.ok(text.includes(`'${param}'`), text);
  return text;
}

// The mock's GET /erp/orders: the first max(limit * 5, 50) sample orders that
// match, at most limit.
function mockOrders({ customer, status, limit }) {
  const all = Array.from({ length: Math.max(limit * 5, 50) }, (_, i) => sampleOrder(i));
  return all.filter((o) => o.customer.includes(customer) && o.status === status).slice(0, limit);
}

const sum = (xs) => xs.reduce((s, x) => s + x, 0);
const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

describe('aggregate_saved_query', () => {
  it('is listed with a single-type schema that has no joinFilter or reference', async () => {
    const { tools } = await clients.admin.client.listTools();
    const tool = tools.find((t) => t.name === 'aggregate_saved_query');
    assert.ok(tool, 'listed');
    assert.equal(tool.annotations.readOnlyHint, true);
    const clause = tool.inputSchema.properties.aggregations.items;
    assert.deepEqual(Object.keys(clause.properties).sort(), ['alias', 'function', 'propertyName']);
    assert.deepEqual(Object.keys(tool.inputSchema.properties.groupBy.items.properties), ['propertyName']);
  });

  it('aggregates every record of the answer, past the maxResults of execute_saved_query', async () => {
    const values = { CustomerName: 'Acme', Status: 'Open', Limit: 400 };
    const want = mockOrders({ customer: 'Acme', status: 'Open', limit: 400 });
    assert.ok(want.length > 100, `the answer (${want.length}) holds more than maxResults`);
    const executed = await call('execute_saved_query', { savedQueryId: ids.OpenOrdersByCustomer, inputs: inputs(values) });
    assert.equal(executed.structuredContent.truncated, true);
    const r = await aggregate('OpenOrdersByCustomer', values, {
      aggregations: [
        { function: 'Count' }, { function: 'Sum', propertyName: 'Amount' }, { function: 'Average', propertyName: 'amount', alias: 'Mean' },
        { function: 'Min', propertyName: 'OrderDate' }, { function: 'Max', propertyName: 'OrderDate' },
        { function: 'DistinctCount', propertyName: 'OrderNumber' }, { function: 'Max', propertyName: 'Amount' },
      ],
    });
    const amounts = want.map((o) => o.total.amount);
    const days = want.map((o) => o.placedAt.slice(0, 10)).sort();
    assert.equal(r.matchedCount, want.length);
    assert.deepEqual(r.groupByProperties, []);
    assert.equal(r.rows.length, 1);
    const a = r.rows[0].aggregates;
    assert.deepEqual(r.rows[0].groupKey, {});
    assert.deepEqual(Object.keys(a), ['count', 'sum_Amount', 'mean', 'min_OrderDate', 'max_OrderDate', 'distinctCount_OrderNumber', 'max_Amount']);
    assert.equal(a.count, want.length);
    assert.ok(near(a.sum_Amount, sum(amounts)), `${a.sum_Amount} vs ${sum(amounts)}`);
    assert.ok(near(a.mean, sum(amounts) / amounts.length));
    assert.equal(a.min_OrderDate, days[0]);
    assert.equal(a.max_OrderDate, days.at(-1));
    assert.equal(a.distinctCount_OrderNumber, new Set(want.map((o) => o.number)).size);
    assert.equal(a.max_Amount, Math.max(...amounts));
  });

  it('groups by a field, in key order, as aggregate_entities answers', async () => {
    const r = await aggregate('SearchOrders', { MinAmount: 1100 }, {
      aggregations: [{ function: 'Count' }, { function: 'Sum', propertyName: 'Amount' }],
      groupBy: [{ propertyName: 'status' }],
    });
    const want = Array.from({ length: 30 }, (_, i) => sampleOrder(i)).filter((o) => o.total.amount >= 1100 && ['Open', 'Shipped'].includes(o.status));
    const statuses = [...new Set(want.map((o) => o.status))].sort();
    assert.equal(statuses.length, 2);
    assert.equal(r.matchedCount, want.length);
    assert.deepEqual(r.groupByProperties, ['Status']);
    assert.deepEqual(r.rows.map((row) => row.groupKey), statuses.map((s) => ({ status: s })));
    for (const row of r.rows) {
      const mine = want.filter((o) => o.status === row.groupKey.status);
      assert.equal(row.aggregates.count, mine.length);
      assert.ok(near(row.aggregates.sum_Amount, sum(mine.map((o) => o.total.amount))));
    }
  });

  it('leaves out what a role hides, and the same fields work for a role that sees them', async () => {
    const args = { aggregations: [{ function: 'Sum', propertyName: 'CreditLimit' }] };
    const text = refused(await call('aggregate_saved_query', { savedQueryId: ids.CustomerCredit, inputs: inputs({ CustomerName: 'e' }), ...args }, 'sales'),
      'aggregations[0].propertyName');
    assert.ok(!text.includes('CreditLimit that'), text);
    const r = await aggregate('CustomerCredit', { CustomerName: 'e' }, args);
    // Acme Corporation, Globex and Initech all hold an "e"; Initech's limit is the text "75000".
    assert.ok(near(r.rows[0].aggregates.sum_CreditLimit, 250000 + 120000.5 + 75000));
    refused(await call('aggregate_saved_query', { savedQueryId: ids.SearchOrders, aggregations: [{ function: 'Count' }] }, 'auditor'), 'savedQueryId');
  });

  it('refuses each argument it does not take, saying why', async () => {
    const base = { savedQueryId: ids.SearchOrders };
    const cases = [
      [{ aggregations: [{ function: 'Count', joinFilter: { reference: 'Customer', condition: {} } }] }, 'aggregations[0].joinFilter', 'takes no joinFilter'],
      [{ aggregations: [{ function: 'Count' }], groupBy: [{ reference: 'Customer', propertyName: 'Region' }] }, 'groupBy[0].reference', 'takes no reference'],
      [{ aggregations: [{ function: 'Count' }], groupBy: [{ propertyName: 'OrderDate' }] }, 'groupBy[0].propertyName', 'fields it returns: OrderNumber, Status, Amount'],
      [{ aggregations: [{ function: 'Sum', propertyName: 'Status' }] }, 'aggregations[0].propertyName', 'fields Sum can use: Amount'],
      [{ aggregations: [{ function: 'Count', propertyName: 'Amount' }] }, 'aggregations[0].propertyName', 'takes no propertyName'],
      [{ aggregations: [] }, 'aggregations', null],
      [{ aggregations: [{ function: 'Count' }], inputs: [{ key: 'Nope', value: '1' }] }, 'inputs[0].key', null],
    ];
    for (const [args, param, part] of cases) {
      const text = refused(await call('aggregate_saved_query', { ...base, ...args }), param);
      if (part) assert.ok(text.includes(part), `${param}: ${text}`);
    }
  });

  it('names the connector and the call when the upstream fails', async () => {
    const r = await call('aggregate_saved_query', { savedQueryId: ids.LiveOrderStatus, inputs: inputs({ OrderNumber: 'nope' }), aggregations: [{ function: 'Count' }] });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /Saved Query 'LiveOrderStatus' failed: .*SampleErp/);
  });
});
