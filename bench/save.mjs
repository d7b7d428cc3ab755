// SPDX-License-Identifier: AGPL-3.0-or-later
// The save tree benchmark, driven by bench/save: one submission whose tree
// makes 102 upstream calls (a root, 100 child saves, a commit) against the
// mock upstream answering every request after 10 ms, for each child
// concurrency. In alternating rounds it measures:
//   - reference: this process making the same 102 calls, with the same
//     concurrency and bodies, straight to the mock (node:http, keep-alive);
//   - datagate: submit_data_entry_form over MCP (HTTP), timed by the
//     client, and the gateway's CPU time (every thread, from
//     /proc/<pid>/task/*/schedstat) spent on it.
// It prints, per concurrency, the ideal time (the 10 ms waits alone), the
// median times, the ratios datagate/reference and datagate/ideal, and the
// gateway's CPU time per upstream call.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';

const [, , root, tmp, binary] = process.argv;
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const CHILDREN = 100;
const DELAY_MS = 10;
const CONCURRENCY = (process.env.BENCH_SAVE_CONCURRENCY || '1,10,25').split(',').map(Number);
const TOKEN = process.env.DATAGATE_TOKEN_ADMIN;
const ERP_TOKEN = 'bench-erp-token';
const ORDER = 'b0000000-0000-4000-8000-000000000001';
const ORDER_NUMBER = 'SO-BENCH';

function fail(msg) {
  console.error(`bench/save: error: ${msg}`);
  process.exit(1);
}

// Starts a program and resolves with it once a stderr/stdout line matches.
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

// ---- Configuration -------------------------------------------------------------

function writeJson(file, value) {
  fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

function config(dir, upstream, concurrency) {
  fs.cpSync(path.join(root, 'conf'), dir, { recursive: true });
  const gw = JSON.parse(fs.readFileSync(path.join(dir, 'datagate.json'), 'utf8'));
  Object.assign(gw.server, { logLevel: 'warn', accessLog: null, database: 'var/bench.db', toolTimeoutMs: 600000 });
  writeJson(path.join(dir, 'datagate.json'), gw);
  const conns = JSON.parse(fs.readFileSync(path.join(dir, 'connectors.json'), 'utf8'));
  for (const c of conns.connectors) c.baseUrl = c.baseUrl.replace('http://127.0.0.1:8091', upstream);
  conns.connectors[0].maxConcurrency = 256;
  writeJson(path.join(dir, 'connectors.json'), conns);
  writeJson(path.join(dir, 'endpoints.json'), { endpoints: [
    { id: 'b0000000-0000-4000-8000-0000000000e1', name: 'BenchOrder', dataModel: 'Orders', connector: 'SampleErp',
      save: { type: 'EndpointSave', title: 'Begin', request: { path: '/echo/begin/{OrderNumber}', body: { order: '{OrderNumber}' } },
        actions: [
          { type: 'GetSessionValues', title: 'Read', extractions: [{ modelProperty: 'CalculatedOrderId', connectorProperty: 'echo' }] },
          { type: 'EndpointSave', title: 'Commit', afterChildConfigs: true, request: { path: '/echo/commit/{SESSION:CalculatedOrderId}' } },
        ] },
      childConfigs: [{ list: 'OrderLines', endpoint: 'BenchLine', concurrency, orderBy: 'SKU' }] },
    { id: 'b0000000-0000-4000-8000-0000000000e2', name: 'BenchLine', dataModel: 'OrderLines', connector: 'SampleErp', formSubmit: false,
      save: { type: 'EndpointSave', title: 'Line',
        request: { path: '/echo/line/{Order.OrderNumber}/{SKU}', mappings: [{ connectorProperty: 'lineItem.quantity', value: '{Quantity}' }] },
        responseMappings: [{ modelProperty: 'LineItemId', connectorProperty: 'echo' }] } },
  ] });
  // An order with 100 lines, loaded with the sample data.
  writeJson(path.join(dir, 'data', 'zz_bench_order.json'), { model: 'Orders', entities: [{ id: ORDER, OrderNumber: ORDER_NUMBER, Status: 'Open' }] });
  const lines = Array.from({ length: CHILDREN }, (_, i) => ({
    id: `b0000000-0000-4000-8000-${String(100000 + i).padStart(12, '0')}`, Order: ORDER,
    SKU: `BENCH-${String(i).padStart(3, '0')}`, Quantity: 1 + (i % 9) }));
  writeJson(path.join(dir, 'data', 'zz_bench_lines.json'), { model: 'OrderLines', entities: lines });
  return lines;
}

// ---- The reference: the same calls, straight to the mock -----------------------------

// node:http with keep-alive: lighter per call than fetch.
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function post(url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { Authorization: `Bearer ${ERP_TOKEN}`,
      'Content-Type': 'application/json', Accept: 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) fail(`${url} answered ${res.statusCode}: ${text}`);
        resolve(JSON.parse(text));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function reference(upstream, lines, concurrency) {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const begin = await post(`${upstream}/erp/echo/begin/${ORDER_NUMBER}`, JSON.stringify({ order: ORDER_NUMBER }));
  const sorted = [...lines].sort((a, b) => (a.SKU < b.SKU ? -1 : 1));
  let next = 0;
  const worker = async () => {
    while (next < sorted.length) {
      const l = sorted[next++];
      await post(`${upstream}/erp/echo/line/${ORDER_NUMBER}/${l.SKU}`, JSON.stringify({ lineItem: { quantity: l.Quantity } }));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  await post(`${upstream}/erp/echo/commit/${encodeURIComponent(begin.echo)}`, '');
  const cpu = process.cpuUsage(cpu0);
  return { ms: performance.now() - t0, cpuUs: cpu.user + cpu.system };
}

// ---- datagate --------------------------------------------------------------------------

// CPU nanoseconds of every thread of pid.
function cpuNs(pid) {
  let total = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return total;
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

async function datagate(mcp, pid, round) {
  const cpu0 = cpuNs(pid);
  const t0 = performance.now();
  const r = await mcp.rpc('tools/call', { name: 'submit_data_entry_form', arguments: {
    dataModelId: '8a03cbc2-7f01-4d47-bdf0-0755336a3a70', id: ORDER, system: 'Claude',
    formValues: [{ key: 'Status', value: round % 2 ? 'Open' : 'Draft' }] } });
  const ms = performance.now() - t0;
  const cpu = cpuNs(pid) - cpu0;
  const s = r.structuredContent;
  if (r.isError || s.status !== 'succeeded') fail(`the submission failed: ${JSON.stringify(r).slice(0, 2000)}`);
  const saves = s.actions.find((a) => a.type === 'ChildSaves');
  if (saves.count !== CHILDREN) fail(`expected ${CHILDREN} child saves, got ${saves.count}`);
  return { ms, cpuNs: cpu };
}

// ---- The run --------------------------------------------------------------------------------

function median(list) {
  const s = [...list].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function measure(mock, upstream, concurrency) {
  const dir = path.join(tmp, `conf-${concurrency}`);
  const lines = config(dir, upstream, concurrency);
  const { child: gw, info } = await start(binary, ['--config', dir, '--listen', '127.0.0.1:0', '--workers', '1'],
    { DATAGATE_SAMPLE_ERP_TOKEN: ERP_TOKEN }, 'stderr', (v) => v.event === 'listening');
  const mcp = new Mcp(info.port);
  await mcp.open();
  await datagate(mcp, gw.pid, 0); // warm-up: connections, statements
  await reference(upstream, lines, concurrency);
  const ref = [];
  const dg = [];
  for (let i = 1; i <= ROUNDS; i++) {
    ref.push(await reference(upstream, lines, concurrency));
    dg.push(await datagate(mcp, gw.pid, i));
  }
  gw.kill('SIGTERM');
  await new Promise((r) => gw.on('exit', r));
  const calls = CHILDREN + 2;
  const ideal = (2 + Math.ceil(CHILDREN / concurrency)) * DELAY_MS;
  const refMs = median(ref.map((r) => r.ms));
  const dgMs = median(dg.map((r) => r.ms));
  return { concurrency, ideal, refMs, dgMs, dgCpuUs: median(dg.map((r) => r.cpuNs / 1000 / calls)),
    refCpuUs: median(ref.map((r) => r.cpuUs / calls)) };
}

const { child: mock, info } = await start('node', [path.join(root, 'tests/upstream/server.mjs'), '--port', '0'],
  { DATAGATE_SAMPLE_ERP_TOKEN: ERP_TOKEN }, 'stdout', (v) => v.event === 'listening');
const upstream = `http://127.0.0.1:${info.port}`;
await fetch(`${upstream}/__control`, { method: 'POST', body: JSON.stringify({ delayMs: DELAY_MS }) });
const results = [];
try {
  for (const c of CONCURRENCY) results.push(await measure(mock, upstream, c));
} finally {
  mock.kill('SIGTERM');
}
console.log(`\n${CHILDREN} child saves + root + commit = ${CHILDREN + 2} upstream calls per submission, ` +
  `each answered after ${DELAY_MS} ms; median of ${ROUNDS} alternating rounds`);
console.log('concurrency | ideal ms | reference ms | datagate ms | datagate/reference | datagate/ideal | datagate CPU µs/call | reference CPU µs/call');
for (const r of results) {
  console.log(`${String(r.concurrency).padStart(11)} | ${String(r.ideal).padStart(8)} | ${r.refMs.toFixed(0).padStart(12)} | ` +
    `${r.dgMs.toFixed(0).padStart(11)} | ${(r.dgMs / r.refMs).toFixed(2).padStart(18)} | ${(r.dgMs / r.ideal).toFixed(2).padStart(14)} | ` +
    `${r.dgCpuUs.toFixed(0).padStart(20)} | ${r.refCpuUs.toFixed(0).padStart(21)}`);
}
