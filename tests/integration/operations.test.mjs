// SPDX-License-Identifier: AGPL-3.0-or-later
// What an operator relies on: the access log (a file reopened on SIGHUP,
// standard error, or off), W3C traceparent continued into the log lines
// and the upstream calls, and a /metrics exposition that follows the
// Prometheus text format rules (checked by a parser written here from
// them), with HELP and TYPE for every family.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, SOURCE_DIR, writeJson } from './lib/gateway.mjs';
import { requestsTo, startMock } from './lib/upstream.mjs';

const erpToken = `erp-${randomUUID()}`;
const env = { DATAGATE_SAMPLE_ERP_TOKEN: erpToken };
// LiveOrderStatus of conf/saved_queries.json.
const LIVE_ORDER = '0df62209-292d-4ece-8b49-58aa7557460c';
const liveOrder = (n) => ({ savedQueryId: LIVE_ORDER, inputs: [{ key: 'OrderNumber', value: n }] });
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

let mock;
let tmp;

before(async () => {
  mock = await startMock({ credentials: { erpToken } });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-ops-'));
});

after(async () => {
  await mock?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

// conf/ pointed at the mock upstream, with server settings overridden.
function mockConfig(server = {}) {
  return makeConfig({
    server,
    edit: (dir) => {
      const conns = readJson(path.join(dir, 'connectors.json'));
      for (const c of conns.connectors) c.baseUrl = c.baseUrl.replace('http://127.0.0.1:8091', mock.base);
      writeJson(path.join(dir, 'connectors.json'), conns);
      const files = readJson(path.join(dir, 'files.json'));
      files.sources[0].origin = mock.base;
      writeJson(path.join(dir, 'files.json'), files);
    },
  });
}

async function get(gw, p, headers = {}) {
  return fetch(`${gw.origin}${p}`, { headers });
}

const readLines = (file) => fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

// The fields and types docs/operations.md gives the access line.
function assertAccessLine(l) {
  assert.equal(l.level, 'info');
  assert.equal(l.event, 'access');
  assert.match(l.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  for (const k of ['request_id', 'method', 'path', 'peer']) assert.equal(typeof l[k], 'string', k);
  for (const k of ['status', 'bytes']) assert.ok(Number.isInteger(l[k]), k);
  assert.ok(typeof l.duration_ms === 'number' && l.duration_ms >= 0);
  // Rounded to the microsecond: no float noise.
  assert.ok(/^\d+(\.\d{1,3})?$/.test(String(l.duration_ms)), `duration_ms ${l.duration_ms}`);
  assert.ok(['http', 'https'].includes(l.transport));
}

describe('access log', () => {
  it('a file gets one line per response; SIGHUP reopens it; stderr gets none', async () => {
    const file = path.join(tmp, 'access.log');
    const cfg = mockConfig({ accessLog: file });
    const gw = await Gateway.start({ config: cfg });
    try {
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      assert.equal((await get(gw, '/healthz', { 'X-Request-Id': ids[0] })).status, 200);
      assert.equal((await get(gw, '/nothing?q=1', { 'X-Request-Id': ids[1] })).status, 404);
      assert.equal((await get(gw, '/readyz', { 'X-Request-Id': ids[2] })).status, 200);
      // logrotate: the file is moved away, then SIGHUP.
      fs.renameSync(file, `${file}.1`);
      gw.signal('SIGHUP');
      await gw.waitForLog((l) => l.event === 'reloaded');
      const late = randomUUID();
      assert.equal((await get(gw, '/healthz', { 'X-Request-Id': late })).status, 200);
      await gw.stop();
      const rotated = readLines(`${file}.1`);
      assert.deepEqual(rotated.map((l) => [l.request_id, l.method, l.path, l.status]),
        [[ids[0], 'GET', '/healthz', 200], [ids[1], 'GET', '/nothing', 404], [ids[2], 'GET', '/readyz', 200]]);
      rotated.forEach(assertAccessLine);
      const fresh = readLines(file);
      assert.deepEqual(fresh.map((l) => l.request_id), [late]);
      assert.deepEqual(gw.logs.filter((l) => l.event === 'access'), [], 'no access line on stderr');
    } finally {
      gw.kill();
      cfg.remove();
    }
  });

  it('"-" writes the lines on standard error; null writes none', async () => {
    for (const [accessLog, want] of [['-', 1], [null, 0]]) {
      const cfg = mockConfig({ accessLog });
      const gw = await Gateway.start({ config: cfg });
      try {
        const id = randomUUID();
        assert.equal((await get(gw, '/healthz', { 'X-Request-Id': id })).status, 200);
        await gw.stop();
        const lines = gw.logs.filter((l) => l.event === 'access');
        assert.equal(lines.filter((l) => l.request_id === id).length, want, `accessLog ${accessLog}`);
        if (want === 0) assert.deepEqual(lines, []);
        lines.forEach(assertAccessLine);
      } finally {
        gw.kill();
        cfg.remove();
      }
    }
  });
});

describe('traceparent', () => {
  let gw;
  const file = () => path.join(tmp, 'trace-access.log');

  before(async () => {
    gw = await Gateway.start({ config: mockConfig({ accessLog: file() }), env });
  });

  after(async () => {
    await gw?.stop();
  });

  async function callWith(headers, name, args) {
    const { client } = await httpClient(gw, { headers });
    try {
      const r = await client.callTool({ name, arguments: args });
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      return r;
    } finally {
      await client.close();
    }
  }

  it('a valid one is continued: its trace id in the log lines and, with new span ids, upstream', async () => {
    mock.upstream.control({ reset: true });
    const requestId = randomUUID();
    const headers = { traceparent: `00-${TRACE}-${PARENT}-01`, 'X-Request-Id': requestId };
    await callWith(headers, 'execute_saved_query', liveOrder('SO-1001'));
    await callWith(headers, 'aggregate_saved_query', { ...liveOrder('SO-1002'), aggregations: [{ function: 'Count' }] });
    const f = mock.upstream.files ? [...mock.upstream.files.keys()].find((p) => p.startsWith('/files/') && p.endsWith('.pdf')) : null;
    assert.ok(f, 'the mock serves a sample PDF');
    await callWith(headers, 'get_file_text', { url: `${mock.base}${f}` });
    const sent = ['/erp/orders/SO-1001', '/erp/orders/SO-1002', f].flatMap((p) => requestsTo(mock, p)).map((r) => r.headers.traceparent);
    assert.equal(sent.length, 3);
    for (const t of sent) {
      const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(t);
      assert.ok(m, t);
      assert.equal(m[1], TRACE);
      assert.notEqual(m[2], PARENT, 'a new span id');
    }
    const calls = gw.logs.filter((l) => l.event === 'tool_call' && l.request_id === requestId);
    assert.equal(calls.length, 3);
    for (const l of calls) {
      assert.equal(l.trace_id, TRACE);
      assert.ok(/^\d+(\.\d{1,3})?$/.test(String(l.duration_ms)), `duration_ms ${l.duration_ms}`);
    }
    // The access lines are written by the next loop turn at the latest.
    await get(gw, '/healthz');
    const access = readLines(file()).filter((l) => l.request_id === requestId);
    assert.ok(access.length >= 2);
    for (const l of access) assert.equal(l.trace_id, TRACE);
  });

  it('an invalid one is ignored: the trace id is the request id, as without one', async () => {
    const bad = [
      `00-${TRACE.toUpperCase()}-${PARENT}-01`, `00-${'0'.repeat(32)}-${PARENT}-01`, `00-${TRACE}-${'0'.repeat(16)}-01`,
      `ff-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01-extra`, `00-${TRACE}-${PARENT}`, 'garbage',
    ];
    for (const value of bad) {
      mock.upstream.control({ reset: true });
      const requestId = randomUUID();
      await callWith({ traceparent: value, 'X-Request-Id': requestId }, 'execute_saved_query',
        liveOrder('SO-1002'));
      const [r] = requestsTo(mock, '/erp/orders/SO-1002');
      assert.match(r.headers.traceparent, new RegExp(`^00-${requestId.replaceAll('-', '')}-[0-9a-f]{16}-01$`), value);
      const call = gw.logs.find((l) => l.event === 'tool_call' && l.request_id === requestId);
      assert.equal(call.trace_id, undefined, value);
    }
  });
});

// ---- The Prometheus text format ----------------------------------------------------------

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

// Label pairs of `{a="x",b="y\"z"}` starting at text[i] === '{'; returns
// [labels, index after '}'].
function parseLabels(text, i, where) {
  const labels = {};
  i++;
  while (text[i] !== '}') {
    const eq = text.indexOf('=', i);
    const name = text.slice(i, eq);
    assert.match(name, LABEL, `${where}: label name ${name}`);
    assert.ok(!(name in labels), `${where}: label ${name} twice`);
    assert.equal(text[eq + 1], '"', `${where}: quoted value`);
    let j = eq + 2;
    let value = '';
    for (; text[j] !== '"'; j++) {
      assert.ok(j < text.length, `${where}: unterminated value`);
      if (text[j] === '\\') {
        j++;
        assert.ok(['\\', '"', 'n'].includes(text[j]), `${where}: escape \\${text[j]}`);
        value += text[j] === 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else assert.equal(text[i], '}', `${where}: , or }`);
  }
  return [labels, i + 1];
}

function parseValue(s, where) {
  if (['+Inf', '-Inf', 'NaN'].includes(s)) return s === 'NaN' ? NaN : s === '+Inf' ? Infinity : -Infinity;
  assert.match(s, /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/, `${where}: value ${s}`);
  return Number(s);
}

// Families by name: { help, type, samples: [{ name, labels, value }] }.
// Asserts the rules: one HELP and one TYPE per family, both before its
// samples, a family's samples together, histogram series complete.
function parseExposition(text) {
  assert.ok(text.endsWith('\n'), 'the last line ends with a newline');
  const families = new Map();
  let current = null;
  const family = (name) => {
    if (!families.has(name)) families.set(name, { help: null, type: null, samples: [], closed: false });
    return families.get(name);
  };
  for (const [n, line] of text.slice(0, -1).split('\n').entries()) {
    const where = `line ${n + 1} '${line}'`;
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      assert.match(name, NAME, where);
      const f = family(name);
      assert.equal(f.samples.length, 0, `${where}: ${kind} after samples`);
      if (kind === 'HELP') {
        assert.equal(f.help, null, `${where}: a second HELP`);
        f.help = rest;
      } else {
        assert.equal(f.type, null, `${where}: a second TYPE`);
        assert.ok(TYPES.has(rest), `${where}: type ${rest}`);
        f.type = rest;
      }
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
    assert.ok(m, `${where}: a metric name`);
    let i = m[1].length;
    let labels = {};
    if (line[i] === '{') [labels, i] = parseLabels(line, i, where);
    assert.equal(line[i], ' ', `${where}: a space before the value`);
    const [value, ts, extra] = line.slice(i + 1).split(' ');
    assert.equal(extra, undefined, where);
    if (ts !== undefined) assert.match(ts, /^-?\d+$/, `${where}: timestamp`);
    const base = [...families.keys()].find((k) => families.get(k).type === 'histogram' && /^(.*)_(bucket|sum|count)$/.exec(m[1])?.[1] === k) ?? m[1];
    const f = family(base);
    if (current !== base) {
      assert.ok(!f.closed, `${where}: the samples of ${base} are not together`);
      if (current !== null) families.get(current).closed = true;
      current = base;
    }
    f.samples.push({ name: m[1], labels, value: parseValue(value, where) });
  }
  return families;
}

// Each histogram series: cumulative buckets in increasing le, +Inf equal
// to _count, and a _sum.
function checkHistogram(name, f) {
  const series = new Map();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    if (!series.has(key)) series.set(key, { buckets: [], sum: null, count: null });
    const e = series.get(key);
    if (s.name === `${name}_bucket`) e.buckets.push([parseValue(le, name), s.value]);
    else if (s.name === `${name}_sum`) e.sum = s.value;
    else if (s.name === `${name}_count`) e.count = s.value;
    else assert.fail(`${s.name} in histogram ${name}`);
  }
  for (const [key, e] of series) {
    assert.ok(e.buckets.length > 0 && e.sum !== null && e.count !== null, `${name}${key} complete`);
    for (let i = 1; i < e.buckets.length; i++) {
      assert.ok(e.buckets[i][0] > e.buckets[i - 1][0], `${name}${key}: le increases`);
      assert.ok(e.buckets[i][1] >= e.buckets[i - 1][1], `${name}${key}: buckets are cumulative`);
    }
    assert.equal(e.buckets.at(-1)[0], Infinity, `${name}${key}: a +Inf bucket`);
    assert.equal(e.buckets.at(-1)[1], e.count, `${name}${key}: +Inf equals _count`);
  }
}

describe('/metrics', () => {
  it('parses as the Prometheus text format, every family with HELP and TYPE', async () => {
    const gw = await Gateway.start({ config: mockConfig(), env });
    try {
      const { client } = await httpClient(gw);
      // Touch the families: tool calls, an upstream call, an extraction.
      await client.callTool({ name: 'get_data_models', arguments: {} });
      await client.callTool({ name: 'execute_saved_query', arguments: liveOrder('SO-1001') });
      const f = [...mock.upstream.files.keys()].find((p) => p.startsWith('/files/') && p.endsWith('.pdf'));
      const r = await client.callTool({ name: 'get_file_text', arguments: { url: `${mock.base}${f}` } });
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      await client.close();
      const res = await get(gw, '/metrics');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
      const families = parseExposition(await res.text());
      for (const [name, fam] of families) {
        assert.ok(fam.help !== null && fam.help.length > 0, `# HELP ${name}`);
        assert.ok(fam.type !== null, `# TYPE ${name}`);
        if (fam.type === 'histogram') checkHistogram(name, fam);
        if (fam.type === 'counter') assert.ok(name.endsWith('_total'), `counter ${name} ends in _total`);
      }
      for (const name of ['datagate_extract_total', 'datagate_extract_seconds', 'dg_tool_calls_total', 'dg_upstream_calls_total',
        'process_resident_memory_bytes', 'process_open_fds', 'process_cpu_seconds_total', 'process_start_time_seconds', 'datagate_build_info'])
        assert.ok(families.has(name), `${name} is exposed`);
      const { version } = await (await get(gw, '/healthz')).json();
      assert.deepEqual(families.get('datagate_build_info').samples, [{ name: 'datagate_build_info', labels: { version }, value: 1 }]);
      const start = families.get('process_start_time_seconds').samples[0].value;
      assert.ok(Math.abs(start - Date.now() / 1000) < 3600, `start time ${start}`);
      assert.ok(families.get('process_open_fds').samples[0].value > 3);
    } finally {
      await gw.stop();
    }
  });
});

// ---- docs/operations.md lists every event ---------------------------------------------

// The event names the sources log: the second argument of dg_log_json and
// dg_logf when it is a literal, and the literals handed to the helpers
// that pass an event on (reload problems, save warnings, store notes, the
// access line).
function loggedEvents() {
  const patterns = [
    /dg_log(?:f|_json)\(\s*[^,;]+,\s*"([a-z_]+)"/g,
    /log_config_errors\(\s*"([a-z_]+)"/g,
    /dg__save_warn\([^;"]*"([a-z_]+)"/g,
    /"event",\s*"([a-z_]+)"/g,
    /named \? named : "([a-z_]+)"/g,
    /\\"event\\":\\"([a-z_]+)\\"/g,
  ];
  const events = new Map();
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.c')) {
        const text = fs.readFileSync(p, 'utf8');
        for (const re of patterns) for (const m of text.matchAll(re)) events.set(m[1], path.relative(SOURCE_DIR, p));
      }
    }
  };
  walk(path.join(SOURCE_DIR, 'src'));
  return events;
}

describe('docs/operations.md', () => {
  it('lists every log event the sources write, and every level', () => {
    const doc = fs.readFileSync(path.join(SOURCE_DIR, 'docs/operations.md'), 'utf8');
    const logs = doc.slice(doc.indexOf('\n## Logs\n'), doc.indexOf('\n## Health and metrics\n'));
    const documented = new Set([...logs.matchAll(/^\|([^|]+)\|/gm)].flatMap((m) => [...m[1].matchAll(/`([a-z_]+)`/g)].map((x) => x[1])));
    const events = loggedEvents();
    for (const must of ['listening', 'access', 'tool_call', 'upstream_breaker', 'saved_query_failed', 'store_closed', 'save_warning', 'reload_failed', 'store_migration'])
      assert.ok(events.has(must), `the scan finds ${must}`);
    const missing = [...events].filter(([e]) => !documented.has(e)).map(([e, file]) => `${e} (${file})`);
    assert.deepEqual(missing, [], 'events missing from the Logs tables of docs/operations.md');
    for (const level of ['debug', 'info', 'warn', 'error', 'notice']) assert.ok(documented.has(level), `level ${level}`);
  });
});
