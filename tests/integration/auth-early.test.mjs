// SPDX-License-Identifier: AGPL-3.0-or-later
// A request's token is checked when its head is complete: without a valid
// one the gateway answers 401 and closes before reading any body, and the
// connections that have not sent a signed-in request share one memory
// budget (server.maxUnauthenticatedBytes).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { authHeaders, Gateway, makeConfig } from './lib/gateway.mjs';
import { json, RawConn, request } from './lib/raw.mjs';

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

const BODY_BYTES = 1024 * 1024;

function mcpHeaders(extra = {}) {
  return { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...extra };
}

// The head of a POST that announces a large body, and the first slice of
// that body: the rest is never sent.
function headAndSlice(headers) {
  const head = request('POST', '/mcp', { headers: { ...mcpHeaders(headers), 'Content-Length': String(BODY_BYTES) } });
  return Buffer.concat([head, Buffer.alloc(16 * 1024, 0x20)]);
}

async function metric(gw, line) {
  const res = await fetch(`${gw.origin}/metrics`);
  const text = await res.text();
  const m = text.split('\n').find((l) => l.startsWith(line));
  return m === undefined ? 0 : Number(m.slice(line.length).trim());
}

describe('authentication before the body', () => {
  let config;
  let gw;
  before(async () => {
    config = makeConfig({ server: { maxBodyBytes: 2 * BODY_BYTES } });
    gw = await Gateway.start({ config });
  });
  after(async () => {
    await gw.stop();
    config.remove();
  });

  it('answers 401 and closes before the body of a request without a valid token', async () => {
    const refusedBefore = await metric(gw, 'dg_http_limit_rejections_total{limit="unadmitted_body"}');
    const variants = [{}, { Authorization: 'Bearer not-a-valid-token' }, { Authorization: 'Basic YTpi' }];
    const conns = await Promise.all(Array.from({ length: 60 }, () => RawConn.connect(gw.port)));
    await Promise.all(conns.map((c, i) => c.write(headAndSlice(variants[i % variants.length]))));
    for (const conn of conns) {
      // Only 16 KiB of the announced 1 MiB were sent: an answer now means
      // the gateway did not wait for the body.
      const res = await conn.readResponse();
      assert.equal(res.status, 401, res.text);
      assert.match(res.headers['www-authenticate'], /^Bearer /);
      assert.equal(res.headers.connection?.toLowerCase(), 'close');
      const { clean } = await conn.waitClosed();
      assert.ok(clean, 'closed with a FIN');
      conn.destroy();
    }
    const refused = await metric(gw, 'dg_http_limit_rejections_total{limit="unadmitted_body"}');
    assert.equal(refused - refusedBefore, conns.length, 'every body was refused unread');
  });

  it('refuses a chunked body the same way', async () => {
    const conn = await RawConn.connect(gw.port);
    const head = request('POST', '/mcp', { headers: { ...mcpHeaders(), 'Transfer-Encoding': 'chunked' } });
    await conn.write(Buffer.concat([head, Buffer.from('4000\r\n'), Buffer.alloc(0x4000, 0x20)]));
    const res = await conn.readResponse();
    assert.equal(res.status, 401);
    assert.ok((await conn.waitClosed()).clean);
    conn.destroy();
  });

  it('reads no body for a route that takes none', async () => {
    const conn = await RawConn.connect(gw.port);
    const head = request('POST', '/healthz', { headers: { ...authHeaders(), 'Content-Length': String(BODY_BYTES) } });
    await conn.write(head);
    const res = await conn.readResponse();
    assert.equal(res.status, 405);
    assert.ok((await conn.waitClosed()).clean);
    conn.destroy();
  });

  it('still reads the body of a request with a valid token', async () => {
    const conn = await RawConn.connect(gw.port);
    await conn.write(request('POST', '/mcp', { headers: mcpHeaders(authHeaders()), body: INIT }));
    const res = await conn.readResponse();
    assert.equal(res.status, 200, res.text);
    assert.equal(json(res).result.serverInfo.name, 'datagate');
    await conn.write(request('GET', '/healthz'));
    assert.equal((await conn.readResponse()).status, 200, 'the connection stays open');
    conn.destroy();
  });
});

describe('the budget of connections not yet signed in', () => {
  let config;
  let gw;
  before(async () => {
    config = makeConfig({ server: { maxHeaderBytes: 1024, maxUnauthenticatedBytes: 65536 } });
    gw = await Gateway.start({ config });
  });
  after(async () => {
    await gw.stop();
    config.remove();
  });

  async function healthz(conn) {
    await conn.write(request('GET', '/healthz'));
    return conn.readResponse();
  }

  it('refuses new connections over the budget and frees room as connections sign in', async () => {
    const open = [];
    let refused = null;
    for (let i = 0; i < 64 && refused === null; i++) {
      const conn = await RawConn.connect(gw.port);
      const res = await healthz(conn);
      if (res.status === 200) open.push(conn);
      else refused = { conn, res };
    }
    assert.ok(refused !== null, 'a connection over the budget is refused');
    assert.ok(open.length >= 2, `${open.length} connections fit a 64 KiB budget`);
    assert.equal(refused.res.status, 503);
    assert.match(refused.res.text, /too many connections without a signed-in request/);
    refused.conn.destroy();

    // A connection that signs in leaves the budget for good.
    await open[0].write(request('POST', '/mcp', { headers: mcpHeaders(authHeaders()), body: INIT }));
    assert.equal((await open[0].readResponse()).status, 200);
    const next = await RawConn.connect(gw.port);
    assert.equal((await healthz(next)).status, 200, 'room was freed');
    open.push(next);
    const over = await RawConn.connect(gw.port);
    assert.equal((await healthz(over)).status, 503, 'and no more than that');
    over.destroy();
    for (const conn of open) conn.destroy();
  });
});
