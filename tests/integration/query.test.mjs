// SPDX-License-Identifier: AGPL-3.0-or-later
// The entity tools through the official SDK client: every operator and rule
// of the seed's query_entities, get_entities_by_ids and lookup_by_keyword
// sections and of its Limits table, against the sample data of conf/ (with
// a few customers added for the edge cases). Every expectation is computed
// here from the data files; none is an answer copied from the gateway.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, SOURCE_DIR, TOKENS, writeJson } from './lib/gateway.mjs';
import { compareBytes, EntityData, expectFetch, expectQuery, foldAscii } from './lib/entities.mjs';

// Customers added to the sample data: LIKE wildcards and a backslash taken
// literally, a name equal to another but for case, a lower-case region,
// e-mails that hold or equal the name, and diacritics for the keyword
// search.
const EDGE_CUSTOMERS = [
  { id: '0d7f3c1e-5a8b-4c2d-9e6f-1a2b3c4d5e01', Name: '100% Pure_Goods \\ Co', Email: 'sales@pure.example',
    Region: 'emea', CreditLimit: 10.5, RenewalDate: '2025-03-31', CreatedAt: '2023-11-05T22:30:00-02:00' },
  { id: '0d7f3c1e-5a8b-4c2d-9e6f-1a2b3c4d5e02', Name: 'ACME CORPORATION', Region: 'AMER',
    CreatedAt: '2023-12-01T00:00:00Z' },
  { id: '0d7f3c1e-5a8b-4c2d-9e6f-1a2b3c4d5e03', Name: 'Zeta', Email: 'ZETA@zeta.example', Region: 'APAC',
    CreditLimit: 99, CreatedAt: '2023-12-02T10:00:00.250Z' },
  { id: '0d7f3c1e-5a8b-4c2d-9e6f-1a2b3c4d5e04', Name: 'Café Crème Säle', Email: 'creme@cafe.example',
    Region: 'EMEA', CreatedAt: '2023-12-03T10:00:00Z' },
  { id: '0d7f3c1e-5a8b-4c2d-9e6f-1a2b3c4d5e05', Name: 'shop@example.org', Email: 'SHOP@EXAMPLE.ORG',
    CreatedAt: '2023-12-04T10:00:00Z' },
];

const config = makeConfig({
  edit: (dir) => {
    const file = path.join(dir, 'data', 'Customers.json');
    const doc = readJson(file);
    doc.entities.push(...EDGE_CUSTOMERS);
    writeJson(file, doc);
  },
});
const data = new EntityData(config.dir);
const ID = Object.fromEntries(data.models.map((m) => [m.name, m.id]));

let gw;
const clients = {};

before(async () => {
  gw = await Gateway.start({ config });
  for (const user of ['admin', 'sales', 'auditor']) clients[user] = await httpClient(gw, { token: TOKENS[user] });
});

after(async () => {
  for (const { client } of Object.values(clients)) await client.close();
  await gw.stop();
  config.remove();
});

// ---- Calling the tools ------------------------------------------------------------

async function call(name, args, user = 'admin') {
  return clients[user].client.callTool({ name, arguments: args });
}

// The result's structuredContent, which the text item repeats.
function ok(result) {
  assert.notEqual(result.isError, true, `tool failed: ${JSON.stringify(result.content)}`);
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return result.structuredContent;
}

// A tool error naming the argument path; returns its text.
function fails(result, param) {
  assert.equal(result.isError, true, `expected an error naming ${param}, got ${JSON.stringify(result).slice(0, 400)}`);
  const text = result.content[0].text;
  assert.ok(text.includes(`'${param}'`), `the error names '${param}': ${text}`);
  return text;
}

async function query(args, user = 'admin') {
  return ok(await call('query_entities', args, user));
}

// Every id that query_entities returns for args, over all pages.
async function allIds(args, user = 'admin') {
  const ids = [];
  for (let page = 1; page !== null;) {
    const r = await query({ ...args, paging: { pageNumber: page, pageSize: 100 } }, user);
    ids.push(...r.entities.map((e) => e.id));
    page = r.nextPage;
  }
  return ids;
}

const byId = (a, b) => compareBytes(a, b);
const idsOf = (rows) => rows.map((r) => r.id).sort(byId);
const orders = data.of('Orders');
const customers = data.of('Customers');
const lines = data.of('OrderLines');

function oneGroup(...parameters) {
  return [{ parameters }];
}

// The ids matching test, in id order; asserts the set is neither empty nor
// everything, so that a filter that does nothing cannot pass.
function want(rows, test, { empty = false } = {}) {
  const ids = idsOf(rows.filter(test));
  if (!empty) assert.ok(ids.length > 0, 'the expectation is not empty');
  assert.ok(ids.length < rows.length, 'the expectation is not every row');
  return ids;
}

async function filtered(model, groups, user) {
  return allIds({ dataModelId: ID[model], queryParameterGroups: groups }, user);
}

const fold = (s) => (s === null ? null : foldAscii(s));

// ---- Operators -------------------------------------------------------------------------

describe('query_entities: String operators', () => {
  it('EqualTo ignores case', async () => {
    const expect = want(orders, (o) => fold(o.values.Status) === 'open');
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'EqualTo', propertyName: 'Status', value: 'oPEN' })), expect);
  });

  it('NotEqualTo is true where EqualTo is not, nulls included', async () => {
    const expect = want(orders, (o) => fold(o.values.Status) !== 'open');
    assert.ok(orders.some((o) => o.values.Status === null && expect.includes(o.id)), 'a null Status is in the set');
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'NotEqualTo', propertyName: 'Status', value: 'Open' })), expect);
  });

  const textCases = [
    ['Contains', 'ORP', (v) => v.includes('orp')],
    ['StartsWith', 'ACME', (v) => v.startsWith('acme')],
    ['EndsWith', 'LLC', (v) => v.endsWith('llc')],
  ];
  for (const [operator, value, test] of textCases) {
    it(`${operator} ignores case`, async () => {
      const expect = want(customers, (c) => c.values.Name !== null && test(foldAscii(c.values.Name)));
      assert.deepEqual(await filtered('Customers', oneGroup({ operator, propertyName: 'Name', value })), expect);
    });
  }

  it('NotStartsWith and NotEndsWith include nulls', async () => {
    const noEmail = customers.find((c) => c.values.Email === null);
    assert.ok(noEmail, 'a customer without e-mail');
    for (const [operator, test] of [['NotStartsWith', (v) => !v.startsWith('ap@')], ['NotEndsWith', (v) => !v.endsWith('acme.example')]]) {
      const expect = want(customers, (c) => c.values.Email === null || test(foldAscii(c.values.Email)));
      assert.ok(expect.includes(noEmail.id));
      const value = operator === 'NotStartsWith' ? 'AP@' : 'ACME.EXAMPLE';
      assert.deepEqual(await filtered('Customers', oneGroup({ operator, propertyName: 'Email', value })), expect, operator);
    }
  });

  it('takes %, _ and \\ in a value literally', async () => {
    const literal = (needle) => want(customers, (c) => c.values.Name.toLowerCase().includes(needle.toLowerCase()));
    for (const value of ['%', '_g', '\\', '0% P']) {
      assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'Contains', propertyName: 'Name', value })), literal(value), value);
    }
    // As wildcards these would match "Acme Corporation" and every name.
    for (const value of ['a%n', '_']) {
      const expect = want(customers, (c) => c.values.Name.includes(value), { empty: true });
      assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'Contains', propertyName: 'Name', value })), expect, value);
    }
    const starts = want(customers, (c) => c.values.Name.startsWith('100%'));
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'StartsWith', propertyName: 'Name', value: '100%' })), starts);
  });

  it('orders Strings without regard to case', async () => {
    const expect = want(customers, (c) => compareBytes(foldAscii(c.values.Name), 'globex') >= 0);
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'GreaterThanEqualTo', propertyName: 'Name', value: 'GLOBEX' })), expect);
  });
});

describe('query_entities: numbers, booleans, dates and GUIDs', () => {
  it('compares numbers numerically, given as a string or a number', async () => {
    const expect = want(orders, (o) => o.values.Amount !== null && o.values.Amount > 9);
    assert.ok(orders.some((o) => o.values.Amount === 10.98 && expect.includes(o.id)), '10.98 > 9 (not as text)');
    for (const p of [{ value: '9' }, { value: 9, valueType: 'number' }, { value: '9', valueType: 'string' }]) {
      assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'GreaterThan', propertyName: 'Amount', ...p })), expect, JSON.stringify(p));
    }
  });

  const numberCases = [
    ['GreaterThanEqualTo', 'Quantity', 8, (v) => v >= 8],
    ['LessThan', 'Quantity', 6, (v) => v < 6],
    ['LessThanEqualTo', 'Amount', 299, (v) => v <= 299],
    ['EqualTo', 'Amount', '299.0', (v) => v === 299],
    ['NotEqualTo', 'Quantity', 8, (v) => v !== 8],
  ];
  for (const [operator, propertyName, value, test] of numberCases) {
    it(`${operator} on ${propertyName}; a comparison with null is false${operator === 'NotEqualTo' ? ' but for the negative' : ''}`, async () => {
      const neg = operator === 'NotEqualTo';
      const expect = want(orders, (o) => (o.values[propertyName] === null ? neg : test(o.values[propertyName])));
      assert.deepEqual(await filtered('Orders', oneGroup({ operator, propertyName, value })), expect);
    });
  }

  it('compares Booleans as booleans', async () => {
    const products = data.of('Products');
    const isTrue = want(products, (p) => p.values.Active === true);
    const notTrue = want(products, (p) => p.values.Active !== true);
    assert.ok(products.some((p) => p.values.Active === null), 'a product without Active');
    for (const p of [{ value: true, valueType: 'boolean' }, { value: 'TRUE' }, { value: 'true', valueType: 'string' }]) {
      assert.deepEqual(await filtered('Products', oneGroup({ operator: 'EqualTo', propertyName: 'Active', ...p })), isTrue);
    }
    assert.deepEqual(await filtered('Products', oneGroup({ operator: 'NotEqualTo', propertyName: 'Active', value: true })), notTrue);
  });

  it('compares Dates chronologically', async () => {
    const expect = want(orders, (o) => o.values.OrderDate >= '2024-06-03' && o.values.OrderDate < '2024-10-01');
    const got = await filtered('Orders', [
      { parameters: [{ operator: 'GreaterThanEqualTo', propertyName: 'OrderDate', value: '2024-06-03' }] },
      { parameters: [{ operator: 'LessThan', propertyName: 'OrderDate', value: '2024-10-01' }] },
    ]);
    assert.deepEqual(got, expect);
  });

  it('compares DateTimes in UTC, whatever offset the value has', async () => {
    const edge = customers.find((c) => c.id === EDGE_CUSTOMERS[0].id);
    assert.equal(edge.values.CreatedAt, '2023-11-06T00:30:00.000Z');
    const at = Date.parse('2023-06-18T12:00:00Z');
    const gt = want(customers, (c) => Date.parse(c.values.CreatedAt) > at);
    const ge = want(customers, (c) => Date.parse(c.values.CreatedAt) >= at);
    assert.equal(ge.length, gt.length + 1, 'one customer was created at that instant');
    const value = '2023-06-18T14:00:00+02:00';
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'GreaterThan', propertyName: 'CreatedAt', value })), gt);
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'GreaterThanEqualTo', propertyName: 'CreatedAt', value })), ge);
    const r = await query({ dataModelId: ID.Customers, properties: ['CreatedAt'], queryParameterGroups: oneGroup({ operator: 'EqualTo', propertyName: 'id', value: edge.id }) });
    assert.equal(r.entities[0].properties.createdAt, edge.values.CreatedAt, 'kept in UTC');
  });

  it('matches ids and Reference values in any case', async () => {
    const order = orders[3];
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'EqualTo', propertyName: 'id', value: order.id.toUpperCase() })), [order.id]);
    const customer = order.values.Customer;
    const expect = want(orders, (o) => o.values.Customer === customer);
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'EqualTo', propertyName: 'Customer', value: customer.toUpperCase() })), expect);
    const others = want(orders, (o) => o.values.Customer !== customer);
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'NotEqualTo', propertyName: 'customer', value: customer })), others);
  });
});

describe('query_entities: null tests and valueType', () => {
  it('valueType null with "null" tests for null; NotEqualTo for not null', async () => {
    const isNull = want(orders, (o) => o.values.DueDate === null);
    const notNull = want(orders, (o) => o.values.DueDate !== null);
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'EqualTo', propertyName: 'DueDate', value: 'null', valueType: 'null' })), isNull);
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'NotEqualTo', propertyName: 'DueDate', value: 'null', valueType: 'null' })), notNull);
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'EqualTo', propertyName: 'DueDate', value: null })), isNull, 'a JSON null');
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'EqualTo', propertyName: 'DueDate', value: 'null' })), isNull, 'a Date has no other reading of "null"');
  });

  it('on a String, "null" is text unless valueType is null', async () => {
    const isNull = want(orders, (o) => o.values.Status === null);
    const text = want(orders, (o) => fold(o.values.Status) === 'null', { empty: true });
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'EqualTo', propertyName: 'Status', value: 'null', valueType: 'null' })), isNull);
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'EqualTo', propertyName: 'Status', value: 'null' })), text);
  });

  it('refuses order operators with a null value', async () => {
    const r = await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup({ operator: 'GreaterThan', propertyName: 'DueDate', value: 'null', valueType: 'null' }) });
    fails(r, 'queryParameterGroups[0].parameters[0].operator');
  });

  it('refuses a valueType that does not suit the property', async () => {
    for (const [propertyName, valueType, value] of [['Status', 'number', '5'], ['Amount', 'boolean', 'true'], ['Status', 'boolean', 'true']]) {
      const r = await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup({ operator: 'EqualTo', propertyName, value, valueType }) });
      fails(r, 'queryParameterGroups[0].parameters[0].valueType');
    }
  });

  it('refuses valueType null with another value', async () => {
    const r = await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup({ operator: 'EqualTo', propertyName: 'Status', value: 'Open', valueType: 'null' }) });
    fails(r, 'queryParameterGroups[0].parameters[0].value');
  });
});

describe('query_entities: groups', () => {
  it('joins the parameters of an Or group with Or', async () => {
    const expect = want(orders, (o) => ['draft', 'cancelled'].includes(fold(o.values.Status)));
    const got = await filtered('Orders', [{ andOrOperator: 'Or', parameters: [
      { operator: 'EqualTo', propertyName: 'Status', value: 'Draft' },
      { operator: 'EqualTo', propertyName: 'Status', value: 'cancelled' },
    ] }]);
    assert.deepEqual(got, expect);
  });

  it('joins the parameters of a group with And by default', async () => {
    const expect = want(orders, (o) => fold(o.values.Status) === 'shipped' && o.values.Quantity > 7);
    const got = await filtered('Orders', oneGroup(
      { operator: 'EqualTo', propertyName: 'Status', value: 'Shipped' },
      { operator: 'GreaterThan', propertyName: 'Quantity', value: 7 }));
    assert.deepEqual(got, expect);
  });

  it('combines groups with And; an empty group matches everything', async () => {
    const expect = want(orders, (o) => ['draft', 'cancelled'].includes(fold(o.values.Status)) && o.values.Amount > 40);
    const got = await filtered('Orders', [
      { andOrOperator: 'Or', parameters: [
        { operator: 'EqualTo', propertyName: 'Status', value: 'Draft' },
        { operator: 'EqualTo', propertyName: 'Status', value: 'Cancelled' }] },
      { parameters: [] },
      { andOrOperator: 'Or', parameters: [{ operator: 'GreaterThan', propertyName: 'Amount', value: 40 }] },
    ]);
    assert.deepEqual(got, expect);
    assert.deepEqual(await filtered('Orders', [{ parameters: [] }, {}]), idsOf(orders));
  });
});

describe('query_entities: property against property', () => {
  it('compares numbers of different types numerically', async () => {
    const expect = want(lines, (l) => l.values.Quantity > l.values.UnitPrice);
    assert.deepEqual(await filtered('OrderLines', oneGroup({ operator: 'GreaterThan', propertyName: 'Quantity', comparisonPropertyName: 'UnitPrice' })), expect);
  });

  it('compares Dates chronologically; a null on either side is false', async () => {
    const expect = want(orders, (o) => o.values.DueDate !== null && o.values.DueDate > o.values.OrderDate);
    assert.deepEqual(await filtered('Orders', oneGroup({ operator: 'GreaterThan', propertyName: 'DueDate', comparisonPropertyName: 'OrderDate' })), expect);
  });

  it('String operators fold case; the negative ones include nulls', async () => {
    const starts = want(customers, (c) => c.values.Email !== null && foldAscii(c.values.Email).startsWith(foldAscii(c.values.Name)));
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'StartsWith', propertyName: 'Email', comparisonPropertyName: 'Name' })), starts);
    const contains = want(customers, (c) => c.values.Email !== null && foldAscii(c.values.Email).includes(foldAscii(c.values.Name)));
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'Contains', propertyName: 'Email', comparisonPropertyName: 'Name' })), contains);
    const notStarts = want(customers, (c) => !(c.values.Email !== null && foldAscii(c.values.Email).startsWith(foldAscii(c.values.Name))));
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'NotStartsWith', propertyName: 'Email', comparisonPropertyName: 'Name' })), notStarts);
    const ne = want(customers, (c) => c.values.Email === null || foldAscii(c.values.Email) !== foldAscii(c.values.Name));
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'NotEqualTo', propertyName: 'Email', comparisonPropertyName: 'Name' })), ne);
    const eq = want(customers, (c) => c.values.Email !== null && foldAscii(c.values.Email) === foldAscii(c.values.Name));
    assert.deepEqual(await filtered('Customers', oneGroup({ operator: 'EqualTo', propertyName: 'Email', comparisonPropertyName: 'Name' })), eq);
  });

  it('refuses a value beside comparisonPropertyName, and properties of another kind', async () => {
    let r = await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup({ operator: 'GreaterThan', propertyName: 'DueDate', comparisonPropertyName: 'OrderDate', value: '2024-01-01' }) });
    fails(r, 'queryParameterGroups[0].parameters[0].value');
    r = await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup({ operator: 'GreaterThan', propertyName: 'DueDate', comparisonPropertyName: 'Amount' }) });
    fails(r, 'queryParameterGroups[0].parameters[0].comparisonPropertyName');
  });
});

describe('query_entities: reference filters', () => {
  const customerOf = (o) => (o.values.Customer === null ? null : data.byId('Customers', o.values.Customer));

  it('Outbound: tests the related entity (a join)', async () => {
    const expect = want(orders, (o) => fold(customerOf(o)?.values.Region ?? null) === 'emea');
    const got = await filtered('Orders', oneGroup({ reference: 'Customer', operator: 'EqualTo', propertyName: 'Region', value: 'EMEA' }));
    assert.deepEqual(got, expect);
  });

  it('Outbound: an entity without a related one never matches, not even NotEqualTo', async () => {
    const orphan = orders.find((o) => o.values.Customer === null);
    assert.ok(orphan, 'an order without customer');
    const expect = want(orders, (o) => customerOf(o) !== null && fold(customerOf(o).values.Region) !== 'emea');
    assert.ok(!expect.includes(orphan.id));
    assert.ok(orders.some((o) => customerOf(o)?.values.Region === null && expect.includes(o.id)), 'a null Region matches');
    const got = await filtered('Orders', oneGroup({ reference: 'Customer', operator: 'NotEqualTo', propertyName: 'Region', value: 'EMEA', match: 'Any' }));
    assert.deepEqual(got, expect);
  });

  it('Inbound: true when at least one related entity matches', async () => {
    const linesOf = (o) => lines.filter((l) => l.values.Order === o.id);
    const expect = want(orders, (o) => linesOf(o).some((l) => fold(l.values.SKU) === 'w-100'));
    assert.deepEqual(await filtered('Orders', oneGroup({ reference: 'OrderLines', match: 'Any', operator: 'EqualTo', propertyName: 'SKU', value: 'w-100' })), expect);
  });

  it('Inbound: each parameter may be satisfied by a different related entity', async () => {
    const linesOf = (o) => lines.filter((l) => l.values.Order === o.id);
    const has = (o, sku) => linesOf(o).some((l) => l.values.SKU === sku);
    const expect = want(orders, (o) => has(o, 'W-100') && has(o, 'T-600'));
    const got = await filtered('Orders', oneGroup(
      { reference: 'OrderLines', operator: 'EqualTo', propertyName: 'SKU', value: 'W-100' },
      { reference: 'OrderLines', operator: 'EqualTo', propertyName: 'SKU', value: 'T-600' }));
    assert.deepEqual(got, expect);
  });

  it('Inbound from the other side: customers with a cancelled order', async () => {
    const expect = want(customers, (c) => orders.some((o) => o.values.Customer === c.id && fold(o.values.Status) === 'cancelled'));
    assert.deepEqual(await filtered('Customers', oneGroup({ reference: 'Orders', operator: 'EqualTo', propertyName: 'Status', value: 'Cancelled' })), expect);
  });

  it('combines reference filters and plain ones across groups', async () => {
    const expect = want(orders, (o) => fold(customerOf(o)?.values.Region ?? null) === 'apac' && fold(o.values.Status) === 'open');
    const got = await filtered('Orders', [
      { parameters: [{ reference: 'Customer', operator: 'EqualTo', propertyName: 'Region', value: 'apac' }] },
      { andOrOperator: 'Or', parameters: [{ operator: 'EqualTo', propertyName: 'Status', value: 'Open' }, { reference: 'Customer', operator: 'EqualTo', propertyName: 'Name', value: 'no such name' }] },
    ]);
    assert.deepEqual(got, expect);
  });

  it('refuses a reference without a Data Model, a non-reference and a bad match', async () => {
    const base = { operator: 'EqualTo', propertyName: 'Name', value: 'x' };
    for (const [extra, param] of [[{ reference: 'SalesRep' }, 'reference'], [{ reference: 'Status' }, 'reference'], [{ reference: 'OrderLines', match: 'All' }, 'match']]) {
      const r = await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup({ ...base, ...extra }) });
      fails(r, `queryParameterGroups[0].parameters[0].${param}`);
    }
  });
});

describe('query_entities: sorting', () => {
  async function sortedIds(model, sortCondition) {
    return allIds({ dataModelId: ID[model], sortCondition });
  }

  it('sorts by id when no sortCondition is given', async () => {
    assert.deepEqual(await allIds({ dataModelId: ID.Orders }), idsOf(orders));
  });

  it('sorts numbers descending with nulls last, ties by id', async () => {
    const expect = [...orders].sort((a, b) => {
      const x = a.values.Amount;
      const y = b.values.Amount;
      if (x !== y) return x === null ? 1 : y === null ? -1 : y - x;
      return compareBytes(b.id, a.id);
    }).map((o) => o.id);
    assert.equal(orders.find((o) => o.id === expect.at(-1)).values.Amount, null, 'the null Amount comes last');
    assert.deepEqual(await sortedIds('Orders', { propertyName: 'Amount', sortOrder: 'Descending' }), expect);
  });

  it('sorts Strings without regard to case, nulls first, ties by id', async () => {
    const key = (c) => (c.values.Region === null ? null : foldAscii(c.values.Region));
    const expect = [...customers].sort((a, b) => {
      const x = key(a);
      const y = key(b);
      if (x !== y) return x === null ? -1 : y === null ? 1 : compareBytes(x, y);
      return compareBytes(a.id, b.id);
    }).map((c) => c.id);
    assert.deepEqual(await sortedIds('Customers', { propertyName: 'region' }), expect);
    const names = await query({ dataModelId: ID.Customers, sortCondition: { propertyName: 'Name' }, properties: ['Name'], paging: { pageSize: 100 } });
    const folded = names.entities.map((e) => foldAscii(e.properties.name));
    assert.deepEqual(folded, [...folded].sort(compareBytes), 'names in case-insensitive order');
    const acme = names.entities.filter((e) => foldAscii(e.properties.name) === 'acme corporation').map((e) => e.id);
    assert.deepEqual(acme, [...acme].sort(byId), 'equal names are in id order');
    assert.equal(acme.length, 2);
  });

  it('sorts Dates and ids descending', async () => {
    const expect = [...orders].sort((a, b) => compareBytes(b.values.OrderDate, a.values.OrderDate) || compareBytes(b.id, a.id)).map((o) => o.id);
    assert.deepEqual(await sortedIds('Orders', { propertyName: 'OrderDate', sortOrder: 'Descending' }), expect);
    assert.deepEqual(await sortedIds('Orders', { propertyName: 'id', sortOrder: 'Descending' }), idsOf(orders).reverse());
  });

  it('refuses a property that cannot be sorted by, and a bad sortOrder', async () => {
    fails(await call('query_entities', { dataModelId: ID.Customers, sortCondition: { propertyName: 'Email' } }), 'sortCondition.propertyName');
    fails(await call('query_entities', { dataModelId: ID.Customers, sortCondition: { propertyName: 'Nope' } }), 'sortCondition.propertyName');
    fails(await call('query_entities', { dataModelId: ID.Customers, sortCondition: { propertyName: 'Name', sortOrder: 'Up' } }), 'sortCondition.sortOrder');
  });
});

describe('query_entities: paging and countOnly', () => {
  it('walks every page: hasMore, nextPage, and null on the last page', async () => {
    const expect = idsOf(orders);
    const size = 5;
    const pages = Math.ceil(expect.length / size);
    assert.ok(expect.length % size !== 0 && pages > 2);
    const seen = [];
    for (let n = 1; n <= pages; n++) {
      const r = await query({ dataModelId: ID.Orders, paging: { pageNumber: n, pageSize: size }, properties: [] });
      assert.equal(r.pageNumber, n);
      assert.equal(r.pageSize, size);
      assert.equal(r.hasMore, n < pages);
      assert.equal(r.nextPage, n < pages ? n + 1 : null);
      seen.push(...r.entities.map((e) => e.id));
    }
    assert.deepEqual(seen, expect);
  });

  it('a full last page has no next page; a page past the end is empty', async () => {
    const total = orders.length;
    let r = await query({ dataModelId: ID.Orders, paging: { pageSize: total } });
    assert.equal(r.entities.length, total);
    assert.equal(r.hasMore, false);
    assert.equal(r.nextPage, null);
    r = await query({ dataModelId: ID.Orders, paging: { pageNumber: 2, pageSize: total } });
    assert.deepEqual(r, { entities: [], pageNumber: 2, pageSize: total, hasMore: false, nextPage: null });
  });

  it('defaults to page 1 of 25', async () => {
    const r = await query({ dataModelId: ID.OrderLines });
    assert.ok(lines.length > 25);
    assert.deepEqual(r, expectQuery(data, { dataModelId: ID.OrderLines }));
    assert.equal(r.entities.length, 25);
    assert.equal(r.nextPage, 2);
  });

  it('refuses page sizes and numbers out of range', async () => {
    for (const paging of [{ pageSize: 0 }, { pageSize: 101 }, { pageSize: 2.5 }, { pageSize: '10' }]) {
      fails(await call('query_entities', { dataModelId: ID.Orders, paging }), 'paging.pageSize');
    }
    for (const paging of [{ pageNumber: 0 }, { pageNumber: 1000001 }, { pageNumber: -3 }]) {
      fails(await call('query_entities', { dataModelId: ID.Orders, paging }), 'paging.pageNumber');
    }
  });

  it('countOnly answers only the count of what the filter matches', async () => {
    const expect = want(orders, (o) => o.values.Amount !== null && o.values.Amount >= 100);
    const r = await query({ dataModelId: ID.Orders, countOnly: true, paging: { pageSize: 1 },
      queryParameterGroups: oneGroup({ operator: 'GreaterThanEqualTo', propertyName: 'Amount', value: 100 }) });
    assert.deepEqual(r, { count: expect.length });
    assert.deepEqual(await query({ dataModelId: ID.Orders, countOnly: true }), { count: orders.length });
    fails(await call('query_entities', { dataModelId: ID.Orders, countOnly: 'yes' }), 'countOnly');
  });
});

describe('query_entities: properties and expand', () => {
  it('returns every property it may see by default, null when empty', async () => {
    const r = await query({ dataModelId: ID.Orders, paging: { pageSize: 100 } });
    assert.deepEqual(r, expectQuery(data, { dataModelId: ID.Orders, paging: { pageSize: 100 } }));
    const noDue = r.entities.find((e) => e.properties.dueDate === null);
    assert.ok(noDue, 'a null property is present as null');
  });

  it('returns only the properties chosen, plus id, in any case and once', async () => {
    const args = { dataModelId: ID.Orders, properties: ['orderNumber', 'AMOUNT', 'id', 'Amount'] };
    const r = await query(args);
    for (const e of r.entities) assert.deepEqual(Object.keys(e.properties).sort(), ['amount', 'orderNumber']);
    assert.deepEqual(r, expectQuery(data, { ...args, properties: ['OrderNumber', 'Amount'] }));
    const bare = await query({ dataModelId: ID.Orders, properties: [] });
    for (const e of bare.entities) assert.deepEqual(e.properties, {});
  });

  it('refuses unknown properties (listing the valid ones) and Inbound references', async () => {
    const text = fails(await call('query_entities', { dataModelId: ID.Orders, properties: ['OrderNumber', 'Nope'] }), 'properties[1]');
    for (const p of data.visible('Orders', 'admin')) assert.ok(text.includes(p.name), `lists ${p.name}`);
    fails(await call('query_entities', { dataModelId: ID.Orders, properties: ['OrderLines'] }), 'properties[0]');
  });

  it('expands Outbound to an object or null and Inbound to an array or []', async () => {
    const args = { dataModelId: ID.Orders, paging: { pageSize: 100 },
      expand: [{ reference: 'Customer', properties: ['Name', 'Region'] }, { reference: 'OrderLines' }, { reference: 'Files' }] };
    const r = await query(args);
    assert.deepEqual(r, expectQuery(data, args));
    const kinds = { nullCustomer: 0, noFiles: 0, files: 0 };
    for (const e of r.entities) {
      const x = e.properties.expanded;
      if (x.customer === null) kinds.nullCustomer++;
      else assert.deepEqual(Object.keys(x.customer).sort(), ['id', 'name', 'region']);
      assert.ok(Array.isArray(x.orderLines) && Array.isArray(x.files));
      if (x.files.length === 0) kinds.noFiles++;
      else kinds.files++;
      for (const l of x.orderLines) {
        assert.equal(l.order, e.id, 'an expanded entity holds its Outbound reference as a plain id');
        assert.equal(l.expanded, undefined, 'expansion is shallow');
      }
    }
    assert.ok(kinds.nullCustomer > 0 && kinds.noFiles > 0 && kinds.files > 0, JSON.stringify(kinds));
  });

  it('cuts an Inbound expansion at 100 and marks the parent', async () => {
    const counts = new Map();
    for (const l of lines) counts.set(l.values.Order, (counts.get(l.values.Order) ?? 0) + 1);
    const big = [...counts].filter(([, n]) => n > 100).map(([id]) => id);
    assert.equal(big.length, 1, 'one order has more than 100 lines');
    const args = { dataModelId: ID.Orders, paging: { pageSize: 100 }, expand: [{ reference: 'OrderLines', properties: ['SKU'] }, { reference: 'Payments' }] };
    const r = await query(args);
    assert.deepEqual(r, expectQuery(data, args));
    for (const e of r.entities) {
      const cut = big.includes(e.id);
      assert.equal(e.properties.expanded.orderLines.length, Math.min(counts.get(e.id) ?? 0, 100));
      assert.deepEqual(e.properties.expandedTruncated, cut ? ['orderLines'] : undefined);
    }
  });

  it('refuses expand on a non-Reference, a reference without a model, a bad property', async () => {
    fails(await call('query_entities', { dataModelId: ID.Orders, expand: [{ reference: 'Status' }] }), 'expand[0].reference');
    fails(await call('query_entities', { dataModelId: ID.Orders, expand: [{ reference: 'Customer' }, { reference: 'SalesRep' }] }), 'expand[1].reference');
    fails(await call('query_entities', { dataModelId: ID.Orders, expand: [{ reference: 'Customer', properties: ['Nope'] }] }), 'expand[0].properties[0]');
  });
});

describe('query_entities: bad arguments', () => {
  const param = 'queryParameterGroups[0].parameters[0]';
  const cases = [
    ['an unknown property', { operator: 'EqualTo', propertyName: 'Colour', value: 'x' }, 'propertyName'],
    ['an Inbound reference as propertyName', { operator: 'EqualTo', propertyName: 'OrderLines', value: 'x' }, 'propertyName'],
    ['a property that is not filterable', { operator: 'EqualTo', propertyName: 'LineItemId', value: 'x', reference: 'OrderLines' }, 'propertyName'],
    ['an operator not valid for the type', { operator: 'Contains', propertyName: 'Amount', value: '1' }, 'operator'],
    ['an unknown operator', { operator: 'Like', propertyName: 'Status', value: 'x' }, 'operator'],
    ['a value that is not a number', { operator: 'EqualTo', propertyName: 'Amount', value: 'abc' }, 'value'],
    ['a fraction for an Int', { operator: 'EqualTo', propertyName: 'Quantity', value: '2.5' }, 'value'],
    ['a date that does not exist', { operator: 'EqualTo', propertyName: 'OrderDate', value: '2024-02-30' }, 'value'],
    ['a malformed GUID', { operator: 'EqualTo', propertyName: 'Customer', value: 'not-a-guid' }, 'value'],
    ['a missing value', { operator: 'EqualTo', propertyName: 'Status' }, 'value'],
    ['a value over 4096 bytes', { operator: 'EqualTo', propertyName: 'Status', value: 'x'.repeat(4097) }, 'value'],
  ];
  for (const [what, p, field] of cases) {
    it(`names the parameter for ${what}`, async () => {
      const r = await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup(p) });
      fails(r, `${param}.${field}`);
    });
  }

  it('names an unknown field and the object that holds it', async () => {
    const r = await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup({ operator: 'EqualTo', propertyName: 'Status', value: 'x', colour: 1 }) });
    assert.ok(fails(r, param).includes('colour'));
  });

  it('lists the valid names for an unknown property', async () => {
    const text = fails(await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: oneGroup({ operator: 'EqualTo', propertyName: 'Colour', value: 'x' }) }), `${param}.propertyName`);
    assert.ok(text.includes('OrderNumber') && text.includes('Amount'), text);
  });

  it('takes 4096 bytes of value, 20 groups and 50 parameters, and no more', async () => {
    const long = { operator: 'NotEqualTo', propertyName: 'Status', value: 'y'.repeat(4096) };
    assert.deepEqual(await query({ dataModelId: ID.Orders, countOnly: true, queryParameterGroups: oneGroup(long) }), { count: orders.length });
    const p = { operator: 'NotEqualTo', propertyName: 'Status', value: 'y' };
    assert.deepEqual(await query({ dataModelId: ID.Orders, countOnly: true, queryParameterGroups: Array(20).fill({ parameters: Array(50).fill(p) }) }), { count: orders.length });
    fails(await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: Array(21).fill({ parameters: [p] }) }), 'queryParameterGroups');
    fails(await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: [{ parameters: Array(51).fill(p) }] }), 'queryParameterGroups[0].parameters');
  });

  it('refuses a bad andOrOperator, an unknown and a malformed dataModelId', async () => {
    fails(await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: [{ andOrOperator: 'Xor', parameters: [] }] }), 'queryParameterGroups[0].andOrOperator');
    fails(await call('query_entities', { dataModelId: '00000000-0000-4000-8000-000000000000' }), 'dataModelId');
    fails(await call('query_entities', { dataModelId: 'Orders' }), 'dataModelId');
  });
  // The error texts docs/query.md quotes are the ones the gateway sends.
  it('sends the errors docs/query.md quotes, word for word', async () => {
    const doc = fs.readFileSync(path.join(SOURCE_DIR, 'docs/query.md'), 'utf8');
    const section = doc.slice(doc.indexOf('\n## Errors\n'));
    const quoted = section.split('\n').filter((l) => l.startsWith('Invalid argument '));
    const calls = {
      'queryParameterGroups[0].parameters[1].operator': [{ dataModelId: ID.Orders, queryParameterGroups: oneGroup(
        { operator: 'EqualTo', propertyName: 'Status', value: 'Open' }, { operator: 'Contains', propertyName: 'Amount', value: '1' }) }],
      'properties[1]': [{ dataModelId: ID.Customers, properties: ['Name', 'CreditLimit'] }, 'sales'],
      'expand[0].reference': [{ dataModelId: ID.Orders, expand: [{ reference: 'Payments' }] }, 'sales'],
      'paging.pageSize': [{ dataModelId: ID.Orders, paging: { pageSize: 500 } }],
    };
    assert.deepEqual(quoted.map((l) => /^Invalid argument '([^']+)'/.exec(l)[1]).sort(), Object.keys(calls).sort());
    for (const line of quoted) {
      const [args, user] = calls[/^Invalid argument '([^']+)'/.exec(line)[1]];
      const r = await call('query_entities', args, user);
      assert.equal(r.isError, true, line);
      assert.equal(r.content[0].text, line);
    }
  });
});

// ---- get_entities_by_ids ----------------------------------------------------------------

describe('get_entities_by_ids', () => {
  const missing = '00000000-0000-4000-8000-0000000000aa';

  it('answers in the order given, once per id, leaving out ids that do not exist', async () => {
    const ids = [orders[5].id, missing, orders[0].id.toUpperCase(), orders[5].id, orders[2].id];
    const args = { dataModelId: ID.Orders, entityIds: ids };
    const r = ok(await call('get_entities_by_ids', args));
    assert.deepEqual(r.entities.map((e) => e.id), [orders[5].id, orders[0].id, orders[2].id]);
    assert.deepEqual(r, expectFetch(data, args));
    assert.deepEqual(ok(await call('get_entities_by_ids', { dataModelId: ID.Orders, entityIds: [missing] })), { entities: [] });
  });

  it('selects properties and expands like query_entities', async () => {
    const big = orders.find((o) => lines.filter((l) => l.values.Order === o.id).length > 100);
    const orphan = orders.find((o) => o.values.Customer === null);
    const args = { dataModelId: ID.Orders, entityIds: [big.id, orphan.id], properties: ['OrderNumber'],
      expand: [{ reference: 'Customer' }, { reference: 'OrderLines', properties: ['Quantity'] }] };
    const r = ok(await call('get_entities_by_ids', args));
    assert.deepEqual(r, expectFetch(data, args));
    assert.deepEqual(r.entities[0].properties.expandedTruncated, ['orderLines']);
    assert.equal(r.entities[1].properties.expanded.customer, null);
  });

  it('takes 1 to 50 GUIDs', async () => {
    const fifty = orders.map((o) => o.id).concat(Array.from({ length: 50 - orders.length }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`));
    assert.equal(ok(await call('get_entities_by_ids', { dataModelId: ID.Orders, entityIds: fifty })).entities.length, orders.length);
    fails(await call('get_entities_by_ids', { dataModelId: ID.Orders, entityIds: [...fifty, missing] }), 'entityIds');
    fails(await call('get_entities_by_ids', { dataModelId: ID.Orders, entityIds: [] }), 'entityIds');
    fails(await call('get_entities_by_ids', { dataModelId: ID.Orders, entityIds: [orders[0].id, 'SO-1001'] }), 'entityIds[1]');
    fails(await call('get_entities_by_ids', { dataModelId: ID.Orders, entityIds: [orders[0].id], expand: [{ reference: 'Amount' }] }), 'expand[0].reference');
  });
});

// ---- lookup_by_keyword ------------------------------------------------------------------

// Words as the keyword index sees them: letters and digits, without case
// or diacritics.
function words(text) {
  return text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

// The entities whose keyword properties hold a word starting with each
// word of the search value, over the models user may read.
function expectLookup(searchValue, { entityType, entitySubType, user = 'admin' } = {}) {
  const terms = words(searchValue);
  const found = [];
  for (const m of data.models) {
    const visible = data.visible(m.name, user);
    if (!visible) continue;
    if (entityType && m.entityType.toLowerCase() !== entityType.toLowerCase()) continue;
    if (entitySubType && m.entitySubType.toLowerCase() !== entitySubType.toLowerCase()) continue;
    const keywords = visible.filter((p) => p.keyword);
    if (keywords.length === 0) continue;
    for (const row of data.of(m.name)) {
      const have = keywords.flatMap((p) => (row.values[p.name] === null ? [] : words(row.values[p.name])));
      if (terms.every((t) => have.some((w) => w.startsWith(t)))) found.push({ model: m, row });
    }
  }
  return found;
}

describe('lookup_by_keyword', () => {
  async function lookup(args, user = 'admin') {
    return ok(await call('lookup_by_keyword', args, user));
  }

  function sameSet(got, expect) {
    assert.deepEqual(got.entities.map((e) => e.id).sort(byId), expect.map((f) => f.row.id).sort(byId));
  }

  it('matches the start of words in any case; says which model each entity is', async () => {
    const expect = expectLookup('ACME corp');
    assert.ok(expect.length >= 2 && expect.length < customers.length);
    const r = await lookup({ searchValue: 'ACME corp' });
    sameSet(r, expect);
    for (const e of r.entities) {
      const f = expect.find((x) => x.row.id === e.id);
      assert.deepEqual(e, { id: e.id, dataModelId: f.model.id, dataModelName: f.model.name, entityType: f.model.entityType,
        entitySubType: f.model.entitySubType, properties: expectFetch(data, { dataModelId: f.model.id, entityIds: [e.id] }).entities[0].properties });
    }
  });

  it('splits at punctuation and searches across models', async () => {
    const expect = expectLookup('so-1001');
    assert.ok(new Set(expect.map((f) => f.model.name)).size >= 2, 'an order and its files');
    sameSet(await lookup({ searchValue: 'so-1001' }), expect);
  });

  it('ignores diacritics', async () => {
    const expect = expectLookup('cafe creme sale');
    assert.equal(expect.length, 1);
    sameSet(await lookup({ searchValue: 'CAFE creme sale' }), expect);
  });

  it('narrows by entityType and entitySubType in any case', async () => {
    const expect = expectLookup('so', { entityType: 'file' });
    assert.ok(expect.length > 1 && expect.every((f) => f.model.name === 'Files'));
    sameSet(await lookup({ searchValue: 'so', entityType: 'file', limit: 100 }), expect);
    sameSet(await lookup({ searchValue: 'so', entitySubType: 'DOCUMENT', limit: 100 }), expect);
  });

  it('returns at most limit results, 10 by default', async () => {
    const all = expectLookup('so');
    assert.ok(all.length > 10, `${all.length} matches`);
    assert.equal((await lookup({ searchValue: 'so' })).entities.length, 10);
    assert.equal((await lookup({ searchValue: 'so', limit: 3 })).entities.length, 3);
    const r = await lookup({ searchValue: 'so', limit: 100 });
    sameSet(r, all);
    const ids = new Set(all.map((f) => f.row.id));
    assert.ok(r.entities.every((e) => ids.has(e.id)));
  });

  it('refuses limits out of range, an empty value and unknown types', async () => {
    for (const limit of [0, 101]) fails(await call('lookup_by_keyword', { searchValue: 'acme', limit }), 'limit');
    fails(await call('lookup_by_keyword', { searchValue: '' }), 'searchValue');
    const text = fails(await call('lookup_by_keyword', { searchValue: 'acme', entityType: 'Planet' }), 'entityType');
    for (const m of data.models) assert.ok(text.includes(m.entityType), `lists ${m.entityType}`);
    fails(await call('lookup_by_keyword', { searchValue: 'acme', entitySubType: 'Moon' }), 'entitySubType');
  });
});

// ---- Permissions -------------------------------------------------------------------------

describe('permissions', () => {
  it('refuses a model the caller may not read', async () => {
    fails(await call('query_entities', { dataModelId: ID.Customers }, 'auditor'), 'dataModelId');
    fails(await call('get_entities_by_ids', { dataModelId: ID.Customers, entityIds: [customers[0].id] }, 'auditor'), 'dataModelId');
  });

  it('never returns a hidden property, and never filters or sorts on it', async () => {
    assert.ok(!data.visible('Customers', 'sales').some((p) => p.name === 'CreditLimit'));
    const args = { dataModelId: ID.Customers, paging: { pageSize: 100 } };
    assert.deepEqual(await query(args, 'sales'), expectQuery(data, args, 'sales'));
    const filter = { dataModelId: ID.Customers, queryParameterGroups: oneGroup({ operator: 'GreaterThan', propertyName: 'CreditLimit', value: 1 }) };
    const text = fails(await call('query_entities', filter, 'sales'), 'queryParameterGroups[0].parameters[0].propertyName');
    assert.ok(!text.split('valid names:')[1].includes('CreditLimit'), `the valid names leave CreditLimit out: ${text}`);
    fails(await call('query_entities', { dataModelId: ID.Customers, sortCondition: { propertyName: 'CreditLimit' } }, 'sales'), 'sortCondition.propertyName');
    fails(await call('query_entities', { dataModelId: ID.Customers, properties: ['CreditLimit'] }, 'sales'), 'properties[0]');
    const lookup = ok(await call('lookup_by_keyword', { searchValue: 'acme' }, 'sales'));
    assert.ok(lookup.entities.length > 0 && lookup.entities.every((e) => !('creditLimit' in e.properties)));
  });

  it('hides properties inside expansions and filters through references', async () => {
    const args = { dataModelId: ID.Orders, expand: [{ reference: 'Customer' }] };
    const r = await query(args, 'sales');
    assert.deepEqual(r, expectQuery(data, args, 'sales'));
    assert.ok(r.entities.some((e) => e.properties.expanded.customer !== null));
    const filter = oneGroup({ reference: 'Customer', operator: 'GreaterThan', propertyName: 'CreditLimit', value: 1 });
    fails(await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: filter }, 'sales'), 'queryParameterGroups[0].parameters[0].propertyName');
  });

  it('refuses expanding or filtering into a model the caller may not read', async () => {
    fails(await call('query_entities', { dataModelId: ID.Orders, expand: [{ reference: 'Customer' }] }, 'auditor'), 'expand[0].reference');
    fails(await call('query_entities', { dataModelId: ID.Orders, expand: [{ reference: 'Payments' }] }, 'sales'), 'expand[0].reference');
    const filter = oneGroup({ reference: 'Customer', operator: 'EqualTo', propertyName: 'Region', value: 'EMEA' });
    fails(await call('query_entities', { dataModelId: ID.Orders, queryParameterGroups: filter }, 'auditor'), 'queryParameterGroups[0].parameters[0].reference');
    const args = { dataModelId: ID.Orders, expand: [{ reference: 'Payments' }], paging: { pageSize: 100 } };
    assert.deepEqual(await query(args, 'auditor'), expectQuery(data, args, 'auditor'));
  });

  it('searches only the models the caller may read', async () => {
    const expect = expectLookup('so', { user: 'auditor' });
    assert.ok(expect.length > 0 && expect.every((f) => ['Orders', 'Payments'].includes(f.model.name)));
    const r = ok(await call('lookup_by_keyword', { searchValue: 'so', limit: 100 }, 'auditor'));
    assert.deepEqual(r.entities.map((e) => e.id).sort(byId), expect.map((f) => f.row.id).sort(byId));
    assert.deepEqual(ok(await call('lookup_by_keyword', { searchValue: 'acme' }, 'auditor')), { entities: [] });
  });
});

describe('get_data_model_properties: what each property can be used for', () => {
  // Asks the tools themselves: a property reported filterable, sortable or
  // groupable must be accepted there, and one reported not must be refused
  // with the usable properties named.
  async function accepted(tool, args) {
    const r = await call(tool, args);
    return r.isError !== true;
  }

  it('filterable, sortable and groupable match what query_entities and aggregate_entities accept', async () => {
    let refused = 0;
    for (const model of ['Orders', 'OrderLines', 'Customers', 'Files']) {
      const props = ok(await call('get_data_model_properties', { dataModelId: ID[model] })).properties;
      for (const p of props) {
        const filter = oneGroup({ operator: 'EqualTo', propertyName: p.propertyName, value: 'null', valueType: 'null' });
        const checks = [
          ['filterable', 'query_entities', { dataModelId: ID[model], queryParameterGroups: filter }],
          ['sortable', 'query_entities', { dataModelId: ID[model], sortCondition: { propertyName: p.propertyName } }],
          ['groupable', 'aggregate_entities', { dataModelId: ID[model], aggregations: [{ function: 'Count' }], groupBy: [{ propertyName: p.propertyName }] }],
        ];
        for (const [flag, tool, args] of checks) {
          assert.equal(typeof p[flag], 'boolean', `${model}.${p.propertyName}.${flag}`);
          assert.equal(await accepted(tool, args), p[flag], `${model}.${p.propertyName} ${flag}`);
          if (!p[flag]) refused++;
        }
        for (const fn of ['Sum', 'Average', 'Min', 'Max', 'DistinctCount']) {
          const args = { dataModelId: ID[model], aggregations: [{ function: fn, propertyName: p.propertyName }] };
          assert.equal(await accepted('aggregate_entities', args), p.aggregateFunctions.includes(fn), `${model}.${p.propertyName} ${fn}`);
        }
        assert.equal(p.aggregatable, p.aggregateFunctions.length > 0);
      }
    }
    assert.ok(refused > 0, 'some property is refused somewhere');
  });

  it('keywordSearchable follows the keyword configuration', async () => {
    const props = ok(await call('get_data_model_properties', { dataModelId: ID.Products })).properties;
    const keywords = data.models.find((m) => m.name === 'Products').properties.filter((p) => p.keyword).map((p) => p.name);
    assert.ok(keywords.length > 0);
    assert.deepEqual(props.filter((p) => p.keywordSearchable).map((p) => p.propertyName), keywords);
  });

  it('a refused filter names the filterable properties', async () => {
    const props = ok(await call('get_data_model_properties', { dataModelId: ID.OrderLines })).properties;
    const filter = oneGroup({ operator: 'EqualTo', propertyName: 'LineItemId', value: 'x' });
    const text = fails(await call('query_entities', { dataModelId: ID.OrderLines, queryParameterGroups: filter }), 'queryParameterGroups[0].parameters[0].propertyName');
    const listed = text.split('filterable properties of OrderLines:')[1].replace(/\.$/, '').split(',').map((s) => s.trim());
    assert.deepEqual(listed, ['id', ...props.filter((p) => p.filterable).map((p) => p.propertyName)]);
  });
});
