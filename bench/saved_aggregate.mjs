// SPDX-License-Identifier: AGPL-3.0-or-later
// The measuring half of bench/saved_aggregate. It starts the mock upstream
// and the gateway (one worker, a copy of conf/ pointed at the mock, with a
// Saved Query over every order of a customer), then for each case times,
// in alternating rounds:
//   - datagate: aggregate_saved_query over MCP (HTTP), from the request
//     leaving to the answer parsed;
//   - reference: this process fetching the same upstream URL with the same
//     token, parsing the answer and computing the same aggregate.
// It prints the medians and the median of the per-round ratios.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';

const [, , root, tmp, binary] = process.argv;
const ROUNDS = Number(process.env.BENCH_ROUNDS || 7);
const LIMIT = Number(process.env.BENCH_SA_LIMIT || 20000);
const TOKEN = process.env.DATAGATE_TOKEN_ADMIN;
const ERP_TOKEN = 'bench-erp-token';
const QUERY_ID = 'b0000000-0000-4000-8000-00000000a001';
const CUSTOMER = 'o';

function fail(msg) {
  console.error(`bench/saved_aggregate: error: ${msg}`);
  process.exit(1);
}

// Starts a program and resolves once a stdout/stderr line matches.
function start(cmd, args, env, stream, match) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = readline.createInterface({ input: child[stream] });
  const log = fs.createWriteStream(path.join(tmp, `${path.basename(cmd)}.log`), { flags: 'a' });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`${cmd} exited with ${code} (log in ${tmp})`)));
    lines.on('line', (line) => {
      try {
        const v = JSON.parse(line);
        if (match(v)) resolve({ child, info: v });
      } catch {
        // not a JSON line
      }
    });
  });
}

function writeJson(file, value) {
  fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

// conf/ pointed at the mock, with one Saved Query over every order of the
// customers whose name holds CUSTOMER (no status filter, so that grouping
// by Status gives several groups).
function config(dir, upstream) {
  fs.cpSync(path.join(root, 'conf'), dir, { recursive: true });
  const gw = JSON.parse(fs.readFileSync(path.join(dir, 'datagate.json'), 'utf8'));
  Object.assign(gw.server, { logLevel: 'warn', accessLog: null, database: 'var/bench.db' });
  writeJson(path.join(dir, 'datagate.json'), gw);
  const conns = JSON.parse(fs.readFileSync(path.join(dir, 'connectors.json'), 'utf8'));
  for (const c of conns.connectors) c.baseUrl = c.baseUrl.replace('http://127.0.0.1:8091', upstream);
  writeJson(path.join(dir, 'connectors.json'), conns);
  const queries = JSON.parse(fs.readFileSync(path.join(dir, 'saved_queries.json'), 'utf8'));
  queries.savedQueries.push({ id: QUERY_ID, name: 'BenchAllOrders', connector: 'SampleErp', dataModel: 'Orders',
    inputs: [{ name: 'CustomerName', type: 'String', required: true }, { name: 'Limit', type: 'Int', default: 25 }],
    request: { method: 'GET', path: '/orders', query: { customer: '{CustomerName}', limit: '{Limit}' } },
    resultPath: '$.orders[*]', idPath: 'id',
    fields: [{ property: 'OrderNumber', path: 'number' }, { property: 'Status', path: 'status' },
      { property: 'OrderDate', path: 'placedAt' }, { property: 'Amount', path: 'total.amount' },
      { property: 'Quantity', path: 'itemCount' }] });
  writeJson(path.join(dir, 'saved_queries.json'), queries);
}

// ---- The cases ------------------------------------------------------------------------

const CASES = [
  { name: 'totals: Count, Sum, Average, Min, Max', args: { aggregations: [
    { function: 'Count' }, { function: 'Sum', propertyName: 'Amount' }, { function: 'Average', propertyName: 'Quantity' },
    { function: 'Min', propertyName: 'OrderDate' }, { function: 'Max', propertyName: 'Amount' }] } },
  { name: 'status: Count and Sum by Status', args: { aggregations: [
    { function: 'Count' }, { function: 'Sum', propertyName: 'Amount' }], groupBy: [{ propertyName: 'Status' }] } },
  { name: 'distinct: DistinctCount of OrderNumber', args: { aggregations: [
    { function: 'DistinctCount', propertyName: 'OrderNumber' }] } },
];

// The fields as the Saved Query maps them.
function record(o) {
  return { OrderNumber: o.number, Status: o.status, OrderDate: typeof o.placedAt === 'string' ? o.placedAt.slice(0, 10) : null,
    Amount: Number(o.total?.amount), Quantity: o.itemCount };
}

function measureOf(fn, rows, prop) {
  const values = prop ? rows.map((r) => r[prop]).filter((v) => v !== null && v !== undefined) : [];
  switch (fn) {
    case 'Count': return rows.length;
    case 'Sum': return values.reduce((s, v) => s + v, 0);
    case 'Average': return values.length ? values.reduce((s, v) => s + v, 0) / values.length : null;
    case 'Min': return values.length ? values.reduce((a, b) => (b < a ? b : a)) : null;
    case 'Max': return values.length ? values.reduce((a, b) => (b > a ? b : a)) : null;
    default: return new Set(values.map((v) => (typeof v === 'string' ? v.toLowerCase() : v))).size;
  }
}

const keyOf = (c) => {
  const name = c.alias ?? (c.propertyName ? `${c.function}_${c.propertyName}` : c.function);
  return name[0].toLowerCase() + name.slice(1);
};

// The script's own answer: fetch, parse, aggregate.
async function reference(upstream, c) {
  const t0 = performance.now();
  const res = await fetch(`${upstream}/erp/orders?customer=${CUSTOMER}&limit=${LIMIT}`,
    { headers: { Authorization: `Bearer ${ERP_TOKEN}` } });
  const rows = JSON.parse(await res.text()).orders.map(record);
  const keys = (c.args.groupBy ?? []).map((k) => k.propertyName);
  const groups = new Map();
  for (const r of rows) {
    const id = JSON.stringify(keys.map((k) => (typeof r[k] === 'string' ? r[k].toLowerCase() : r[k])));
    if (!groups.has(id)) groups.set(id, { key: Object.fromEntries(keys.map((k) => [k[0].toLowerCase() + k.slice(1), r[k]])), rows: [] });
    groups.get(id).rows.push(r);
  }
  const out = { matchedCount: rows.length, rows: [...groups.values()].map((g) => ({ groupKey: g.key,
    aggregates: Object.fromEntries(c.args.aggregations.map((a) => [keyOf(a), measureOf(a.function, g.rows, a.propertyName)])) })) };
  return { ms: performance.now() - t0, answer: out };
}

class Mcp {
  constructor(port) {
    this.url = `http://127.0.0.1:${port}/mcp`;
    this.id = 0;
  }

  async rpc(method, params) {
    const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18' };
    if (this.session) headers['Mcp-Session-Id'] = this.session;
    const body = JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method, params });
    const res = await fetch(this.url, { method: 'POST', headers, body });
    this.session = this.session || res.headers.get('mcp-session-id');
    const text = await res.text();
    const json = JSON.parse(text.startsWith('event:') || text.startsWith('data:') ? text.split('data: ')[1] : text);
    if (json.error) fail(`${method}: ${JSON.stringify(json.error)}`);
    return json.result;
  }

  async open() {
    await this.rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
    const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Mcp-Session-Id': this.session,
      'MCP-Protocol-Version': '2025-06-18', Accept: 'application/json, text/event-stream' };
    await fetch(this.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  }
}

async function datagate(mcp, c) {
  const t0 = performance.now();
  const r = await mcp.rpc('tools/call', { name: 'aggregate_saved_query', arguments: { savedQueryId: QUERY_ID,
    inputs: [{ key: 'CustomerName', value: CUSTOMER }, { key: 'Limit', value: String(LIMIT) }], ...c.args } });
  const ms = performance.now() - t0;
  if (r.isError) fail(`${c.name}: ${JSON.stringify(r.content).slice(0, 2000)}`);
  return { ms, answer: r.structuredContent };
}

// Both answers hold the same groups with the same numbers.
function same(c, got, want) {
  const fold = (k) => JSON.stringify(Object.values(k).map((v) => (typeof v === 'string' ? v.toLowerCase() : v)));
  const close = (a, b) => (typeof a === 'number' ? Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b)) : a === b);
  if (got.matchedCount !== want.matchedCount) fail(`${c.name}: matchedCount ${got.matchedCount}, reference ${want.matchedCount}`);
  if (got.rows.length !== want.rows.length) fail(`${c.name}: ${got.rows.length} rows, reference ${want.rows.length}`);
  const index = new Map(want.rows.map((r) => [fold(r.groupKey), r]));
  for (const row of got.rows) {
    const w = index.get(fold(row.groupKey));
    if (!w) fail(`${c.name}: group ${fold(row.groupKey)} not in the reference`);
    for (const [k, v] of Object.entries(w.aggregates))
      if (!close(row.aggregates[k], v)) fail(`${c.name}: ${k} ${row.aggregates[k]}, reference ${v}`);
  }
}

function median(list) {
  const s = [...list].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function measure(mcp, upstream, c) {
  const warm = await datagate(mcp, c);
  same(c, warm.answer, (await reference(upstream, c)).answer);
  const ref = [], dg = [], ratios = [];
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? ['ref', 'dg'] : ['dg', 'ref'];
    const t = {};
    for (const side of order) t[side] = (side === 'ref' ? await reference(upstream, c) : await datagate(mcp, c)).ms;
    ref.push(t.ref);
    dg.push(t.dg);
    ratios.push(t.dg / t.ref);
  }
  return { name: c.name, records: warm.answer.matchedCount, rows: warm.answer.rows.length,
    ref: median(ref), dg: median(dg), ratio: median(ratios), spread: [Math.min(...ratios), Math.max(...ratios)] };
}

const { child: mock, info } = await start('node', [path.join(root, 'tests/upstream/server.mjs'), '--port', '0'],
  { DATAGATE_SAMPLE_ERP_TOKEN: ERP_TOKEN }, 'stdout', (v) => v.event === 'listening');
const upstream = `http://127.0.0.1:${info.port}`;
const dir = path.join(tmp, 'conf');
config(dir, upstream);
let gw;
const results = [];
try {
  const started = await start(binary, ['--config', dir, '--listen', '127.0.0.1:0', '--workers', '1'],
    { DATAGATE_SAMPLE_ERP_TOKEN: ERP_TOKEN }, 'stderr', (v) => v.event === 'listening');
  gw = started.child;
  const mcp = new Mcp(started.info.port);
  await mcp.open();
  for (const c of CASES) results.push(await measure(mcp, upstream, c));
} finally {
  gw?.kill('SIGTERM');
  mock.kill('SIGTERM');
}
console.log(`\nanswer of ${LIMIT.toLocaleString('en')} orders at most; median of ${ROUNDS} alternating rounds`);
console.log('| case | records | rows | script ms (fetch, parse, aggregate) | datagate ms | datagate/script (median) | range |');
console.log('|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.name} | ${r.records.toLocaleString('en')} | ${r.rows} | ${r.ref.toFixed(1)} | ${r.dg.toFixed(1)} | ` +
    `**${r.ratio.toFixed(2)}** | ${r.spread[0].toFixed(2)}–${r.spread[1].toFixed(2)} |`);
}
