// SPDX-License-Identifier: AGPL-3.0-or-later
// aggregate_entities through the official MCP SDK client against the
// sample configuration and data: every function, default and explicit
// aliases, filters before aggregation, grouping by own, Outbound and
// Inbound keys with their null groups, joinFilter in both forms and
// conditional ratios, the grouped cap, the refusals, and permissions.
// Expected answers come from an independent evaluation of the sample
// data (lib/aggregate-oracle.mjs).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { assertSameAnswer, loadData, Oracle } from './lib/aggregate-oracle.mjs';
import { Gateway, httpClient, makeConfig, TOKENS } from './lib/gateway.mjs';

const ORDERS = '8a03cbc2-7f01-4d47-bdf0-0755336a3a70';
const CUSTOMERS = 'cb94c4ab-8c1d-4fae-b582-9746427cad35';

let gw;
let oracle;
const clients = {};

before(async () => {
  gw = await Gateway.start();
  oracle = new Oracle(loadData(gw.config.dir));
  for (const user of ['admin', 'sales', 'auditor']) clients[user] = await httpClient(gw, { token: TOKENS[user] });
});
after(async () => {
  for (const { client, transport } of Object.values(clients)) {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
  await gw.stop();
});

async function call(args, { user = 'admin', model = ORDERS } = {}) {
  return clients[user].client.callTool({ name: 'aggregate_entities', arguments: { dataModelId: model, ...args } });
}

// The result's text item holds the same JSON as structuredContent.
async function answer(args, opts) {
  const r = await call(args, opts);
  assert.notEqual(r.isError, true, `tool failed: ${JSON.stringify(r.content)}`);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  return r.structuredContent;
}

async function refusal(args, opts) {
  const r = await call(args, opts);
  assert.equal(r.isError, true, `expected a refusal, got ${JSON.stringify(r.structuredContent)}`);
  return r.content[0].text;
}

async function agrees(args, model = 'Orders', opts = {}) {
  const got = await answer(args, { model: model === 'Orders' ? ORDERS : CUSTOMERS, ...opts });
  assertSameAnswer(assert, got, oracle.aggregate(model, args), JSON.stringify(args));
  return got;
}

const onTime = {
  function: 'Count',
  alias: 'on_time',
  joinFilter: {
    reference: 'Customer',
    condition: { localProperty: 'DueDate', operator: 'LessThanEqualTo', foreignProperty: 'RenewalDate' },
  },
};

describe('tools/list', () => {
  it('lists aggregate_entities with its schemas', async () => {
    const { tools } = await clients.admin.client.listTools();
    const t = tools.find((x) => x.name === 'aggregate_entities');
    assert.ok(t, 'aggregate_entities is listed');
    assert.deepEqual(t.inputSchema.required, ['dataModelId', 'aggregations']);
    assert.deepEqual(t.inputSchema.properties.aggregations.items.properties.function.enum,
      ['Sum', 'Average', 'Count', 'Min', 'Max', 'DistinctCount']);
    assert.deepEqual(t.outputSchema.required, ['matchedCount', 'groupByProperties', 'rows']);
    assert.equal(t.annotations.readOnlyHint, true);
    assert.match(t.description, /100,000/);
  });
});

describe('functions and aliases', () => {
  it('computes every function with default keys', async () => {
    const got = await agrees({
      aggregations: [
        { function: 'Sum', propertyName: 'Amount' },
        { function: 'Average', propertyName: 'Quantity' },
        { function: 'Count' },
        { function: 'Min', propertyName: 'Amount' },
        { function: 'Max', propertyName: 'Quantity' },
        { function: 'DistinctCount', propertyName: 'Customer' },
        { function: 'DistinctCount', propertyName: 'Status' },
      ],
    });
    assert.deepEqual(Object.keys(got.rows[0].aggregates),
      ['sum_Amount', 'average_Quantity', 'count', 'min_Amount', 'max_Quantity', 'distinctCount_Customer', 'distinctCount_Status']);
    assert.deepEqual(got.rows[0].groupKey, {});
    assert.deepEqual(got.groupByProperties, []);
    assert.ok(Number.isInteger(got.rows[0].aggregates.max_Quantity));
  });

  it('takes Min and Max of Date and DateTime properties', async () => {
    const got = await agrees({
      aggregations: [
        { function: 'Min', propertyName: 'OrderDate' },
        { function: 'Max', propertyName: 'DueDate' },
      ],
    });
    assert.match(got.rows[0].aggregates.min_OrderDate, /^\d{4}-\d{2}-\d{2}$/);
    const c = await agrees({ aggregations: [{ function: 'Max', propertyName: 'CreatedAt' }] }, 'Customers');
    assert.match(c.rows[0].aggregates.max_CreatedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('camelCases explicit aliases at the first letter and finds names in any case', async () => {
    const got = await agrees({
      aggregations: [
        { function: 'Sum', propertyName: 'amount', alias: 'TotalAmount' },
        { function: 'Count', alias: 'on_time' },
        { function: 'Average', propertyName: 'QUANTITY', alias: 'x' },
      ],
    });
    assert.deepEqual(Object.keys(got.rows[0].aggregates), ['totalAmount', 'on_time', 'x']);
  });

  it('refuses two clauses with one result key', async () => {
    const text = await refusal({ aggregations: [{ function: 'Count' }, { function: 'Sum', propertyName: 'Amount', alias: 'Count' }] });
    assert.match(text, /aggregations\[1\]\.alias/);
    assert.match(text, /'count' is already used/);
  });

  it('answers zero matches with a totals row of 0 sums and null averages', async () => {
    const got = await agrees({
      aggregations: [{ function: 'Sum', propertyName: 'Amount' }, { function: 'Count' }, { function: 'Average', propertyName: 'Amount' }],
      queryParameterGroups: [{ parameters: [{ operator: 'EqualTo', propertyName: 'OrderNumber', value: 'none' }] }],
    });
    assert.deepEqual(got.rows[0].aggregates, { sum_Amount: 0, count: 0, average_Amount: null });
  });
});

describe('filters apply before aggregating', () => {
  it('with own, Outbound and Inbound reference filters', async () => {
    const aggregations = [{ function: 'Sum', propertyName: 'Amount' }, { function: 'Count' }];
    const cases = [
      [{ parameters: [{ operator: 'EqualTo', propertyName: 'Status', value: 'open' }] }],
      [{ andOrOperator: 'Or', parameters: [
        { operator: 'EqualTo', propertyName: 'Status', value: 'Draft' },
        { operator: 'EqualTo', propertyName: 'Status', value: 'null', valueType: 'null' }] }],
      [{ parameters: [{ reference: 'Customer', operator: 'EqualTo', propertyName: 'Region', value: 'EMEA' }] }],
      [{ parameters: [{ reference: 'OrderLines', operator: 'StartsWith', propertyName: 'SKU', value: 'gz' }] }],
      [{ parameters: [{ operator: 'GreaterThanEqualTo', propertyName: 'OrderDate', value: '2024-06-01' }] },
        { parameters: [{ operator: 'NotEqualTo', propertyName: 'Status', value: 'Shipped' }] }],
    ];
    const counts = new Set();
    for (const queryParameterGroups of cases) {
      const got = await agrees({ aggregations, queryParameterGroups });
      counts.add(got.matchedCount);
    }
    assert.ok(counts.size >= 4, 'the filters select different records');
  });
});

describe('grouping', () => {
  it('by an own property, keeping the null group', async () => {
    const got = await agrees({ aggregations: [{ function: 'Sum', propertyName: 'Amount' }, { function: 'Count' }], groupBy: [{ propertyName: 'Status' }] });
    assert.deepEqual(got.groupByProperties, ['Status']);
    assert.ok(got.rows.some((r) => r.groupKey.status === null), 'null group');
    assert.equal(got.rows.reduce((n, r) => n + r.aggregates.count, 0), got.matchedCount);
  });

  it('by a related Customer property, labelled customer.Region, with a null group', async () => {
    const got = await agrees({ aggregations: [{ function: 'Count' }, { function: 'Average', propertyName: 'Amount' }], groupBy: [{ propertyName: 'Region', reference: 'Customer' }] });
    assert.deepEqual(got.groupByProperties, ['Customer.Region']);
    assert.deepEqual(Object.keys(got.rows[0].groupKey), ['customer.Region']);
    assert.equal(got.rows[0].groupKey['customer.Region'], null, 'the null group sorts first');
  });

  it('by an Inbound reference: a row per distinct value, each order once per value', async () => {
    const got = await agrees({ aggregations: [{ function: 'Count' }, { function: 'Sum', propertyName: 'Amount' }], groupBy: [{ propertyName: 'SKU', reference: 'OrderLines' }] });
    const total = got.rows.reduce((n, r) => n + r.aggregates.count, 0);
    assert.ok(total > got.matchedCount, 'an order with several SKUs counts under each');
    assert.ok(got.rows.some((r) => r.groupKey['orderLines.SKU'] === null), 'orders without lines');
  });

  it('by several keys, own and related', async () => {
    await agrees({
      aggregations: [{ function: 'Count' }, { function: 'Max', propertyName: 'OrderDate' }],
      groupBy: [{ propertyName: 'Status' }, { propertyName: 'Region', reference: 'Customer' }],
      queryParameterGroups: [{ parameters: [{ operator: 'NotEqualTo', propertyName: 'Status', value: 'Cancelled' }] }],
    });
    await agrees({
      aggregations: [{ function: 'Count' }],
      groupBy: [{ propertyName: 'SKU', reference: 'OrderLines' }, { propertyName: 'Product', reference: 'OrderLines' }],
    });
  });
});

describe('joinFilter', () => {
  it('gives a conditional ratio with the reference form', async () => {
    const got = await agrees({ aggregations: [onTime, { function: 'Count' }] });
    const { on_time: num, count: den } = got.rows[0].aggregates;
    assert.ok(num > 0 && num < den, `a true ratio: ${num}/${den}`);
  });

  it('gives the same answer with entity and on', async () => {
    const explicit = {
      ...onTime,
      joinFilter: { entity: 'Customers', on: { localProperty: 'Customer', foreignProperty: 'id' }, condition: onTime.joinFilter.condition },
    };
    const a = await agrees({ aggregations: [onTime, { function: 'Count' }] });
    const b = await agrees({ aggregations: [explicit, { function: 'Count' }] });
    assert.deepEqual(a, b);
  });

  it('conditions a sum on a value, typed off the base property', async () => {
    await agrees({
      aggregations: [
        { function: 'Sum', propertyName: 'Amount', alias: 'late', joinFilter: { reference: 'Customer', condition: { localProperty: 'DueDate', operator: 'GreaterThan', foreignProperty: 'RenewalDate' } } },
        { function: 'Sum', propertyName: 'Amount', alias: 'recent', joinFilter: { reference: 'Customer', condition: { localProperty: 'OrderDate', operator: 'GreaterThanEqualTo', value: '2024-06-01' } } },
        { function: 'Sum', propertyName: 'Amount' },
      ],
    });
  });

  it('is refused together with groupBy', async () => {
    const text = await refusal({ aggregations: [onTime, { function: 'Count' }], groupBy: [{ propertyName: 'Status' }] });
    assert.match(text, /aggregations\[0\]\.joinFilter/);
    assert.match(text, /cannot be combined with groupBy/);
    assert.match(text, /request them separately/);
  });

  it('joins one-to-one only', async () => {
    let text = await refusal({ aggregations: [{ ...onTime, joinFilter: { reference: 'OrderLines', condition: { localProperty: 'Amount', operator: 'GreaterThan', value: 1 } } }] });
    assert.match(text, /Inbound reference.*one-to-one only/);
    text = await refusal({ aggregations: [{ ...onTime, joinFilter: { entity: 'Customer', on: { localProperty: 'Customer', foreignProperty: 'Name' }, condition: onTime.joinFilter.condition } }] });
    assert.match(text, /foreignProperty must be id/);
  });
});

describe('refusals', () => {
  it('refuses summing a parent\'s child values, however it is asked', async () => {
    for (const clause of [
      { function: 'Sum', propertyName: 'OrderLines' },
      { function: 'Sum', propertyName: 'OrderLines.Quantity' },
      { function: 'Sum', propertyName: 'Quantity', reference: 'OrderLines' },
    ]) {
      const text = await refusal({ aggregations: [clause] });
      assert.match(text, /aggregation over a related collection \(summing a parent's child values\) is not supported/);
      assert.match(text, /OrderLines Data Model/);
    }
  });

  it('refuses a function on a property of the wrong type, and Count with a property', async () => {
    let text = await refusal({ aggregations: [{ function: 'Average', propertyName: 'Status' }] });
    assert.match(text, /Invalid argument 'aggregations\[0\]\.propertyName': Average needs a numeric property/);
    text = await refusal({ aggregations: [{ function: 'Count', propertyName: 'Amount' }] });
    assert.match(text, /takes no propertyName/);
    text = await refusal({ aggregations: [{ function: 'Median', propertyName: 'Amount' }] });
    assert.match(text, /aggregations\[0\]\.function/);
  });
});

describe('the grouped cap', () => {
  it('refuses a grouped call over the configured cap with the matched count; totals have none', async () => {
    const conf = makeConfig({ server: { maxGroupedAggregateRecords: 10 } });
    const small = await Gateway.start({ config: conf });
    const { client, transport } = await httpClient(small);
    try {
      const grouped = { dataModelId: ORDERS, aggregations: [{ function: 'Count' }], groupBy: [{ propertyName: 'Status' }] };
      const over = await client.callTool({ name: 'aggregate_entities', arguments: grouped });
      assert.equal(over.isError, true);
      const all = oracle.data.Orders.length;
      assert.match(over.content[0].text, new RegExp(`matches ${all} Orders records, more than the 10`));
      assert.match(over.content[0].text, /Narrow queryParameterGroups, for example with a date range on OrderDate/);
      const narrow = [{ parameters: [{ operator: 'LessThan', propertyName: 'OrderDate', value: '2024-04-01' }] }];
      const ok = await client.callTool({ name: 'aggregate_entities', arguments: { ...grouped, queryParameterGroups: narrow } });
      assert.notEqual(ok.isError, true, JSON.stringify(ok.content));
      assert.ok(ok.structuredContent.matchedCount <= 10);
      assertSameAnswer(assert, ok.structuredContent, oracle.aggregate('Orders', { ...grouped, queryParameterGroups: narrow }), 'narrowed');
      const totals = await client.callTool({ name: 'aggregate_entities', arguments: { dataModelId: ORDERS, aggregations: [{ function: 'Count' }] } });
      assert.equal(totals.structuredContent.matchedCount, all);
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
      await small.stop();
      conf.remove();
    }
  });
});

describe('permissions', () => {
  it('hides what the role denies', async () => {
    const text = await refusal({ aggregations: [{ function: 'Sum', propertyName: 'CreditLimit' }] }, { user: 'sales', model: CUSTOMERS });
    assert.match(text, /no property 'CreditLimit'/);
    assert.doesNotMatch(text.replace("'CreditLimit'", ''), /CreditLimit/);
    await agrees({ aggregations: [{ function: 'Count' }], groupBy: [{ propertyName: 'Region', reference: 'Customer' }] }, 'Orders', { user: 'sales' });
  });

  it('refuses models and related entities the caller may not read', async () => {
    let text = await refusal({ aggregations: [{ function: 'Count' }] }, { user: 'auditor', model: CUSTOMERS });
    assert.match(text, /no Data Model with id/);
    text = await refusal({ aggregations: [{ function: 'Count' }], groupBy: [{ propertyName: 'Region', reference: 'Customer' }] }, { user: 'auditor' });
    assert.match(text, /you may not read the entities that 'Customer' refers to/);
    text = await refusal({ aggregations: [onTime] }, { user: 'auditor' });
    assert.match(text, /you may not read the entities that 'Customer' refers to/);
    text = await refusal({ aggregations: [{ function: 'Count' }], queryParameterGroups: [{ parameters: [{ reference: 'Customer', operator: 'EqualTo', propertyName: 'Region', value: 'EMEA' }] }] }, { user: 'auditor' });
    assert.match(text, /you may not read the entities that 'Customer' refers to/);
    await agrees({ aggregations: [{ function: 'Sum', propertyName: 'Amount' }], groupBy: [{ propertyName: 'Status' }] }, 'Orders', { user: 'auditor' });
  });
});
