// SPDX-License-Identifier: AGPL-3.0-or-later
// Differential test of query_entities and get_entities_by_ids: a generated
// dataset full of edge values (case variants, LIKE wildcards, nulls, equal
// values, offsets on date-times, references to entities that do not exist)
// is loaded as the gateway's sample data, then a few hundred random filter,
// sort, page, property and expansion combinations are asked of the gateway
// and of lib/entities.mjs, a straightforward evaluation over the same rows.
// The answers must be equal.
//
// DG_DIFF_SEED picks another dataset and other queries; DG_DIFF_CASES
// changes how many queries run. A failure prints the seed and the arguments.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, writeJson } from './lib/gateway.mjs';
import { EntityData, expectFetch, expectQuery, isInbound } from './lib/entities.mjs';

const SEED = Number(process.env.DG_DIFF_SEED ?? 20241123);
const CASES = Number(process.env.DG_DIFF_CASES ?? 300);
const FETCHES = Math.ceil(CASES / 8);
const PARALLEL = 8;

// mulberry32: a small seeded generator, so that a seed gives one run.
function generator(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = (list) => list[Math.floor(next() * list.length)];
  const chance = (p) => next() < p;
  const guid = () => {
    const h = Array.from({ length: 32 }, () => '0123456789abcdef'[int(0, 15)]);
    h[12] = '4';
    h[16] = pick(['8', '9', 'a', 'b']);
    const s = h.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  };
  return { next, int, pick, chance, guid };
}

// ---- The dataset ------------------------------------------------------------------------

const WORDS = ['Acme', 'acme', 'ACME', 'Globex', 'glob', 'Initech', 'Zeta', 'zeta', '100%', 'Pure_Goods', 'back\\slash',
  'Café', 'cafe', 'Ünïcode', 'a', 'A', 'ab', 'x_y', 'x%y', 'Open', 'null'];

function text(g, words = 2) {
  return Array.from({ length: g.int(1, words) }, () => g.pick(WORDS)).join(g.pick([' ', '-', '', '.']));
}

function dateOf(g, from = 2023, years = 3) {
  const day = new Date(Date.UTC(from, 0, 1) + g.int(0, years * 365) * 86400000);
  return day.toISOString().slice(0, 10);
}

function dateTimeOf(g) {
  const ms = Date.UTC(2023, 0, 1) + g.int(0, 3 * 365 * 24) * 3600000 + g.pick([0, 0, 250, 999]);
  const utc = new Date(ms).toISOString();
  if (!g.chance(0.3)) return utc;
  // The same instant written with an offset.
  const offset = g.pick([120, -330, 60]);
  const local = new Date(ms + offset * 60000).toISOString().slice(0, 23);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

const maybe = (g, p, f) => (g.chance(p) ? null : f());
const money = (g) => g.pick([0, 0.1, -5.5, 100, 19.99, 2500.75, 1e6, g.int(0, 5000) / 100, g.int(0, 5000) / 100]);

function makeDataset(seed) {
  const g = generator(seed);
  const customers = Array.from({ length: 40 }, () => ({
    id: g.guid(), Name: text(g, 3), Email: maybe(g, 0.2, () => g.pick(['', text(g, 1) + '@x.example', 'ACME@acme.example'])),
    Region: maybe(g, 0.15, () => g.pick(['APAC', 'apac', 'EMEA', 'Emea', 'AMER'])), CreditLimit: maybe(g, 0.2, () => money(g)),
    RenewalDate: maybe(g, 0.2, () => dateOf(g)), CreatedAt: maybe(g, 0.1, () => dateTimeOf(g)),
  }));
  const products = Array.from({ length: 15 }, (_, i) => ({
    id: g.guid(), Name: text(g, 2), SKU: `${g.pick(['W', 'w', 'G', 'x_'])}-${100 + g.int(0, 20)}${i}`,
    Category: maybe(g, 0.2, () => g.pick(['Hardware', 'hardware', 'Tools', '%'])), Price: maybe(g, 0.1, () => money(g)),
    Active: maybe(g, 0.2, () => g.chance(0.6)),
  }));
  const warehouses = [g.guid(), g.guid(), g.guid()];
  const orders = Array.from({ length: 150 }, (_, i) => ({
    id: g.guid(), OrderNumber: `${g.pick(['SO', 'so', 'PO'])}-${1000 + g.int(0, 60)}${i % 3}`,
    Customer: maybe(g, 0.1, () => (g.chance(0.05) ? g.guid() : g.pick(customers).id)),
    SalesRep: maybe(g, 0.3, () => g.guid()), OrderDate: dateOf(g), DueDate: maybe(g, 0.2, () => dateOf(g)),
    Status: maybe(g, 0.1, () => g.pick(['Draft', 'Open', 'open', 'OPEN', 'Shipped', 'Cancelled', 'null', ''])),
    Amount: maybe(g, 0.1, () => money(g)), Quantity: maybe(g, 0.1, () => g.int(-2, 12)),
    WarehouseId: maybe(g, 0.2, () => g.pick(warehouses)), CalculatedOrderId: maybe(g, 0.7, () => text(g, 1)),
  }));
  const lines = [];
  for (const o of orders) {
    for (let n = g.pick([0, 0, 1, 2, 3, 5]); n > 0; n--) {
      const p = maybe(g, 0.1, () => g.pick(products));
      lines.push({ id: g.guid(), Order: o.id, Product: p?.id ?? null, SKU: p?.SKU ?? maybe(g, 0.5, () => text(g, 1)),
        Quantity: g.int(1, 9), UnitPrice: maybe(g, 0.1, () => money(g)), LineItemId: maybe(g, 0.5, () => g.guid()) });
    }
  }
  const payments = Array.from({ length: 70 }, () => ({
    id: g.guid(), Order: maybe(g, 0.1, () => g.pick(orders).id), Amount: money(g), PaidOn: maybe(g, 0.1, () => dateOf(g, 2024, 1)),
    Method: maybe(g, 0.2, () => g.pick(['Card', 'card', 'Transfer', 'Cash'])), Reference: maybe(g, 0.2, () => text(g, 1)),
  }));
  const files = Array.from({ length: 40 }, () => ({
    id: g.guid(), Name: maybe(g, 0.1, () => `${text(g, 2)}.pdf`), ContentType: g.pick(['application/pdf', 'text/csv', 'TEXT/CSV']),
    ExternalFileLocation: `https://files.example.com/${g.guid()}`, SizeBytes: maybe(g, 0.1, () => g.int(0, 2 ** 40)),
    Order: maybe(g, 0.2, () => g.pick(orders).id),
  }));
  return { Customers: customers, Products: products, Orders: orders, OrderLines: lines, Payments: payments, Files: files };
}

function writeDataset(dir, dataset) {
  const dataDir = path.join(dir, 'data');
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.mkdirSync(dataDir);
  for (const [model, entities] of Object.entries(dataset)) {
    // null stands for "no value" as well as a missing key; both are used.
    const rows = entities.map((e) => Object.fromEntries(Object.entries(e).filter(([, v]) => v !== null || e.id.endsWith('0'))));
    writeJson(path.join(dataDir, `${model}.json`), { model, entities: rows });
  }
}

// ---- Random arguments -------------------------------------------------------------------

const NUMERIC = new Set(['Int', 'Long', 'Double', 'Decimal']);
const TEXT_OPS = ['Contains', 'StartsWith', 'NotStartsWith', 'EndsWith', 'NotEndsWith'];
const ORDER_OPS = ['GreaterThan', 'GreaterThanEqualTo', 'LessThan', 'LessThanEqualTo'];
const EQ_OPS = ['EqualTo', 'NotEqualTo'];

function operatorsFor(type) {
  if (type === 'String') return [...EQ_OPS, ...ORDER_OPS, ...TEXT_OPS];
  if (NUMERIC.has(type) || type === 'Date' || type === 'DateTime') return [...EQ_OPS, ...ORDER_OPS];
  return EQ_OPS;
}

function family(type) {
  if (NUMERIC.has(type)) return 'number';
  if (type === 'Reference' || type === 'Guid') return 'guid';
  return type;
}

const ID_PROP = { name: 'id', dataType: 'Guid', filterable: true, sortable: true };

function filterable(model) {
  return [ID_PROP, ...model.properties.filter((p) => !isInbound(p) && p.filterable !== false)];
}

function oddCase(g, s) {
  if (!g.chance(0.3)) return s;
  return g.chance(0.5) ? s.toUpperCase() : s.toLowerCase();
}

// A value to compare prop with: mostly one the data holds, changed the ways
// the rules allow (case, a part of a string, another spelling).
function valueFor(g, data, model, prop, op) {
  const rows = data.of(model.name);
  const held = rows.map((r) => (prop === ID_PROP ? r.id : r.values[prop.name])).filter((v) => v !== null);
  const some = held.length > 0 && g.chance(0.85) ? g.pick(held) : null;
  switch (prop.dataType) {
    case 'String': {
      const s = some ?? g.pick(WORDS);
      if (!TEXT_OPS.includes(op)) return { value: oddCase(g, s) };
      const cut = g.int(0, s.length);
      const part = g.pick([s.slice(0, cut), s.slice(cut), s.slice(Math.floor(cut / 2), cut), g.pick(['%', '_', '\\', ''])]);
      return { value: oddCase(g, part) };
    }
    case 'Int':
    case 'Long':
      return g.chance(0.5) ? { value: some ?? g.int(-3, 20), valueType: 'number' } : { value: String(some ?? g.int(-3, 20)) };
    case 'Double':
    case 'Decimal': {
      const n = some ?? money(g);
      return g.pick([{ value: n, valueType: 'number' }, { value: String(n) }, { value: String(n), valueType: 'string' }]);
    }
    case 'Boolean':
      return g.pick([{ value: g.chance(0.5), valueType: 'boolean' }, { value: g.pick(['true', 'FALSE', 'True']) }]);
    case 'Date':
      return { value: some ?? dateOf(g) };
    case 'DateTime':
      return { value: g.chance(0.1) ? dateOf(g) : some ?? dateTimeOf(g) };
    default:
      return { value: oddCase(g, some ?? g.guid()) };
  }
}

// A null test; "null" without valueType is one only where the property is
// not a String.
function nullTest(g, prop) {
  const ways = [{ value: 'null', valueType: 'null' }, { value: null }, { value: 'NULL', valueType: 'null' }];
  return g.pick(prop.dataType === 'String' ? ways : [...ways, { value: 'Null' }]);
}

function parameter(g, data, model) {
  const refs = model.properties.filter((p) => p.dataType === 'Reference' && p.reference.target);
  const p = {};
  let target = model;
  if (refs.length > 0 && g.chance(0.25)) {
    const ref = g.pick(refs);
    p.reference = ref.name;
    if (isInbound(ref) && g.chance(0.5)) p.match = 'Any';
    target = data.model(ref.reference.target);
  }
  const prop = g.pick(filterable(target));
  p.propertyName = oddCase(g, prop.name);
  p.operator = g.pick(operatorsFor(prop.dataType));
  const others = filterable(target).filter((o) => o !== prop && family(o.dataType) === family(prop.dataType));
  if (others.length > 0 && g.chance(0.15)) {
    p.comparisonPropertyName = g.pick(others).name;
    return p;
  }
  if (EQ_OPS.includes(p.operator) && g.chance(0.12)) return { ...p, ...nullTest(g, prop) };
  return { ...p, ...valueFor(g, data, target, prop, p.operator) };
}

function groups(g, data, model) {
  return Array.from({ length: g.pick([0, 1, 1, 1, 1, 2, 2, 3]) }, () => {
    const group = { parameters: Array.from({ length: g.pick([0, 1, 1, 2, 2, 3]) }, () => parameter(g, data, model)) };
    if (g.chance(0.6)) group.andOrOperator = g.pick(['And', 'Or', 'Or', 'Or']);
    return group;
  });
}

function someProperties(g, model, refs = false) {
  const stored = model.properties.filter((p) => !isInbound(p)).map((p) => p.name);
  const picked = stored.filter(() => g.chance(0.4));
  if (g.chance(0.2)) picked.push('id');
  return picked.map((n) => oddCase(g, n));
}

function expansions(g, data, model) {
  const refs = model.properties.filter((p) => p.dataType === 'Reference' && p.reference.target && g.chance(0.5));
  return refs.map((ref) => {
    const e = { reference: ref.name };
    if (g.chance(0.3)) e.properties = someProperties(g, data.model(ref.reference.target));
    return e;
  });
}

function queryArgs(g, data) {
  const model = g.pick(data.models);
  const args = { dataModelId: model.id };
  const qg = groups(g, data, model);
  if (qg.length > 0) args.queryParameterGroups = qg;
  if (g.chance(0.1)) return { ...args, countOnly: true };
  if (g.chance(0.7)) {
    const sortable = [ID_PROP, ...model.properties.filter((p) => !isInbound(p) && p.sortable !== false)];
    args.sortCondition = { propertyName: g.pick(sortable).name };
    if (g.chance(0.6)) args.sortCondition.sortOrder = g.pick(['Ascending', 'Descending']);
  }
  // Pages mostly within what the filter matches, sometimes the one after.
  const size = g.pick([1, 2, 3, 7, 10, 25, 40]);
  const matched = expectQuery(data, { ...args, countOnly: true }).count;
  if (g.chance(0.8)) args.paging = { pageSize: size, pageNumber: g.int(1, Math.ceil(matched / size) + (g.chance(0.1) ? 1 : 0)) };
  if (g.chance(0.3)) args.properties = someProperties(g, model);
  if (g.chance(0.3)) args.expand = expansions(g, data, model);
  return args;
}

function fetchArgs(g, data) {
  const model = g.pick(data.models);
  const ids = data.of(model.name).map((r) => r.id);
  const entityIds = Array.from({ length: g.int(1, 12) }, () => (g.chance(0.15) ? g.guid() : oddCase(g, g.pick(ids))));
  const args = { dataModelId: model.id, entityIds };
  if (g.chance(0.3)) args.properties = someProperties(g, model);
  if (g.chance(0.4)) args.expand = expansions(g, data, model);
  return args;
}

// ---- The run -------------------------------------------------------------------------------

const config = makeConfig({ edit: (dir) => writeDataset(dir, makeDataset(SEED)) });
const data = new EntityData(config.dir);
let gw;
let client;

before(async () => {
  gw = await Gateway.start({ config });
  ({ client } = await httpClient(gw));
});

after(async () => {
  await client.close();
  await gw.stop();
  config.remove();
});

// Runs the cases PARALLEL at a time; each mismatch is reported with its
// arguments, and the first few fail the test together.
async function compareAll(tool, cases, expect) {
  const failures = [];
  for (let i = 0; i < cases.length; i += PARALLEL) {
    await Promise.all(cases.slice(i, i + PARALLEL).map(async (args) => {
      const r = await client.callTool({ name: tool, arguments: args });
      const got = r.isError ? { error: r.content[0].text } : r.structuredContent;
      try {
        assert.deepEqual(got, expect(data, args));
      } catch (err) {
        failures.push(`seed ${SEED}, ${tool} ${JSON.stringify(args)}\n${err.message.slice(0, 3000)}`);
      }
    }));
  }
  assert.equal(failures.length, 0, `${failures.length} of ${cases.length} differ:\n\n${failures.slice(0, 5).join('\n\n')}`);
}

describe(`differential (seed ${SEED})`, () => {
  it('the dataset has what the cases need', () => {
    const lines = data.of('OrderLines');
    assert.ok(data.of('Orders').some((o) => !lines.some((l) => l.values.Order === o.id)), 'orders without lines');
    assert.ok(data.of('Orders').some((o) => o.values.Customer !== null && data.byId('Customers', o.values.Customer) === null), 'dangling references');
    assert.ok(data.of('Orders').some((o) => o.values.Status === null), 'null values');
  });

  it(`query_entities: ${CASES} random queries answer as the evaluation does`, async () => {
    const g = generator(SEED + 1);
    const cases = Array.from({ length: CASES }, () => queryArgs(g, data));
    // Enough of the cases must select something, or the comparison says little.
    const nonEmpty = cases.filter((a) => {
      const e = expectQuery(data, a);
      return e.count > 0 || e.entities?.length > 0;
    });
    assert.ok(nonEmpty.length > CASES * 0.6, `${nonEmpty.length} of ${CASES} cases select entities`);
    await compareAll('query_entities', cases, expectQuery);
  });

  it(`get_entities_by_ids: ${FETCHES} random fetches answer as the evaluation does`, async () => {
    const g = generator(SEED + 2);
    await compareAll('get_entities_by_ids', Array.from({ length: FETCHES }, () => fetchArgs(g, data)), expectFetch);
  });
});
