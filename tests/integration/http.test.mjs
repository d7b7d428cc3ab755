// SPDX-License-Identifier: AGPL-3.0-or-later
// Streamable HTTP at /mcp as the MCP transport specification describes it,
// the gateway's own routes (/healthz, /metrics, OAuth metadata) and the
// JSON-RPC error codes, with plain fetch so that every status and header
// is visible.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { authHeaders, Gateway, httpClient, TOKENS, wsClient } from './lib/gateway.mjs';

let gw;
before(async () => {
  gw = await Gateway.start();
});
after(async () => {
  await gw.stop();
});

const ACCEPT_BOTH = 'application/json, text/event-stream';

function initBody(version = '2025-06-18', id = 1) {
  return { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'fetch', version: '1' } } };
}

// POSTs a JSON-RPC message (or raw text) to /mcp.
async function post(body, { session, version, token = TOKENS.admin, headers = {} } = {}) {
  const h = { 'Content-Type': 'application/json', Accept: ACCEPT_BOTH, ...headers };
  if (token !== null) Object.assign(h, authHeaders(token));
  if (session) h['Mcp-Session-Id'] = session;
  if (version) h['MCP-Protocol-Version'] = version;
  const res = await fetch(gw.url, { method: 'POST', headers: h, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { res, status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

// A session at `version`, initialized as a client does it.
async function session(version = '2025-06-18', token = TOKENS.admin) {
  const r = await post(initBody(version), { token });
  assert.equal(r.status, 200, r.text);
  const id = r.res.headers.get('mcp-session-id');
  assert.match(id, /^[\x21-\x7e]+$/, 'a session id of visible ASCII');
  const n = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { session: id, version, token });
  assert.equal(n.status, 202);
  return { id, version, token };
}

function call(s, body, headers) {
  return post(body, { session: s.id, version: s.version, token: s.token, headers });
}

async function del(s, token = TOKENS.admin) {
  const res = await fetch(gw.url, { method: 'DELETE', headers: { ...authHeaders(token), 'Mcp-Session-Id': s.id } });
  await res.arrayBuffer();
  return res.status;
}

describe('sessions', () => {
  it('issues Mcp-Session-Id on initialize and requires it afterwards', async () => {
    const s = await session();
    const ok = await call(s, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    assert.equal(ok.status, 200);
    assert.ok(ok.json.result.tools.length > 0);

    const missing = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, { version: s.version });
    assert.equal(missing.status, 400);
    assert.match(missing.json.error.message, /Mcp-Session-Id/);

    const unknown = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list' }, { session: 'f'.repeat(32), version: s.version });
    assert.equal(unknown.status, 404);
  });

  it('binds a session to the user that created it', async () => {
    const s = await session('2025-06-18', TOKENS.admin);
    const other = await post({ jsonrpc: '2.0', id: 5, method: 'ping' }, { session: s.id, version: s.version, token: TOKENS.sales });
    assert.equal(other.status, 404);
    assert.equal((await call(s, { jsonrpc: '2.0', id: 6, method: 'ping' })).status, 200);
  });

  it('ends a session with DELETE', async () => {
    const s = await session();
    assert.equal(await del(s), 204);
    const after = await call(s, { jsonrpc: '2.0', id: 7, method: 'ping' });
    assert.equal(after.status, 404);
    assert.equal(await del(s), 404);
  });

  it('gives every initialize its own session', async () => {
    const a = await session();
    const b = await session();
    assert.notEqual(a.id, b.id);
    assert.equal(await del(a), 204);
    assert.equal((await call(b, { jsonrpc: '2.0', id: 8, method: 'ping' })).status, 200);
  });

  it('honours MCP-Protocol-Version and refuses an unsupported one with 400', async () => {
    const s = await session('2025-11-25');
    for (const v of ['2025-03-26', '2025-06-18', '2025-11-25']) {
      const r = await post({ jsonrpc: '2.0', id: 9, method: 'ping' }, { session: s.id, version: v });
      assert.equal(r.status, 200, `${v}: ${r.text}`);
    }
    const bad = await post({ jsonrpc: '2.0', id: 10, method: 'ping' }, { session: s.id, version: '2099-01-01' });
    assert.equal(bad.status, 400);
    assert.match(bad.json.error.message, /MCP-Protocol-Version/);
    // Without the header the server assumes a version it speaks.
    assert.equal((await post({ jsonrpc: '2.0', id: 11, method: 'ping' }, { session: s.id })).status, 200);
  });

  it('answers notifications and client responses with 202 and no body', async () => {
    const s = await session();
    const note = await call(s, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } });
    assert.equal(note.status, 202);
    assert.equal(note.text, '');
    const response = await call(s, { jsonrpc: '2.0', id: 'srv-1', result: {} });
    assert.equal(response.status, 202);
    assert.equal(response.text, '');
  });
});

describe('the server stream (GET /mcp)', () => {
  it('opens an SSE stream for a session, one at a time', async () => {
    const s = await session();
    const ac = new AbortController();
    const headers = { ...authHeaders(), Accept: 'text/event-stream', 'Mcp-Session-Id': s.id, 'MCP-Protocol-Version': s.version };
    const res = await fetch(gw.url, { headers, signal: ac.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    const second = await fetch(gw.url, { headers });
    assert.equal(second.status, 409);
    await second.arrayBuffer();
    // DELETE ends the session and its open stream.
    assert.equal(await del(s), 204);
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      assert.match(Buffer.from(value).toString(), /^(:[^\n]*\n\n)*$/, 'only keep-alive comments');
    }
    ac.abort();
  });

  it('needs a session for GET and DELETE', async () => {
    const res = await fetch(gw.url, { headers: { ...authHeaders(), Accept: 'text/event-stream' } });
    assert.equal(res.status, 400);
    await res.arrayBuffer();
    const d = await fetch(gw.url, { method: 'DELETE', headers: authHeaders() });
    assert.equal(d.status, 400);
    await d.arrayBuffer();
    assert.equal(await del({ id: 'f'.repeat(32) }), 404);
  });

  it('answers 405 to a GET that does not accept an event stream', async () => {
    const res = await fetch(gw.url, { headers: { ...authHeaders(), Accept: 'application/json' } });
    assert.equal(res.status, 405);
    assert.match(res.headers.get('allow'), /POST/);
    await res.arrayBuffer();
  });

  it('answers 405 to other methods and 415 to a body that is not JSON', async () => {
    const put = await fetch(gw.url, { method: 'PUT', headers: authHeaders(), body: '{}' });
    assert.equal(put.status, 405);
    await put.arrayBuffer();
    const form = await post('a=b', { headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    assert.equal(form.status, 415);
  });
});

describe('Origin and authentication', () => {
  it('refuses a foreign Origin with 403 and accepts a configured one', async () => {
    const foreign = await post(initBody(), { headers: { Origin: 'http://evil.example' } });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.res.headers.get('mcp-session-id'), null);
    const local = await post(initBody(), { headers: { Origin: 'http://localhost' } });
    assert.equal(local.status, 200);
    // An opaque origin, another scheme and a name that only starts like a
    // local one are foreign too.
    for (const origin of ['null', 'ftp://localhost', 'http://localhost.evil.example']) {
      const r = await post(initBody(), { headers: { Origin: origin } });
      assert.equal(r.status, 403, origin);
    }
    const s = await session();
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(gw.url, { method, headers: { ...authHeaders(), Accept: 'text/event-stream', 'Mcp-Session-Id': s.id, Origin: 'http://evil.example' } });
      assert.equal(res.status, 403, method);
      await res.arrayBuffer();
    }
    assert.equal((await call(s, { jsonrpc: '2.0', id: 1, method: 'ping' })).status, 200, 'the session survived');
  });

  it('answers 401 with WWW-Authenticate without a valid token', async () => {
    const secret = `wrong-${TOKENS.admin}-x`;
    for (const authorization of [null, `Bearer ${secret}`, `Basic ${Buffer.from('a:b').toString('base64')}`, 'Bearer']) {
      const headers = authorization === null ? {} : { Authorization: authorization };
      const r = await post(initBody(), { token: null, headers });
      assert.equal(r.status, 401, `${authorization}: ${r.text}`);
      const challenge = r.res.headers.get('www-authenticate');
      // RFC 6750 3: error="invalid_token" only when a bearer token was sent;
      // OAuth is off, so no metadata is named.
      const tokenSent = authorization?.startsWith('Bearer ') ?? false;
      assert.equal(challenge, tokenSent ? 'Bearer realm="datagate", error="invalid_token"' : 'Bearer realm="datagate"');
      assert.ok(!r.text.includes(secret), 'the token is not echoed');
    }
    assert.ok(!gw.stderr.includes(secret), 'the token is not logged');
    assert.ok(!gw.stderr.includes(TOKENS.admin), 'a valid token is never logged');
  });

  it('serves no protected-resource metadata while OAuth is off', async () => {
    const res = await fetch(`${gw.origin}/.well-known/oauth-protected-resource`);
    assert.equal(res.status, 404);
    await res.arrayBuffer();
  });
});

describe('health and metrics', () => {
  it('serves /healthz without a token', async () => {
    const res = await fetch(`${gw.origin}/healthz`);
    assert.equal(res.status, 200);
    const h = await res.json();
    assert.equal(h.status, 'ok');
    assert.equal(h.pid, gw.pid);
    assert.ok(h.connections >= 1);
    assert.equal(typeof h.sessions, 'number');
  });

  it('counts tool calls by tool and transport in /metrics', async () => {
    const before = await metrics();
    const { client, transport } = await httpClient(gw);
    const n = 3;
    for (let i = 0; i < n; i++) await client.callTool({ name: 'get_data_models', arguments: {} });
    await client.callTool({ name: 'get_data_model_properties', arguments: { dataModelId: 'bad' } });
    await transport.terminateSession();
    await client.close();
    const ws = await wsClient(gw);
    await ws.client.callTool({ name: 'get_data_models', arguments: {} });
    await ws.client.close();

    const after = await metrics();
    const delta = (name, labels) => (after.get(key(name, labels)) ?? 0) - (before.get(key(name, labels)) ?? 0);
    assert.equal(delta('dg_tool_calls_total', { tool: 'get_data_models', transport: 'http', outcome: 'ok' }), n);
    assert.equal(delta('dg_tool_calls_total', { tool: 'get_data_model_properties', transport: 'http', outcome: 'error' }), 1);
    assert.equal(delta('dg_tool_calls_total', { tool: 'get_data_models', transport: 'ws', outcome: 'ok' }), 1);
    assert.equal(delta('dg_tool_call_duration_seconds_count', { tool: 'get_data_models', transport: 'http' }), n);
    assert.equal(delta('dg_mcp_messages_total', { transport: 'http', method: 'tools/call' }), n + 1);
    assert.equal(delta('dg_mcp_messages_total', { transport: 'ws', method: 'tools/call' }), 1);
    assert.ok(delta('dg_http_responses_total', { status: '200' }) >= n + 2);
  });

  it('serves Prometheus text with a TYPE for every metric', async () => {
    const res = await fetch(`${gw.origin}/metrics`);
    assert.match(res.headers.get('content-type'), /^text\/plain/);
    const text = await res.text();
    const types = new Set([...text.matchAll(/^# TYPE (\S+) (counter|gauge|histogram)$/gm)].map((m) => m[1]));
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
      assert.ok(m, `a sample line: ${line}`);
      assert.ok(!Number.isNaN(Number(m[3])), `a number: ${line}`);
      const base = m[1].replace(/_(bucket|sum|count)$/, '');
      assert.ok(types.has(m[1]) || types.has(base), `TYPE for ${m[1]}`);
    }
    assert.ok(types.has('dg_http_connections_open'));
  });
});

function key(name, labels) {
  return `${name}{${Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`).join(',')}}`;
}

async function metrics() {
  const text = await (await fetch(`${gw.origin}/metrics`)).text();
  const out = new Map();
  for (const m of text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/gm)) {
    const labels = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.set(key(m[1], labels), Number(m[3]));
  }
  return out;
}

describe('JSON-RPC errors', () => {
  it('answers malformed JSON with -32700', async () => {
    const s = await session();
    const r = await call(s, '{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, -32700);
    assert.equal(r.json.id, null);
  });

  it('answers an invalid request with -32600', async () => {
    const s = await session();
    for (const body of [{ jsonrpc: '1.0', id: 1, method: 'ping' }, 42, { jsonrpc: '2.0', id: { x: 1 }, method: 'ping' }, { jsonrpc: '2.0', id: 2 }]) {
      const r = await call(s, body);
      assert.equal(r.json.error.code, -32600, JSON.stringify(body));
    }
  });

  it('answers an unknown method with -32601 and the request id', async () => {
    const s = await session();
    const r = await call(s, { jsonrpc: '2.0', id: 'abc', method: 'prompts/list' });
    assert.equal(r.status, 200);
    assert.equal(r.json.id, 'abc');
    assert.equal(r.json.error.code, -32601);
    assert.match(r.json.error.message, /prompts\/list/);
  });

  it('answers errors that quote long non-ASCII names', async () => {
    const s = await session();
    const name = '€'.repeat(100);
    const method = await call(s, { jsonrpc: '2.0', id: 'm', method: name });
    assert.equal(method.status, 200);
    assert.equal(method.json.error.code, -32601);
    const tool = await call(s, { jsonrpc: '2.0', id: 't', method: 'tools/call', params: { name, arguments: {} } });
    assert.equal(tool.json.id, 't');
    assert.equal(tool.json.error.code, -32602);
    const arg = await call(s, { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'get_data_models', arguments: { [name]: 1 } } });
    assert.equal(arg.json.result.isError, true);
  });

  it('answers JSON nested too deeply with -32700 and keeps serving', async () => {
    const s = await session();
    const deep = '['.repeat(200000) + ']'.repeat(200000);
    const r = await call(s, deep);
    assert.equal(r.json.error.code, -32700);
    assert.equal((await call(s, { jsonrpc: '2.0', id: 1, method: 'ping' })).status, 200);
  });

  it('answers a request before initialize with an error', async () => {
    const r = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(r.status, 400);
  });
});

describe('batches', () => {
  it('accepts a batch at 2025-03-26 and answers each request', async () => {
    const s = await session('2025-03-26');
    const r = await call(s, [
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_data_models', arguments: {} } },
      { jsonrpc: '2.0', id: 3, method: 'nope' },
    ]);
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(r.json));
    const byId = new Map(r.json.map((m) => [m.id, m]));
    assert.deepEqual([...byId.keys()].sort(), [1, 2, 3]);
    assert.deepEqual(byId.get(1).result, {});
    assert.ok(JSON.parse(byId.get(2).result.content[0].text).dataModels.length > 0);
    assert.equal(byId.get(3).error.code, -32601);
  });

  it('answers a batch of notifications with 202', async () => {
    const s = await session('2025-03-26');
    const r = await call(s, [{ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }]);
    assert.equal(r.status, 202);
  });

  it('refuses batches from 2025-06-18 on, and empty batches', async () => {
    for (const v of ['2025-06-18', '2025-11-25']) {
      const s = await session(v);
      const r = await call(s, [{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
      assert.equal(r.json.error.code, -32600, `${v}: ${r.text}`);
      assert.match(r.json.error.message, /batch/i);
    }
    const old = await session('2025-03-26');
    const empty = await call(old, []);
    assert.equal(empty.json.error.code, -32600);
  });
});

describe('request ids', () => {
  it('replaces an X-Request-Id that is not a sane value', async () => {
    for (const bad of ['has spaces', 'x'.repeat(65), 'quote"d']) {
      const res = await fetch(`${gw.origin}/healthz`, { headers: { 'X-Request-Id': bad } });
      await res.arrayBuffer();
      const id = res.headers.get('x-request-id');
      assert.notEqual(id, bad);
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });

  it('echoes X-Request-Id and logs it with the tool call', async () => {
    const s = await session();
    const rid = `it-${Date.now()}`;
    const r = await call(s, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_data_models', arguments: {} } }, { 'X-Request-Id': rid });
    assert.equal(r.status, 200);
    assert.equal(r.res.headers.get('x-request-id'), rid);
    const line = await gw.waitForLog((l) => l.event === 'tool_call' && l.request_id === rid);
    assert.equal(line.tool, 'get_data_models');
    assert.equal(line.transport, 'http');
    assert.equal(line.outcome, 'ok');
    assert.equal(line.principal, 'admin');
    await gw.waitForLog((l) => l.event === 'access' && l.request_id === rid && l.status === 200);
  });
});
