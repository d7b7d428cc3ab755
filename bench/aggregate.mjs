// SPDX-License-Identifier: AGPL-3.0-or-later
// The measuring half of bench/aggregate: each case is one aggregate_entities
// call, timed through the gateway (an MCP tools/call over HTTP, from the
// request leaving to the answer parsed), and the same SQL run directly on
// the same database by build/bench/sqltime (the gateway's connection
// settings, statements prepared before the clock starts). Rounds
// alternate (raw, gateway, gateway, raw, ...) so that both see the same
// machine; each case prints the medians and the median of the per-round
// ratios. Before timing, each case checks that the gateway ran exactly the
// statement given here (its debug log shows it) and that both gave the
// same numbers.
//
// Usage: node bench/aggregate.mjs URL TOKEN DB SQLTIME GATEWAY_LOG CASES_JSON
//   CASES_JSON: [{name, dataModelId, args, units: [[sql, bind...], ...]}];
//   binds are written as sqltime reads them (i:, r:, t:, n:).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';

const [url, token, db, sqltimeBin, gatewayLog, casesFile] = process.argv.slice(2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const WARM = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
// BENCH_CASES: names (their first word) of the cases to run; default all.
const only = process.env.BENCH_CASES?.split(/[ ,]+/).filter(Boolean);
const cases = JSON.parse(fs.readFileSync(casesFile, 'utf8'))
  .filter((c) => !only || only.includes(c.name.split(':')[0]));

// ---- The gateway ------------------------------------------------------------

let session = null;
let nextId = 1;

async function post(body) {
  const headers = {
    Authorization: `Bearer ${token}`,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2025-06-18',
  };
  if (session) headers['Mcp-Session-Id'] = session;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  session ??= res.headers.get('mcp-session-id');
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

async function initialize() {
  await post({ jsonrpc: '2.0', id: nextId++, method: 'initialize', params: {
    protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench-aggregate', version: '1' } } });
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
}

async function gatewayCall(c) {
  const start = performance.now();
  const reply = await post({ jsonrpc: '2.0', id: nextId++, method: 'tools/call',
    params: { name: 'aggregate_entities', arguments: { dataModelId: c.dataModelId, ...c.args } } });
  const ms = performance.now() - start;
  const result = reply.result;
  if (!result || result.isError) throw new Error(`${c.name}: ${JSON.stringify(reply)}`);
  return { ms, answer: result.structuredContent };
}

// ---- The raw SQL ----------------------------------------------------------------

// BENCH_RAW_CPU pins it to the gateway's CPU, so both share one core.
const cpu = process.env.BENCH_RAW_CPU;
const sqltime = cpu === undefined
  ? spawn(sqltimeBin, [db], { stdio: ['pipe', 'pipe', 'inherit'] })
  : spawn('taskset', ['-c', cpu, sqltimeBin, db], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = readline.createInterface({ input: sqltime.stdout })[Symbol.asyncIterator]();

async function rawCall(c) {
  sqltime.stdin.write(c.units.map((u) => u.join('\t')).join('\n') + '\n\n');
  const { value, done } = await lines.next();
  if (done) throw new Error('sqltime ended');
  const [ms, ...row] = value.split('\t');
  return { ms: Number(ms), row };
}

// ---- Checks ----------------------------------------------------------------------

// The aggregate requests of the gateway's debug log from line `from` on:
// the statement each ran and how long the store took (its own timer, from
// the request's start on the loop to its completion there).
function storeLog(from = 0) {
  return fs.readFileSync(gatewayLog, 'utf8').split('\n').slice(from)
    .filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
    .filter((l) => l.event === 'store_request' && l.kind === 'aggregate');
}

const logLines = () => fs.readFileSync(gatewayLog, 'utf8').split('\n').length - 1;

function lastStatement() {
  return storeLog().at(-1)?.sql ?? null;
}

// The raw first row is the last statement's first row: group keys (if
// any), count(*), then the aggregations, like the gateway's first row.
function sameNumbers(c, answer, row) {
  const first = answer.rows[0];
  const keys = Object.values(first.groupKey);
  const want = [...keys, keys.length === 0 ? answer.matchedCount : undefined, ...Object.values(first.aggregates)];
  want.forEach((w, i) => {
    if (w === undefined) return;
    const got = row[i] === 'null' ? null : typeof w === 'number' ? Number(row[i]) : row[i];
    const ok = typeof w === 'number' ? Math.abs(got - w) <= 1e-9 * Math.max(1, Math.abs(w)) : got === w;
    if (!ok) throw new Error(`${c.name}: column ${i}: gateway ${w}, raw ${row[i]}`);
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Each threadpool thread has its own connection, whose first statements
// fault the database's pages into its memory map: calls as many at once
// as there are threads, twice, so that every connection is warm before
// the clock runs, as the one connection of sqltime is after its first run.
async function warmUp(c) {
  for (let i = 0; i < 2; i++) await Promise.all(Array.from({ length: WARM }, () => gatewayCall(c)));
  await rawCall(c);
}

async function measure(c) {
  await warmUp(c);
  const warm = await gatewayCall(c);
  const sql = lastStatement();
  const mine = c.units.at(-1)[0];
  if (sql !== mine) throw new Error(`${c.name}: the gateway ran\n  ${sql}\nnot\n  ${mine}`);
  const raw0 = await rawCall(c);
  sameNumbers(c, warm.answer, raw0.row);
  // Short cases repeat within a round, so that a round lasts about a
  // second and a moment of other load weighs less.
  const repeat = Math.max(1, Math.ceil(1000 / raw0.ms));
  const raw = [], gw = [], ratios = [];
  const from = logLines();
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [rawCall, gatewayCall] : [gatewayCall, rawCall];
    const times = { raw: 0, gw: 0 };
    for (const f of order) {
      for (let k = 0; k < repeat; k++) times[f === rawCall ? 'raw' : 'gw'] += (await f(c)).ms;
    }
    raw.push(times.raw / repeat);
    gw.push(times.gw / repeat);
    ratios.push(times.gw / times.raw);
  }
  return { name: c.name, matched: warm.answer.matchedCount, rows: warm.answer.rows.length, repeat,
    raw: median(raw), gw: median(gw), store: median(storeLog(from).map((l) => l.duration_ms)),
    ratio: median(ratios), spread: [Math.min(...ratios), Math.max(...ratios)] };
}

// The round trip of a call whose SQL takes a fraction of a millisecond:
// what the HTTP exchange, the MCP layer and the threads' hand-offs cost on
// this machine at this moment, to read the cases' differences against.
async function floor() {
  const c = { name: 'floor', dataModelId: cases[0].dataModelId, args: { aggregations: [{ function: 'Count' }],
    queryParameterGroups: [{ parameters: [{ operator: 'EqualTo', propertyName: 'OrderNumber', value: 'none' }] }] } };
  const times = [];
  for (let i = 0; i < 41; i++) times.push((await gatewayCall(c)).ms);
  return { p50: median(times), min: Math.min(...times) };
}

await initialize();
console.log(`| case | matched | rows | calls per round | raw SQL ms (median) | gateway ms (median) | of which the store (median) | gateway/raw (median of ${ROUNDS} rounds) | range |`);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const c of cases) {
  const m = await measure(c);
  console.log(`| ${m.name} | ${m.matched.toLocaleString('en')} | ${m.rows} | ${m.repeat} | ${m.raw.toFixed(1)} | ` +
    `${m.gw.toFixed(1)} | ${m.store.toFixed(1)} | **${m.ratio.toFixed(2)}** | ${m.spread[0].toFixed(2)}–${m.spread[1].toFixed(2)} |`);
}
const f = await floor();
console.log(`\nround trip of an aggregate whose SQL takes under a millisecond: p50 ${f.p50.toFixed(1)} ms, min ${f.min.toFixed(1)} ms`);
sqltime.stdin.end();
