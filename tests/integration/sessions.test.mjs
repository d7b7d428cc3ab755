// SPDX-License-Identifier: AGPL-3.0-or-later
// MCP sessions over Streamable HTTP served by more than one process. With
// --workers 2 each request below goes out on a connection of its own, so
// the kernel hands it to either worker: every request of a session must
// succeed wherever it lands, DELETE must end the session on both, and
// another token's caller must never reach it. Two gateways started with
// one server.sessionKeyEnv accept each other's sessions.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';

import { authHeaders, Gateway, gatewayEnv, httpClient, makeConfig, runBinary, TOKENS } from './lib/gateway.mjs';
import { json, RawConn, request } from './lib/raw.mjs';

const ACCEPT_BOTH = 'application/json, text/event-stream';
const PING = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' });
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'get_data_models', arguments: {} } });
const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

// One request on a new connection, closed after the answer.
async function fresh(port, method, path, { headers = {}, body = '' } = {}) {
  const conn = await RawConn.connect(port);
  try {
    await conn.write(request(method, path, { headers: { Connection: 'close', ...headers }, body }));
    return await conn.readResponse();
  } finally {
    conn.destroy();
  }
}

function mcpHeaders(sid, { token = TOKENS.admin, version = '2025-06-18' } = {}) {
  const h = { ...authHeaders(token), 'Content-Type': 'application/json', Accept: ACCEPT_BOTH };
  if (sid) h['Mcp-Session-Id'] = sid;
  if (version) h['MCP-Protocol-Version'] = version;
  return h;
}

// Statuses of n requests, each on a new connection.
async function statuses(port, n, sid, opts = {}, body = PING) {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await fresh(port, 'POST', '/mcp', { headers: mcpHeaders(sid, opts), body })).status);
  return out;
}

// /healthz of every worker, by pid (asked on new connections until each
// worker has answered).
async function healthByPid(gw) {
  const seen = new Map();
  for (let i = 0; i < 400 && seen.size < gw.pids.length; i++) {
    const h = json(await fresh(gw.port, 'GET', '/healthz'));
    seen.set(h.pid, h);
  }
  assert.deepEqual([...seen.keys()].sort(), [...gw.pids].sort(), 'every worker answered /healthz');
  return seen;
}

// Waits (up to a deadline) until no worker holds a session: a worker ends
// a session deleted elsewhere at its next request or sweep (within 1 s).
async function untilNoSessions(gw) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const held = [...(await healthByPid(gw)).values()].map((h) => h.sessions);
    if (held.every((n) => n === 0)) return;
    if (Date.now() > deadline) assert.fail(`sessions still held: ${held}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('sessions with --workers 2', () => {
  it('serves one session from both workers, ends it on both, and keeps it from other tokens', async () => {
    const gw = await Gateway.start({ args: ['--workers', '2'], listening: 2 });
    try {
      const { client, transport } = await httpClient(gw);
      const sid = transport.sessionId;
      assert.ok(sid, 'the SDK client holds a session');
      const version = transport.protocolVersion ?? '2025-06-18';

      const pings = await statuses(gw.port, 25, sid, { version });
      const calls = await statuses(gw.port, 25, sid, { version }, CALL);
      assert.deepEqual([...pings, ...calls], Array(50).fill(200), 'every request of the session succeeds on either worker');
      for (const [pid, h] of await healthByPid(gw)) assert.ok(h.sessions >= 1, `worker ${pid} served the session`);

      // Without MCP-Protocol-Version a worker that takes the session over
      // speaks 2025-03-26; requests still succeed everywhere.
      assert.deepEqual(await statuses(gw.port, 10, sid, { version: null }), Array(10).fill(200));

      // Another user's token never reaches the session, on either worker.
      assert.deepEqual(await statuses(gw.port, 20, sid, { token: TOKENS.sales, version }), Array(20).fill(404));
      const stranger = await fresh(gw.port, 'DELETE', '/mcp', { headers: { ...authHeaders(TOKENS.sales), 'Mcp-Session-Id': sid } });
      assert.equal(stranger.status, 404);
      assert.ok((await client.listTools()).tools.length > 0, 'the session survives the stranger');

      const del = await fresh(gw.port, 'DELETE', '/mcp', { headers: { ...authHeaders(), 'Mcp-Session-Id': sid } });
      assert.equal(del.status, 204);
      assert.deepEqual(await statuses(gw.port, 20, sid, { version }), Array(20).fill(404), 'ended on every worker');
      const again = await fresh(gw.port, 'DELETE', '/mcp', { headers: { ...authHeaders(), 'Mcp-Session-Id': sid } });
      assert.equal(again.status, 404);
      await untilNoSessions(gw);
      await client.close();
    } finally {
      await gw.stop();
    }
  });
});

describe('sessions across instances', () => {
  it('two gateways with one sessionKeyEnv accept each other\'s sessions; another key does not', async () => {
    const env = { DATAGATE_SESSION_KEY: randomBytes(32).toString('hex') };
    const shared = makeConfig({ server: { sessionKeyEnv: 'DATAGATE_SESSION_KEY' } });
    const gws = [];
    try {
      gws.push(await Gateway.start({ config: shared, env }));
      gws.push(await Gateway.start({ config: shared, env }));
      gws.push(await Gateway.start());
      const [a, b, other] = gws;
      const init = await fresh(a.port, 'POST', '/mcp', { headers: mcpHeaders(null, { version: null }), body: INIT });
      assert.equal(init.status, 200);
      const sid = init.headers['mcp-session-id'];
      assert.match(sid, /^[A-Za-z0-9_-]{60}$/);
      assert.deepEqual(await statuses(b.port, 3, sid), Array(3).fill(200));
      assert.deepEqual(await statuses(b.port, 3, sid, { token: TOKENS.sales }), Array(3).fill(404));
      assert.deepEqual(await statuses(other.port, 3, sid), Array(3).fill(404));
      assert.deepEqual(await statuses(a.port, 3, sid), Array(3).fill(200));
    } finally {
      for (const g of gws) await g.stop();
      shared.remove();
    }
  });

  it('--check-config refuses a session key variable that is unset or short', async () => {
    const cfg = makeConfig({ server: { sessionKeyEnv: 'DATAGATE_IT_SESSION_KEY' } });
    try {
      const unset = await runBinary(['--check-config', cfg.dir]);
      assert.notEqual(unset.code, 0);
      assert.match(unset.stdout, /datagate\.json: \/server\/sessionKeyEnv: environment variable 'DATAGATE_IT_SESSION_KEY' is not set/);
      const short = await runBinary(['--check-config', cfg.dir], { env: gatewayEnv({ DATAGATE_IT_SESSION_KEY: 'too-short' }) });
      assert.notEqual(short.code, 0);
      assert.match(short.stdout, /sessionKeyEnv: .* is too short/);
      const good = await runBinary(['--check-config', cfg.dir], { env: gatewayEnv({ DATAGATE_IT_SESSION_KEY: 'k'.repeat(32) }) });
      assert.equal(good.code, 0, good.stdout);
    } finally {
      cfg.remove();
    }
  });
});
