// SPDX-License-Identifier: AGPL-3.0-or-later
// aggregate_entities against an independent evaluation
// (lib/aggregate-oracle.mjs) over a random data set and a few hundred
// random calls: filters of every kind (values, nulls, negative operators,
// property comparisons, Outbound and Inbound reference filters), every
// function, group keys of every kind, joinFilter clauses, and the grouped
// cap (set low, so that some grouped calls are refused). Data and calls
// come from a seeded generator: a failure names the seed and the call.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, it } from 'node:test';

import { assertSameAnswer, loadData, Oracle } from './lib/aggregate-oracle.mjs';
import { Gateway, httpClient, makeConfig, writeJson } from './lib/gateway.mjs';

const SEED = Number(process.env.DG_DIFF_SEED ?? 20261123);
const CASES = 320;
const CAP = 350;
const MODELS = { Orders: '8a03cbc2-7f01-4d47-bdf0-0755336a3a70', OrderLines: 'e405b7c6-358c-4a55-a021-0999f4a91a40' };

// mulberry32: small, seeded, good enough to pick test data.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = rng(SEED);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (list) => list[Math.floor(rand() * list.length)];
const maybe = (p, v) => (rand() < p ? v : null);
const hex = (n) => Array.from({ length: n }, () => '0123456789abcdef'[int(0, 15)]).join('');
const guid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;
const day = (from, span) => new Date(Date.UTC(2024, 0, 1) + (from + int(0, span)) * 86400000).toISOString().slice(0, 10);
const cents = (lo, hi) => int(lo * 100, hi * 100) / 100;
const recase = (s) => [...s].map((c) => (rand() < 0.5 ? c.toUpperCase() : c.toLowerCase())).join('');

const STATUSES = ['Draft', 'Open', 'Shipped', 'Cancelled'];
const REGIONS = ['APAC', 'EMEA', 'AMER'];
const SKUS = ['W-100', 'W-050', 'G-200', 'GZ-400', 'S-300', 'T-600', 'A-800', 'M-950'];
const WAREHOUSES = [guid(), guid(), guid(), guid()];

function dataset() {
  const customers = Array.from({ length: 40 }, (_, i) => ({
    id: guid(),
    Name: `Customer ${i + 1}`,
    Region: maybe(0.85, pick(REGIONS)),
    CreditLimit: maybe(0.8, cents(0, 20000)),
    RenewalDate: maybe(0.85, day(0, 900)),
    CreatedAt: maybe(0.9, new Date(Date.UTC(2023, 0, 1) + int(0, 3 * 365 * 86400) * 1000).toISOString()),
  }));
  const orders = Array.from({ length: 500 }, (_, i) => {
    const ordered = maybe(0.95, day(0, 700));
    return {
      id: guid(),
      OrderNumber: `SO-${1000 + i}`,
      Customer: maybe(0.85, pick(customers).id),
      OrderDate: ordered,
      DueDate: ordered && rand() < 0.85 ? new Date(Date.parse(ordered) + int(0, 60) * 86400000).toISOString().slice(0, 10) : null,
      Status: maybe(0.92, pick(STATUSES)),
      Amount: maybe(0.9, cents(0, 5000)),
      Quantity: maybe(0.9, int(0, 500)),
      WarehouseId: maybe(0.9, pick(WAREHOUSES)),
    };
  });
  const lines = orders.flatMap((o) => Array.from({ length: pick([0, 0, 1, 2, 3, 4]) }, () => ({
    id: guid(),
    Order: o.id,
    SKU: maybe(0.9, pick(SKUS)),
    Quantity: int(1, 20),
    UnitPrice: cents(1, 300),
  })));
  return { Customers: customers, Orders: orders, OrderLines: lines };
}

// ---- Random calls --------------------------------------------------------------

const OPS = ['EqualTo', 'NotEqualTo', 'GreaterThan', 'GreaterThanEqualTo', 'LessThan', 'LessThanEqualTo'];
const STRING_OPS = [...OPS, 'Contains', 'StartsWith', 'NotStartsWith', 'EndsWith', 'NotEndsWith'];

const orderParams = [
  () => ({ operator: pick(STRING_OPS), propertyName: 'Status', value: recase(pick([...STATUSES, 'o', 'en', 'ship', 'pen'])) }),
  () => ({ operator: pick(['EqualTo', 'NotEqualTo']), propertyName: pick(['Status', 'DueDate', 'Amount', 'Customer']), value: 'null', valueType: 'null' }),
  () => ({ operator: pick(OPS), propertyName: 'Amount', value: cents(0, 5000) }),
  () => ({ operator: pick(OPS), propertyName: 'Quantity', value: String(int(0, 500)), valueType: 'number' }),
  () => ({ operator: pick(OPS), propertyName: pick(['OrderDate', 'DueDate']), value: day(0, 700) }),
  () => ({ operator: pick(OPS), propertyName: 'DueDate', comparisonPropertyName: 'OrderDate' }),
  () => ({ operator: pick(['EqualTo', 'NotEqualTo']), propertyName: 'WarehouseId', value: pick(WAREHOUSES).toUpperCase() }),
  () => ({ reference: 'Customer', operator: pick(STRING_OPS), propertyName: 'Region', value: recase(pick([...REGIONS, 'a', 'E'])) }),
  () => ({ reference: 'Customer', operator: pick(OPS), propertyName: 'CreditLimit', value: cents(0, 20000) }),
  () => ({ reference: 'OrderLines', operator: pick(STRING_OPS), propertyName: 'SKU', value: recase(pick([...SKUS, 'W-', '00'])) }),
  () => ({ reference: 'OrderLines', operator: pick(OPS), propertyName: 'Quantity', value: int(1, 20) }),
];

const lineParams = [
  () => ({ operator: pick(STRING_OPS), propertyName: 'SKU', value: recase(pick([...SKUS, 'G', '-4'])) }),
  () => ({ operator: pick(OPS), propertyName: 'Quantity', value: int(1, 20) }),
  () => ({ operator: pick(OPS), propertyName: 'UnitPrice', value: cents(1, 300) }),
  () => ({ reference: 'Order', operator: pick(STRING_OPS), propertyName: 'Status', value: recase(pick(STATUSES)) }),
  () => ({ reference: 'Order', operator: pick(OPS), propertyName: 'OrderDate', value: day(0, 700) }),
];

const orderMeasures = {
  Sum: ['Amount', 'Quantity'],
  Average: ['Amount', 'Quantity'],
  Min: ['Amount', 'Quantity', 'OrderDate', 'DueDate'],
  Max: ['Amount', 'Quantity', 'OrderDate', 'DueDate'],
  DistinctCount: ['Status', 'Customer', 'WarehouseId', 'OrderDate', 'Quantity'],
  Count: [undefined],
};
const lineMeasures = {
  Sum: ['Quantity', 'UnitPrice'],
  Average: ['UnitPrice'],
  Min: ['UnitPrice'],
  Max: ['Quantity'],
  DistinctCount: ['SKU', 'Order'],
  Count: [undefined],
};

const orderKeys = [
  { propertyName: 'Status' },
  { propertyName: 'WarehouseId' },
  { propertyName: 'Customer' },
  { propertyName: 'OrderDate' },
  { propertyName: 'Region', reference: 'Customer' },
  { propertyName: 'Name', reference: 'Customer' },
  { propertyName: 'SKU', reference: 'OrderLines' },
  { propertyName: 'Quantity', reference: 'OrderLines' },
];
const lineKeys = [
  { propertyName: 'SKU' },
  { propertyName: 'Status', reference: 'Order' },
  { propertyName: 'WarehouseId', reference: 'Order' },
];

function joinFilter() {
  const target = pick([
    { reference: 'Customer' },
    { entity: pick(['Customers', 'customer']), on: { localProperty: 'Customer', foreignProperty: 'id' } },
  ]);
  const condition = pick([
    () => ({ localProperty: pick(['DueDate', 'OrderDate']), operator: pick(OPS), foreignProperty: pick(['RenewalDate', 'CreatedAt']) }),
    () => ({ localProperty: 'Amount', operator: pick(OPS), foreignProperty: 'CreditLimit' }),
    () => ({ localProperty: 'Status', operator: pick(STRING_OPS), value: recase(pick(STATUSES)) }),
    () => ({ localProperty: 'DueDate', operator: pick(['EqualTo', 'NotEqualTo']), value: null }),
  ])();
  return { ...target, condition };
}

function aggregations(measures, joins) {
  const out = [];
  const keys = new Set();
  for (let i = int(1, 4); i > 0; i--) {
    const fn = pick(Object.keys(measures));
    const clause = { function: fn };
    const prop = pick(measures[fn]);
    if (prop !== undefined) clause.propertyName = prop;
    if (joins && rand() < 0.25) clause.joinFilter = joinFilter();
    if (rand() < 0.3 || keys.has(Oracle.key(clause))) clause.alias = `Clause${out.length}`;
    keys.add(Oracle.key(clause));
    out.push(clause);
  }
  return out;
}

function filters(params) {
  return Array.from({ length: int(0, 2) }, () => ({
    ...(rand() < 0.4 ? { andOrOperator: pick(['And', 'Or']) } : {}),
    parameters: Array.from({ length: int(1, 3) }, () => pick(params)()),
  }));
}

function groupBy(keys) {
  const n = pick([0, 1, 1, 2]);
  const chosen = [];
  while (chosen.length < n) {
    const k = pick(keys);
    if (!chosen.includes(k)) chosen.push(k);
  }
  return chosen;
}

function randomCall() {
  const lines = rand() < 0.2;
  const args = {
    aggregations: aggregations(lines ? lineMeasures : orderMeasures, !lines),
    queryParameterGroups: filters(lines ? lineParams : orderParams),
  };
  const keys = groupBy(lines ? lineKeys : orderKeys);
  const joined = args.aggregations.some((c) => c.joinFilter);
  if (keys.length > 0 && (!joined || rand() < 0.1)) args.groupBy = keys;
  return { model: lines ? 'OrderLines' : 'Orders', args };
}

// ---- The run ----------------------------------------------------------------------

let gw;
let client;
let transport;
let oracle;
let conf;

before(async () => {
  const data = dataset();
  conf = makeConfig({
    server: { maxGroupedAggregateRecords: CAP },
    edit: (dir) => {
      const dataDir = path.join(dir, 'data');
      for (const f of fs.readdirSync(dataDir)) fs.rmSync(path.join(dataDir, f));
      for (const [model, entities] of Object.entries(data)) writeJson(path.join(dataDir, `${model}.json`), { model, entities });
    },
  });
  oracle = new Oracle(loadData(conf.dir));
  gw = await Gateway.start({ config: conf });
  ({ client, transport } = await httpClient(gw));
});

after(async () => {
  await transport?.terminateSession().catch(() => {});
  await client?.close();
  await gw?.stop();
  conf?.remove();
});

it(`agrees with an independent evaluation on ${CASES} random calls (seed ${SEED})`, async (t) => {
  const seen = { grouped: 0, joined: 0, capped: 0, refusedJoin: 0, inbound: 0, empty: 0 };
  for (let i = 0; i < CASES; i++) {
    const { model, args } = randomCall();
    const what = `case ${i} (seed ${SEED}) on ${model}: ${JSON.stringify(args)}`;
    const r = await client.callTool({ name: 'aggregate_entities', arguments: { dataModelId: MODELS[model], ...args } });
    const joined = args.aggregations.some((c) => c.joinFilter);
    if (args.groupBy && joined) {
      assert.equal(r.isError, true, what);
      assert.match(r.content[0].text, /cannot be combined with groupBy/, what);
      seen.refusedJoin++;
      continue;
    }
    const want = oracle.aggregate(model, args);
    if (args.groupBy && want.matchedCount > CAP) {
      assert.equal(r.isError, true, what);
      assert.match(r.content[0].text, new RegExp(`matches ${want.matchedCount} ${model} records, more than the ${CAP}`), what);
      seen.capped++;
      continue;
    }
    assert.notEqual(r.isError, true, `${what}\n${r.content?.[0]?.text}`);
    assertSameAnswer(assert, r.structuredContent, want, what);
    seen.grouped += args.groupBy ? 1 : 0;
    seen.joined += joined ? 1 : 0;
    seen.inbound += (args.groupBy ?? []).some((k) => k.reference === 'OrderLines') ? 1 : 0;
    seen.empty += want.matchedCount === 0 ? 1 : 0;
  }
  t.diagnostic(`kinds of calls: ${JSON.stringify(seen)}`);
  // The generator reached every kind of call it is meant to.
  for (const [kind, n] of Object.entries(seen)) assert.ok(n > 0, `no ${kind} case among ${CASES}: ${JSON.stringify(seen)}`);
});
