// SPDX-License-Identifier: AGPL-3.0-or-later
// What a browser page meets at /mcp: the Host check against DNS rebinding
// (server.allowedHosts), Origin matching by scheme, host and port with the
// port wildcard, CORS preflights and headers (the MCP Inspector's web UI
// at http://localhost:6274), and the 401 challenge and OAuth metadata with
// OAuth off and on. Raw sockets where the Host header must be chosen.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { authHeaders, Gateway, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { json, RawConn, request } from './lib/raw.mjs';

const INSPECTOR = 'http://localhost:6274';
const JWT_ENV = { DATAGATE_JWT_SECRET: 'browser-test-secret-0123456789abcdef' };

function initBody(version = '2025-06-18') {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'browser', version: '1' } } });
}

const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

// One request on its own connection, with the Host chosen by the test.
async function send(gw, method, path, { host = `127.0.0.1:${gw.port}`, headers = {}, body = '' } = {}) {
  const conn = await RawConn.connect(gw.port);
  try {
    await conn.write(request(method, path, { host, headers: { Connection: 'close', ...headers }, body }));
    return await conn.readResponse({ head: method === 'HEAD' });
  } finally {
    conn.destroy();
  }
}

function withOauth(dir, edit = () => {}) {
  const file = `${dir}/datagate.json`;
  const conf = readJson(file);
  conf.oauth.enabled = true;
  edit(conf);
  writeJson(file, conf);
}

let gw; // the sample configuration
before(async () => {
  gw = await Gateway.start();
});
after(async () => {
  await gw.stop();
});

describe('Host (DNS rebinding)', () => {
  it('refuses a foreign Host on every route, with or without Origin', async () => {
    for (const path of ['/mcp', '/healthz', '/metrics']) {
      const r = await send(gw, 'POST', path, { host: 'evil.example.com', headers: { ...authHeaders(), ...MCP_HEADERS }, body: initBody() });
      assert.equal(r.status, 421, path);
      assert.match(json(r).error, /allowedHosts/);
      assert.equal(r.headers['mcp-session-id'], undefined);
    }
    const r = await send(gw, 'GET', '/healthz', { host: `evil.example.com:${gw.port}` });
    assert.equal(r.status, 421);
  });

  it('serves the loopback names and the listen address, any port', async () => {
    for (const host of ['localhost', `localhost:${gw.port}`, `127.0.0.1:${gw.port}`, '[::1]:8080', 'LocalHost']) {
      const r = await send(gw, 'GET', '/healthz', { host });
      assert.equal(r.status, 200, host);
    }
  });

  it('passes the conformance suite\'s dns-rebinding-protection scenario', async () => {
    const attacker = 'evil.example.com';
    const bad = await send(gw, 'POST', '/mcp', { host: attacker, headers: { ...authHeaders(), ...MCP_HEADERS, Origin: `http://${attacker}`, 'MCP-Protocol-Version': '2025-11-25' }, body: initBody('2025-11-25') });
    assert.ok(bad.status >= 400 && bad.status < 500, `rebinding refused with 4xx, got ${bad.status}`);
    const valid = `127.0.0.1:${gw.port}`;
    const good = await send(gw, 'POST', '/mcp', { host: valid, headers: { ...authHeaders(), ...MCP_HEADERS, Origin: `http://${valid}`, 'MCP-Protocol-Version': '2025-11-25' }, body: initBody('2025-11-25') });
    assert.equal(good.status, 200, good.text);
    const sid = good.headers['mcp-session-id'];
    const note = await send(gw, 'POST', '/mcp', { host: valid, headers: { ...authHeaders(), ...MCP_HEADERS, Origin: `http://${valid}`, 'MCP-Protocol-Version': '2025-11-25', 'Mcp-Session-Id': sid }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    assert.equal(note.status, 202);
  });

  it('takes server.allowedHosts when configured, and "*" in allowedOrigins', async () => {
    const config = makeConfig({ server: { allowedHosts: ['mcp.example.com', 'gw.internal:8443'], allowedOrigins: ['*'] } });
    const g = await Gateway.start({ config });
    try {
      assert.equal((await send(g, 'GET', '/healthz', { host: 'mcp.example.com' })).status, 200);
      assert.equal((await send(g, 'GET', '/healthz', { host: 'MCP.example.com:443' })).status, 200);
      assert.equal((await send(g, 'GET', '/healthz', { host: 'gw.internal:8443' })).status, 200);
      assert.equal((await send(g, 'GET', '/healthz', { host: 'gw.internal:8444' })).status, 421);
      assert.equal((await send(g, 'GET', '/healthz', { host: 'localhost' })).status, 421, 'the list replaces the default');
      const pre = await send(g, 'OPTIONS', '/mcp', { host: 'mcp.example.com', headers: { Origin: 'https://app.example.org', 'Access-Control-Request-Method': 'POST' } });
      assert.equal(pre.status, 204);
      assert.equal(pre.headers['access-control-allow-origin'], 'https://app.example.org');
    } finally {
      await g.stop();
      config.remove();
    }
  });
});

describe('Origin', () => {
  it('accepts the MCP Inspector and pages on this machine at any port with the sample configuration', async () => {
    for (const origin of [INSPECTOR, 'http://127.0.0.1:8080', 'http://localhost', 'https://[::1]:3000']) {
      const r = await send(gw, 'POST', '/mcp', { headers: { ...authHeaders(), ...MCP_HEADERS, Origin: origin }, body: initBody() });
      assert.equal(r.status, 200, `${origin}: ${r.text}`);
      assert.equal(r.headers['access-control-allow-origin'], origin);
    }
  });

  it('refuses other origins with 403 and no CORS header', async () => {
    for (const origin of ['http://evil.example', 'http://localhost.evil.example:6274', 'ftp://localhost:21', 'null']) {
      const r = await send(gw, 'POST', '/mcp', { headers: { ...authHeaders(), ...MCP_HEADERS, Origin: origin }, body: initBody() });
      assert.equal(r.status, 403, origin);
      assert.equal(r.headers['access-control-allow-origin'], undefined);
    }
  });
});

describe('CORS', () => {
  it('answers a preflight from the Inspector without a token', async () => {
    const r = await send(gw, 'OPTIONS', '/mcp', {
      headers: { Origin: INSPECTOR, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type, mcp-protocol-version, mcp-session-id, last-event-id' },
    });
    assert.equal(r.status, 204);
    assert.equal(r.headers['access-control-allow-origin'], INSPECTOR);
    assert.match(r.headers.vary, /Origin/);
    const methods = r.headers['access-control-allow-methods'].split(/,\s*/);
    for (const m of ['GET', 'POST', 'DELETE']) assert.ok(methods.includes(m), m);
    const allowed = r.headers['access-control-allow-headers'].toLowerCase().split(/,\s*/);
    for (const h of ['authorization', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id']) assert.ok(allowed.includes(h), h);
  });

  it('sends CORS headers on answers to an allowed origin, errors included', async () => {
    const ok = await send(gw, 'POST', '/mcp', { headers: { ...authHeaders(), ...MCP_HEADERS, Origin: INSPECTOR }, body: initBody() });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['access-control-allow-origin'], INSPECTOR);
    assert.match(ok.headers['access-control-expose-headers'], /Mcp-Session-Id/);
    const denied = await send(gw, 'POST', '/mcp', { headers: { ...MCP_HEADERS, Origin: INSPECTOR }, body: initBody() });
    assert.equal(denied.status, 401);
    assert.equal(denied.headers['access-control-allow-origin'], INSPECTOR, 'the page can read the 401');
    assert.match(denied.headers['access-control-expose-headers'], /WWW-Authenticate/);
  });

  it('refuses a preflight from a foreign origin', async () => {
    const r = await send(gw, 'OPTIONS', '/mcp', { headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' } });
    assert.equal(r.status, 403);
    assert.equal(r.headers['access-control-allow-origin'], undefined);
  });

  it('answers a plain OPTIONS with Allow, and 404 for an unknown path', async () => {
    const r = await send(gw, 'OPTIONS', '/mcp');
    assert.equal(r.status, 204);
    assert.equal(r.headers.allow, 'GET, POST, DELETE, OPTIONS');
    assert.equal(r.headers['access-control-allow-origin'], undefined);
    assert.equal((await send(gw, 'OPTIONS', '*')).status, 204);
    assert.equal((await send(gw, 'OPTIONS', '/nowhere')).status, 404);
  });
});

describe('401 and the protected-resource metadata', () => {
  it('with OAuth off: a bare challenge, invalid_token for a bad token, and no metadata', async () => {
    const missing = await send(gw, 'POST', '/mcp', { headers: MCP_HEADERS, body: initBody() });
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['www-authenticate'], 'Bearer realm="datagate"');
    const bad = await send(gw, 'POST', '/mcp', { headers: { ...MCP_HEADERS, Authorization: 'Bearer not-a-token' }, body: initBody() });
    assert.equal(bad.status, 401);
    assert.equal(bad.headers['www-authenticate'], 'Bearer realm="datagate", error="invalid_token"');
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'])
      assert.equal((await send(gw, 'GET', path)).status, 404, path);
  });

  it('with OAuth on: the metadata names the listen address, never the Host sent', async () => {
    const config = makeConfig({ edit: (dir) => withOauth(dir) });
    const g = await Gateway.start({ config, env: JWT_ENV });
    try {
      const meta = await send(g, 'GET', '/.well-known/oauth-protected-resource', { host: 'localhost:1' });
      assert.equal(meta.status, 200);
      const m = json(meta);
      assert.equal(m.resource, `http://127.0.0.1:${g.port}/mcp`);
      assert.deepEqual(m.authorization_servers, [readJson(config.file('datagate.json')).oauth.issuer]);
      const bad = await send(g, 'POST', '/mcp', { host: 'localhost:1', headers: { ...MCP_HEADERS, Authorization: 'Bearer not-a-token' }, body: initBody() });
      assert.equal(bad.status, 401);
      assert.equal(bad.headers['www-authenticate'], `Bearer resource_metadata="http://127.0.0.1:${g.port}/.well-known/oauth-protected-resource", error="invalid_token"`);
      const good = await send(g, 'POST', '/mcp', { headers: { ...MCP_HEADERS, ...authHeaders(TOKENS.sales) }, body: initBody() });
      assert.equal(good.status, 200, 'static tokens still work');
    } finally {
      await g.stop();
      config.remove();
    }
  });

  it('with OAuth on and publicUrl: the metadata and its host come from publicUrl', async () => {
    const config = makeConfig({ server: { publicUrl: 'https://mcp.example.com/gw/' }, edit: (dir) => withOauth(dir) });
    const g = await Gateway.start({ config, env: JWT_ENV });
    try {
      const meta = await send(g, 'GET', '/.well-known/oauth-protected-resource', { host: 'mcp.example.com' });
      assert.equal(meta.status, 200, 'publicUrl\'s host is allowed by default');
      assert.equal(json(meta).resource, 'https://mcp.example.com/gw/mcp');
      const missing = await send(g, 'POST', '/mcp', { headers: MCP_HEADERS, body: initBody() });
      assert.equal(missing.headers['www-authenticate'], 'Bearer resource_metadata="https://mcp.example.com/gw/.well-known/oauth-protected-resource"');
    } finally {
      await g.stop();
      config.remove();
    }
  });
});
