// SPDX-License-Identifier: AGPL-3.0-or-later
// The process: command line, --check-config, graceful drain on SIGTERM,
// configuration reload on SIGHUP (good and bad), and --workers.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';

import { authHeaders, CONF_DIR, Gateway, httpClient, makeConfig, readJson, runBinary, SOURCE_DIR, TOKENS, writeJson, wsClient } from './lib/gateway.mjs';
import { closePayload, json, RawConn, RawWs, request } from './lib/raw.mjs';

const PROBLEM_LINE = /^([\w.-]+\.json): (\/[^:]*): (.+)$/;

describe('command line', () => {
  it('--version prints the project version', async () => {
    const version = /project\(datagate VERSION (\S+)/.exec(fs.readFileSync(path.join(SOURCE_DIR, 'CMakeLists.txt'), 'utf8'))[1];
    for (const flag of ['--version', '-V']) {
      const r = await runBinary([flag]);
      assert.equal(r.code, 0);
      assert.equal(r.stdout, `datagate ${version}\n`);
    }
  });

  it('--help lists every option', async () => {
    const r = await runBinary(['--help']);
    assert.equal(r.code, 0);
    for (const opt of ['--config', '--listen', '--workers', '--stdio', '--check-config', '--log-level', '--version', '--help'])
      assert.ok(r.stdout.includes(opt), `--help mentions ${opt}`);
  });

  it('refuses bad options with status 2 and a hint', async () => {
    for (const args of [['--workers', '0'], ['--listen', 'nohost'], ['--log-level', 'loud'], ['--bogus'], ['extra']]) {
      const r = await runBinary(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /--help/);
      assert.equal(r.stdout, '');
    }
  });
});

describe('--extract', () => {
  it('exits 2 on a usage error, 1 when the document cannot be read, as docs/extract.md says', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-extract-'));
    const file = path.join(dir, 'hello.txt');
    fs.writeFileSync(file, 'hello\n');
    try {
      const doc = fs.readFileSync(path.join(SOURCE_DIR, 'docs/extract.md'), 'utf8');
      assert.match(doc, /1 when the document cannot\s+be extracted \(the reason on standard error\), 2 for a usage error/);
      const usage = [[], [file, 'extra'], [file, '--bogus'], [file, '--offset'], [file, '--offset', '-1'], [file, '--chunk-chars', '1'],
        [file, '--chunk-chars', '0'], [file, '--chunk-chars', '1000001'], [file, '--offset', '999']];
      for (const args of usage) {
        const r = await runBinary(['--extract', ...args]);
        assert.equal(r.code, 2, `--extract ${args.join(' ')}: ${r.stderr}`);
        assert.equal(r.stdout, '');
      }
      const missing = await runBinary(['--extract', path.join(dir, 'missing.txt')]);
      assert.equal(missing.code, 1, missing.stderr);
      const ok = await runBinary(['--extract', file, '--chunk-chars', '16']);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /^hello\n/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--process extracts in an extractor process, as the gateway does; --usage prints what it cost', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-extract-'));
    const file = path.join(dir, 'page.html');
    fs.writeFileSync(file, '<html><body><h1>Title</h1><p>First paragraph.</p><p>Second.</p></body></html>');
    try {
      const here = await runBinary(['--extract', file, '--usage']);
      const there = await runBinary(['--extract', file, '--process', '--usage']);
      assert.equal(here.code, 0, here.stderr);
      assert.equal(there.code, 0, there.stderr);
      assert.equal(there.stdout, here.stdout);
      assert.match(there.stdout, /Title\n\nFirst paragraph\.\n\nSecond\./);
      const usage = (r) => JSON.parse(r.stderr.trim().split('\n').at(-1));
      const u = usage(there);
      assert.deepEqual(Object.keys(u), ['cpuSeconds', 'maxRssKiB', 'extractorCpuSeconds', 'extractorMaxRssKiB']);
      assert.ok(u.maxRssKiB > 0 && u.extractorMaxRssKiB > 0, there.stderr);
      assert.ok(u.cpuSeconds >= 0 && u.extractorCpuSeconds >= 0, there.stderr);
      // Without --process nothing runs in another process.
      assert.equal(usage(here).extractorMaxRssKiB, 0, here.stderr);
      assert.equal(usage(here).extractorCpuSeconds, 0, here.stderr);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('--check-config', () => {
  it('accepts conf/ and counts what it holds', async () => {
    const r = await runBinary(['--check-config', CONF_DIR]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const conf = readJson(path.join(CONF_DIR, 'datagate.json'));
    const { models } = readJson(path.join(CONF_DIR, 'models.json'));
    assert.match(r.stdout, /: OK\n$/);
    for (const part of [`${models.length} models`, `${conf.roles.length} roles`, `${conf.users.length} users`])
      assert.ok(r.stdout.includes(part), `${part} in ${r.stdout}`);
  });

  it('reports every problem of a broken copy as file: json/path: message', async () => {
    let broken;
    const cfg = makeConfig({ server: { maxBodyByte: 5, maxHeaders: 3 }, edit: (dir) => (broken = breakModels(dir)) });
    try {
      const r = await runBinary(['--check-config', cfg.dir]);
      assert.notEqual(r.code, 0);
      const lines = r.stdout.trim().split('\n');
      const summary = lines.pop();
      assert.ok(summary.endsWith(`: ${lines.length} problems found`), summary);
      for (const line of lines) assert.match(line, PROBLEM_LINE);
      const paths = lines.map((l) => PROBLEM_LINE.exec(l).slice(1, 3).join(' '));
      for (const want of ['datagate.json /server/maxBodyByte', 'datagate.json /server/maxHeaders', ...broken.map((p) => `models.json ${p}`)])
        assert.ok(paths.includes(want), `${want} reported in:\n${r.stdout}`);
      assert.match(lines.find((l) => l.includes('maxBodyByte')), /maxBodyBytes/, 'suggests the right name');
    } finally {
      cfg.remove();
    }
  });

  it('checks the sample data of data/ as start-up loads it', async () => {
    const cfg = makeConfig({ edit: (dir) => {
      const file = path.join(dir, 'data', 'Orders.json');
      const doc = readJson(file);
      doc.entities[1].Amount = 'lots';
      writeJson(file, doc);
    } });
    try {
      const r = await runBinary(['--check-config', cfg.dir]);
      assert.equal(r.code, 1, r.stdout);
      const lines = r.stdout.trim().split('\n');
      assert.equal(lines.length, 2, r.stdout);
      assert.match(lines[0], /^data\/Orders\.json: .*'entities\[1\]\.Amount': got "lots"; Amount is Decimal/);
      assert.equal(lines[1], `${cfg.dir}: 1 problem found`);
      // Start-up refuses the same file for the same reason.
      const start = await runBinary(['--config', cfg.dir, '--listen', '127.0.0.1:0', '--database', path.join(cfg.dir, 'new.db')]);
      assert.notEqual(start.code, 0);
      assert.ok(start.stderr.includes("'entities[1].Amount': got \\\"lots\\\""), start.stderr);
    } finally {
      cfg.remove();
    }
  });

  it('prints the cause of a renamed or duplicated model first, without follow-on errors', async () => {
    const cases = {
      renamed: (m) => (m.models.find((x) => x.name === 'Customers').name = 'Clients'),
      duplicated: (m) => m.models.unshift({ ...m.models.find((x) => x.name === 'Orders'), id: '11111111-2222-4333-8444-555555555555' }),
    };
    for (const [what, change] of Object.entries(cases)) {
      const cfg = makeConfig({ edit: (dir) => {
        const m = readJson(path.join(dir, 'models.json'));
        change(m);
        writeJson(path.join(dir, 'models.json'), m);
      } });
      try {
        const r = await runBinary(['--check-config', cfg.dir]);
        assert.equal(r.code, 1, r.stdout);
        const lines = r.stdout.trim().split('\n').slice(0, -1);
        const cause = what === 'renamed' ? /^models\.json: \/models\/\d+\/properties\/\d+\/reference\/target: unknown model 'Customers'/
          : /^models\.json: \/models\/\d+\/name: duplicate model name 'Orders'/;
        assert.match(lines[0], cause, `${what}:\n${r.stdout}`);
        assert.ok(!r.stdout.includes('does not point back'), `${what}: no follow-on error:\n${r.stdout}`);
        if (what === 'duplicated') assert.equal(lines.length, 1, r.stdout);
        else for (const l of lines) assert.match(l, /unknown model 'Customers'/);
      } finally {
        cfg.remove();
      }
    }
  });

  it('refuses to start on a broken configuration', async () => {
    let broken;
    const cfg = makeConfig({ edit: (dir) => (broken = breakModels(dir)) });
    try {
      const r = await runBinary(['--config', cfg.dir, '--listen', '127.0.0.1:0']);
      assert.equal(r.code, 1);
      for (const p of broken) assert.ok(r.stderr.includes(`models.json: ${p}: `), r.stderr);
    } finally {
      cfg.remove();
    }
  });
});

// Two problems in models.json: a misspelt data type and an unknown
// reference target. Returns their JSON paths.
function breakModels(dir) {
  const file = path.join(dir, 'models.json');
  const m = readJson(file);
  m.models[1].properties[0].dataType = 'Strin';
  const mi = m.models.findIndex((model) => model.properties.some((p) => p.reference?.target));
  const pi = m.models[mi].properties.findIndex((p) => p.reference?.target);
  m.models[mi].properties[pi].reference.target = 'Custmers';
  writeJson(file, m);
  return ['/models/1/properties/0/dataType', `/models/${mi}/properties/${pi}/reference/target`];
}

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

function mcpHeaders(extra = {}) {
  return { ...authHeaders(), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...extra };
}

function refused(port) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (err) => resolve(err.code === 'ECONNREFUSED'));
  });
}

describe('SIGTERM', () => {
  it('drains: finishes the request in flight, closes idle connections and WebSockets, exits 0', async () => {
    const gw = await Gateway.start();
    try {
      // An idle keep-alive connection.
      const idle = await RawConn.connect(gw.port);
      await idle.write(request('GET', '/healthz'));
      assert.equal((await idle.readResponse()).status, 200);
      // A WebSocket.
      const ws = await RawWs.open(gw.port, '/mcp', { headers: authHeaders() });
      // A request whose headers the server has read (100 Continue says so)
      // and whose body has not arrived yet.
      const body = INIT;
      const busy = await RawConn.connect(gw.port);
      await busy.write(request('POST', '/mcp', { headers: mcpHeaders({ Expect: '100-continue', 'Content-Length': Buffer.byteLength(body) }) }));
      assert.equal((await busy.readResponse()).status, 100);

      gw.signal('SIGTERM');
      const draining = await gw.waitForLog((l) => l.event === 'draining');
      assert.equal(draining.reason, 'SIGTERM');
      assert.equal(draining.connections, 3);

      assert.ok(await refused(gw.port), 'no new connection is accepted');
      assert.ok((await idle.waitClosed()).clean, 'the idle connection is closed cleanly');
      const close = await ws.readUntil(8);
      assert.equal(close.code, 1001);
      await ws.send(8, closePayload(1001));
      assert.ok((await ws.conn.waitClosed()).clean);

      await busy.write(body);
      const res = await busy.readResponse();
      assert.equal(res.status, 200, res.text);
      assert.equal(json(res).result.protocolVersion, '2025-06-18');
      assert.equal(res.headers.connection?.toLowerCase(), 'close');
      assert.ok((await busy.waitClosed()).clean);

      const stopped = await gw.waitForLog((l) => l.event === 'stopped');
      assert.equal(stopped.canceled_calls, 0);
    } finally {
      await gw.stop();
    }
  });

  it('/readyz answers 200 while serving and 503 once draining; /healthz stays 200', async () => {
    const gw = await Gateway.start();
    try {
      const before = await RawConn.connect(gw.port);
      await before.write(request('GET', '/readyz'));
      const ready = await before.readResponse();
      assert.equal(ready.status, 200, ready.text);
      assert.deepEqual(json(ready), { status: 'ready' });
      // Requests whose heads are not complete when the drain starts.
      const probes = [];
      for (const p of ['/readyz', '/healthz']) {
        const conn = await RawConn.connect(gw.port);
        const head = request('GET', p);
        await conn.write(head.subarray(0, head.length - 2));
        probes.push([conn, head.subarray(head.length - 2)]);
      }
      // A request answered on a connection opened after those bytes were
      // sent proves the loop has read them: it reads every ready socket of a
      // turn before it accepts and answers a later connection.
      const sync = await RawConn.connect(gw.port);
      await sync.write(request('GET', '/healthz'));
      assert.equal((await sync.readResponse()).status, 200);
      gw.signal('SIGTERM');
      await gw.waitForLog((l) => l.event === 'draining');
      const statuses = [];
      for (const [conn, rest] of probes) {
        await conn.write(rest);
        statuses.push((await conn.readResponse()).status);
      }
      assert.deepEqual(statuses, [503, 200]);
    } finally {
      await gw.stop();
    }
  });

  it('a second SIGTERM during the drain changes nothing', async () => {
    const gw = await Gateway.start();
    const busy = await RawConn.connect(gw.port);
    try {
      await busy.write(request('POST', '/mcp', { headers: mcpHeaders({ Expect: '100-continue', 'Content-Length': Buffer.byteLength(INIT) }) }));
      assert.equal((await busy.readResponse()).status, 100);
      gw.signal('SIGTERM');
      await gw.waitForLog((l) => l.event === 'draining');
      gw.signal('SIGTERM');
      gw.signal('SIGINT');
      gw.signal('SIGHUP');
      await busy.write(INIT);
      assert.equal((await busy.readResponse()).status, 200);
      // A supervisor that keeps sending SIGTERM while the process finishes
      // must not turn its clean exit into death by signal.
      while (!gw.exit) {
        try {
          gw.signal('SIGTERM');
        } catch {
          break; // gone already
        }
        await new Promise((r) => setImmediate(r));
      }
      assert.equal(gw.logs.filter((l) => l.event === 'draining').length, 1);
      assert.ok(!gw.logs.some((l) => l.event === 'reloaded'), 'no reload while draining');
    } finally {
      busy.destroy();
      await gw.stop();
    }
  });
});

describe('drain deadline', () => {
  it('closes a server stream at drainTimeoutMs and still exits 0', async () => {
    const cfg = makeConfig({ server: { drainTimeoutMs: 300 } });
    const gw = await Gateway.start({ config: cfg });
    try {
      const init = await fetch(gw.url, { method: 'POST', headers: mcpHeaders(), body: INIT });
      const sid = init.headers.get('mcp-session-id');
      await init.arrayBuffer();
      const stream = await fetch(gw.url, { headers: { ...authHeaders(), Accept: 'text/event-stream', 'Mcp-Session-Id': sid } });
      assert.equal(stream.status, 200);
      gw.signal('SIGTERM');
      // At the deadline the connection is closed, as for any other request.
      const reader = stream.body.getReader();
      await (async () => {
        while (!(await reader.read()).done);
      })().catch((err) => assert.match(String(err.cause ?? err), /closed|terminated/));
      const stopped = await gw.waitForLog((l) => l.event === 'stopped');
      assert.equal(stopped.exit_code, 0);
    } finally {
      await gw.stop();
      cfg.remove();
    }
  });
});

// Rewrites the first model's description in a configuration directory.
function describeFirstModel(dir, text) {
  const file = path.join(dir, 'models.json');
  const m = readJson(file);
  m.models[0].description = text;
  writeJson(file, m);
  return m.models[0].id;
}

async function firstDescription(client, id) {
  const r = await client.callTool({ name: 'get_data_models', arguments: {} });
  return r.structuredContent.dataModels.find((m) => m.dataModelId.toLowerCase() === id.toLowerCase()).description;
}

describe('SIGHUP', () => {
  it('picks up a good configuration without dropping connections', async () => {
    const cfg = makeConfig();
    const gw = await Gateway.start({ config: cfg });
    const raw = await RawConn.connect(gw.port);
    const http = await httpClient(gw);
    const ws = await wsClient(gw);
    const auditor = await wsClient(gw, { token: TOKENS.auditor });
    try {
      await raw.write(request('GET', '/healthz'));
      assert.equal((await raw.readResponse()).status, 200);
      const before = await firstDescription(http.client, readJson(cfg.file('models.json')).models[0].id);

      const text = `Reloaded at ${Date.now()}`;
      const id = describeFirstModel(cfg.dir, text);
      // New limits apply to new requests; the auditor loses its token.
      const conf = readJson(cfg.file('datagate.json'));
      conf.server.maxBodyBytes = 2048;
      conf.users.find((u) => u.name === 'auditor').tokenEnv = 'DATAGATE_IT_UNSET_TOKEN';
      writeJson(cfg.file('datagate.json'), conf);
      gw.signal('SIGHUP');
      const done = await gw.waitForLog((l) => l.event === 'reloaded');
      assert.equal(done.models, readJson(cfg.file('models.json')).models.length);

      assert.notEqual(before, text);
      assert.equal(await firstDescription(http.client, id), text, 'the HTTP session sees the new snapshot');
      assert.equal(await firstDescription(ws.client, id), text, 'the WebSocket sees the new snapshot');
      await assert.rejects(auditor.client.callTool({ name: 'get_data_models', arguments: {} }), /-32001|token|auth/i);

      await raw.write(request('GET', '/healthz'));
      assert.equal((await raw.readResponse()).status, 200, 'the open connection still serves');
      await raw.write(request('POST', '/mcp', { headers: mcpHeaders(), body: INIT + ' '.repeat(3000) }));
      assert.equal((await raw.readResponse()).status, 413, 'the new body limit applies');
      assert.ok(!gw.logs.some((l) => l.event === 'reload_failed'));
    } finally {
      raw.destroy();
      await http.client.close();
      await ws.client.close();
      await auditor.client.close();
      await gw.stop();
      cfg.remove();
    }
  });

  it('refuses a bad configuration, logs every problem and keeps the old one', async () => {
    const cfg = makeConfig();
    const gw = await Gateway.start({ config: cfg });
    const http = await httpClient(gw);
    const raw = await RawConn.connect(gw.port);
    try {
      const { id, description } = readJson(cfg.file('models.json')).models[0];
      await raw.write(request('GET', '/healthz'));
      assert.equal((await raw.readResponse()).status, 200);

      describeFirstModel(cfg.dir, 'never served');
      const broken = breakModels(cfg.dir);
      const conf = readJson(cfg.file('datagate.json'));
      conf.server.maxBodyByte = 5;
      writeJson(cfg.file('datagate.json'), conf);
      // The reload reports what --check-config reports, line for line.
      const check = await runBinary(['--check-config', cfg.dir]);
      const expected = check.stdout.trim().split('\n').slice(0, -1);
      assert.ok(expected.length >= 3, check.stdout);
      gw.signal('SIGHUP');
      const problems = await gw.waitForLogs((l) => l.event === 'reload_failed', expected.length);
      assert.deepEqual(problems.map((p) => p.problem).sort(), [...expected].sort());
      assert.ok(problems.every((p) => p.level === 'error'));
      const paths = problems.map((p) => PROBLEM_LINE.exec(p.problem)[2]);
      for (const p of [...broken, '/server/maxBodyByte']) assert.ok(paths.includes(p), p);

      assert.equal(await firstDescription(http.client, id), description ?? '', 'the old snapshot is kept');
      await raw.write(request('GET', '/healthz'));
      assert.equal((await raw.readResponse()).status, 200, 'the open connection still serves');
      assert.ok(!gw.logs.some((l) => l.event === 'reloaded'));
    } finally {
      raw.destroy();
      await http.client.close();
      await gw.stop();
      cfg.remove();
    }
  });
});

describe('--workers', () => {
  it('serves from two processes on one port and stops them all', async () => {
    const gw = await Gateway.start({ args: ['--workers', '2'], listening: 2 });
    try {
      assert.equal(new Set(gw.pids).size, 2);
      assert.ok(!gw.pids.includes(gw.pid), 'the master serves nothing');
      const seen = new Set();
      for (let i = 0; i < 400 && seen.size < 2; i++) {
        const c = await RawConn.connect(gw.port);
        await c.write(request('GET', '/healthz', { headers: { Connection: 'close' } }));
        seen.add(json(await c.readResponse()).pid);
        c.destroy();
      }
      assert.deepEqual([...seen].sort(), [...gw.pids].sort());

      gw.signal('SIGHUP');
      await gw.waitForLogs((l) => l.event === 'reloaded', 2);
    } finally {
      await gw.stop();
    }
    const exited = gw.logs.filter((l) => l.event === 'worker_exited');
    assert.equal(exited.length, 2);
    assert.ok(exited.every((l) => l.clean === true));
  });

  it('restarts a worker that dies and keeps serving on the port', async () => {
    const gw = await Gateway.start({ args: ['--workers', '2'], listening: 2 });
    try {
      process.kill(gw.pids[0], 'SIGKILL');
      const died = await gw.waitForLog((l) => l.event === 'worker_died');
      assert.equal(died.pid, gw.pids[0]);
      assert.equal(died.signal, 9);
      const again = (await gw.waitForLogs((l) => l.event === 'listening', 3))[2];
      assert.equal(again.port, gw.port);
      assert.equal(again.worker, died.worker);
      const live = new Set([again.pid, gw.pids[1]]);
      const seen = new Set();
      for (let i = 0; i < 400 && seen.size < 2; i++) {
        const c = await RawConn.connect(gw.port);
        await c.write(request('GET', '/healthz', { headers: { Connection: 'close' } }));
        seen.add(json(await c.readResponse()).pid);
        c.destroy();
      }
      assert.deepEqual([...seen].sort(), [...live].sort());
    } finally {
      await gw.stop();
    }
  });
});
