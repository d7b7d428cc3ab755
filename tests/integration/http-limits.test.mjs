// SPDX-License-Identifier: AGPL-3.0-or-later
// HTTP/1.1 on raw sockets against a configuration with small limits:
// keep-alive, pipelining, chunked bodies, 100-continue, and every limit
// answered with its status and a clean close (a FIN, not a reset).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { authHeaders, Gateway, makeConfig } from './lib/gateway.mjs';
import { chunked, json, RawConn, request } from './lib/raw.mjs';

const LIMITS = {
  maxHeaderBytes: 2048,
  maxHeaders: 16,
  maxBodyBytes: 4096,
  headerTimeoutMs: 1000,
  requestTimeoutMs: 2000,
  idleTimeoutMs: 20000,
  maxPipelined: 4,
};

let config;
let gw;
before(async () => {
  config = makeConfig({ server: LIMITS });
  gw = await Gateway.start({ config });
});
after(async () => {
  await gw.stop();
  config.remove();
});

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

function mcpHeaders(extra = {}) {
  return { ...authHeaders(), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...extra };
}

async function connect() {
  return RawConn.connect(gw.port);
}

async function expectCleanClose(conn) {
  const { clean, error } = await conn.waitClosed();
  assert.ok(clean, `closed with a FIN, not ${error?.code ?? 'a reset'}`);
  conn.destroy();
}

describe('connection reuse', () => {
  it('keeps a connection alive across requests', async () => {
    const conn = await connect();
    for (let i = 0; i < 3; i++) {
      await conn.write(request('GET', '/healthz'));
      const res = await conn.readResponse();
      assert.equal(res.status, 200);
      assert.notEqual(res.headers.connection?.toLowerCase(), 'close');
      assert.equal(json(res).status, 'ok');
    }
    assert.ok(!conn.ended, 'still open');
    conn.destroy();
  });

  it('answers pipelined requests in order', async () => {
    const conn = await connect();
    const sent = [
      request('GET', '/healthz', { headers: { 'X-Request-Id': 'p-1' } }),
      request('POST', '/mcp', { headers: mcpHeaders({ 'X-Request-Id': 'p-2' }), body: INIT }),
      request('GET', '/nowhere', { headers: { 'X-Request-Id': 'p-3' } }),
      request('GET', '/metrics', { headers: { 'X-Request-Id': 'p-4' } }),
    ];
    await conn.write(Buffer.concat(sent));
    const got = [];
    for (let i = 0; i < sent.length; i++) got.push(await conn.readResponse());
    assert.deepEqual(got.map((r) => r.headers['x-request-id']), ['p-1', 'p-2', 'p-3', 'p-4']);
    assert.deepEqual(got.map((r) => r.status), [200, 200, 404, 200]);
    assert.ok(got[1].headers['mcp-session-id']);
    conn.destroy();
  });

  it('keeps SSE responses in their place among pipelined requests', async () => {
    const conn = await connect();
    await conn.write(request('POST', '/mcp', { headers: mcpHeaders(), body: INIT }));
    const sid = (await conn.readResponse()).headers['mcp-session-id'];
    const callTool = (id) =>
      JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_data_models', arguments: {}, _meta: { progressToken: id } } });
    await conn.write(
      Buffer.concat([
        request('GET', '/healthz', { headers: { 'X-Request-Id': 's-1' } }),
        request('POST', '/mcp', { headers: mcpHeaders({ 'Mcp-Session-Id': sid, 'X-Request-Id': 's-2' }), body: callTool('two') }),
        request('HEAD', '/healthz', { headers: { 'X-Request-Id': 's-3' } }),
        request('POST', '/mcp', { headers: mcpHeaders({ 'Mcp-Session-Id': sid, 'X-Request-Id': 's-4' }), body: callTool('four') }),
        request('GET', '/healthz', { headers: { 'X-Request-Id': 's-5' } }),
      ]),
    );
    const got = [];
    for (let i = 1; i <= 5; i++) got.push(await conn.readResponse({ head: i === 3 }));
    assert.deepEqual(got.map((r) => r.headers['x-request-id']), ['s-1', 's-2', 's-3', 's-4', 's-5']);
    for (const [i, id] of [[1, 'two'], [3, 'four']]) {
      assert.match(got[i].headers['content-type'], /^text\/event-stream/);
      assert.equal(got[i].headers['transfer-encoding'], 'chunked');
      const data = got[i].text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
      assert.equal(data.at(-1).id, id);
    }
    assert.equal(got[2].body.length, 0, 'HEAD has no body');
    assert.ok(Number(got[2].headers['content-length']) > 0, 'HEAD gives the length of the GET');
    assert.equal(json(got[4]).status, 'ok');
    conn.destroy();
  });

  it('answers HTTP/1.0 and closes when asked to', async () => {
    const conn = await connect();
    await conn.write('GET /healthz HTTP/1.0\r\n\r\n');
    const res = await conn.readResponse();
    assert.equal(res.status, 200);
    await expectCleanClose(conn);
    const conn2 = await connect();
    await conn2.write(request('GET', '/healthz', { headers: { Connection: 'close' } }));
    assert.equal((await conn2.readResponse()).status, 200);
    await expectCleanClose(conn2);
  });
});

describe('request bodies', () => {
  it('reads a chunked request body', async () => {
    const conn = await connect();
    const parts = [INIT.slice(0, 10), INIT.slice(10, 50), INIT.slice(50)];
    await conn.write(request('POST', '/mcp', { headers: mcpHeaders({ 'Transfer-Encoding': 'chunked' }), body: chunked(parts) }));
    const res = await conn.readResponse();
    assert.equal(res.status, 200, res.text);
    assert.equal(json(res).result.protocolVersion, '2025-06-18');
    assert.ok(res.headers['mcp-session-id']);
    conn.destroy();
  });

  it('sends 100 Continue before reading the body of Expect: 100-continue', async () => {
    const conn = await connect();
    const head = request('POST', '/mcp', { headers: mcpHeaders({ Expect: '100-continue', 'Content-Length': Buffer.byteLength(INIT) }) });
    await conn.write(head);
    const interim = await conn.readResponse();
    assert.equal(interim.status, 100);
    await conn.write(INIT);
    const res = await conn.readResponse();
    assert.equal(res.status, 200, res.text);
    assert.ok(res.headers['mcp-session-id']);
    conn.destroy();
  });

  it('refuses Expect: 100-continue over the body limit with 413 and no 100', async () => {
    const conn = await connect();
    await conn.write(request('POST', '/mcp', { headers: mcpHeaders({ Expect: '100-continue', 'Content-Length': LIMITS.maxBodyBytes + 1 }) }));
    const res = await conn.readResponse();
    assert.equal(res.status, 413);
    await expectCleanClose(conn);
  });

  it('answers a body over the limit with 413 and closes', async () => {
    const conn = await connect();
    const body = 'x'.repeat(LIMITS.maxBodyBytes + 100);
    await conn.write(request('POST', '/mcp', { headers: mcpHeaders(), body }));
    assert.equal((await conn.readResponse()).status, 413);
    await expectCleanClose(conn);
  });

  it('answers a chunked body over the limit with 413 and closes', async () => {
    const conn = await connect();
    const parts = Array.from({ length: 10 }, () => 'y'.repeat(1000));
    await conn.write(request('POST', '/mcp', { headers: mcpHeaders({ 'Transfer-Encoding': 'chunked' }), body: chunked(parts) }));
    assert.equal((await conn.readResponse()).status, 413);
    await expectCleanClose(conn);
  });

  it('accepts a body exactly at the limit', async () => {
    const conn = await connect();
    const pad = ' '.repeat(LIMITS.maxBodyBytes - Buffer.byteLength(INIT));
    await conn.write(request('POST', '/mcp', { headers: mcpHeaders(), body: INIT + pad }));
    assert.equal((await conn.readResponse()).status, 200);
    conn.destroy();
  });
});

describe('header limits and malformed requests', () => {
  it('answers header bytes over the limit with 431 and closes', async () => {
    const conn = await connect();
    await conn.write(request('GET', '/healthz', { headers: { 'X-Big': 'z'.repeat(LIMITS.maxHeaderBytes) } }));
    assert.equal((await conn.readResponse()).status, 431);
    await expectCleanClose(conn);
  });

  it('answers too many headers with 431 and closes', async () => {
    const conn = await connect();
    const headers = Object.fromEntries(Array.from({ length: LIMITS.maxHeaders + 1 }, (_, i) => [`X-H${i}`, 'v']));
    await conn.write(request('GET', '/healthz', { headers }));
    assert.equal((await conn.readResponse()).status, 431);
    await expectCleanClose(conn);
  });

  it('answers malformed and ambiguous requests with 400 and closes', async () => {
    const cases = [
      'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      // Both framings at once is how requests are smuggled past proxies.
      'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!',
      // A body is only parsed after a valid token (without one: 401 unread).
      `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: ${authHeaders().Authorization}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
      'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n',
    ];
    for (const text of cases) {
      const conn = await connect();
      await conn.write(Buffer.from(text, 'latin1'));
      assert.equal((await conn.readResponse()).status, 400, JSON.stringify(text));
      await expectCleanClose(conn);
    }
  });

  it('serves a request target in absolute form by its path', async () => {
    const conn = await connect();
    await conn.write(request('GET', `http://127.0.0.1:${gw.port}/healthz`));
    const res = await conn.readResponse();
    assert.equal(res.status, 200);
    assert.equal(json(res).status, 'ok');
    conn.destroy();
  });
});

// One raw request per refusal of RFC 9112 2-7, with the status RFC 9110 15
// names for it; every one ends the connection after the answer.
describe('request line and header section (RFC 9112)', () => {
  async function expectRefusal(text, status) {
    const conn = await connect();
    await conn.write(Buffer.from(text, 'latin1'));
    const res = await conn.readResponse();
    assert.equal(res.status, status, JSON.stringify(text));
    assert.equal(res.headers.connection, 'close');
    await expectCleanClose(conn);
  }

  it('refuses a request without Host with 400', () => expectRefusal('GET /healthz HTTP/1.1\r\n\r\n', 400));
  it('refuses two Host lines, equal or not, with 400', async () => {
    await expectRefusal('GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n', 400);
    await expectRefusal('GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: other\r\n\r\n', 400);
  });
  it('refuses an empty Host with 400', () => expectRefusal('GET /healthz HTTP/1.1\r\nHost:\r\n\r\n', 400));
  it('refuses a Host with a path with 400', () => expectRefusal('GET /healthz HTTP/1.1\r\nHost: localhost/x\r\n\r\n', 400));
  it('refuses a Host with user info with 400', () => expectRefusal('GET /healthz HTTP/1.1\r\nHost: u@localhost\r\n\r\n', 400));
  it('refuses white space before the colon with 400', () =>
    expectRefusal('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Probe : 1\r\n\r\n', 400));
  it('refuses a header name with a space with 400 and does not read its body as a request', async () => {
    const conn = await connect();
    await conn.write('POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent Length: 31\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal((await conn.readResponse()).status, 400);
    await expectCleanClose(conn);
    assert.equal(conn.buf.length, 0, 'nothing after the 400');
  });
  it('refuses an empty header name with 400', () => expectRefusal('GET /healthz HTTP/1.1\r\nHost: localhost\r\n: v\r\n\r\n', 400));
  it('refuses an obs-fold with 400', () => expectRefusal('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: 1\r\n 2\r\n\r\n', 400));
  it('refuses Content-Length with an empty Transfer-Encoding with 400 and closes', () =>
    expectRefusal('POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: \r\n\r\nhello', 400));
  it('refuses Transfer-Encoding in an HTTP/1.0 request with 400', () =>
    expectRefusal('POST /mcp HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400));
  it('refuses a transfer coding it does not implement with 501', () =>
    expectRefusal('POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n', 501));
  it('refuses a request-target over the limit with 414', () =>
    expectRefusal(`GET /${'a'.repeat(LIMITS.maxHeaderBytes)} HTTP/1.1\r\nHost: localhost\r\n\r\n`, 414));
  it('refuses an unknown method with 501', () => expectRefusal('FOO /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', 501));
  it('refuses CONNECT with 501', () => expectRefusal('CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n', 501));
  it('refuses an HTTP/0.9 request line with 400', () => expectRefusal('GET /healthz\r\n\r\n', 400));
  it('refuses HTTP/2.0 on this port with 505', () => expectRefusal('GET /healthz HTTP/2.0\r\nHost: localhost\r\n\r\n', 505));
  it('refuses the asterisk form but for OPTIONS, a relative target and a fragment with 400', async () => {
    await expectRefusal('GET * HTTP/1.1\r\nHost: localhost\r\n\r\n', 400);
    await expectRefusal('GET healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', 400);
    await expectRefusal('GET /healthz#top HTTP/1.1\r\nHost: localhost\r\n\r\n', 400);
  });
  it('refuses a line that is not a request line with 400, not 501', () => expectRefusal('THIS IS NOT HTTP\r\n\r\n', 400));
  it('serves HTTP/1.0 without Host and a Host with an IPv6 literal and a port', async () => {
    for (const text of ['GET /healthz HTTP/1.0\r\n\r\n', 'GET /healthz HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n']) {
      const conn = await connect();
      await conn.write(text);
      assert.equal((await conn.readResponse()).status, 200, text);
      conn.destroy();
    }
  });
});

describe('pipelining past maxPipelined', () => {
  it('serves every request in order, slowing the client instead of refusing it', async () => {
    const conn = await connect();
    const n = LIMITS.maxPipelined * 3 + 2;
    const sent = Array.from({ length: n }, (_, i) => request('GET', '/healthz', { headers: { 'X-Request-Id': `q-${i}` } }));
    await conn.write(Buffer.concat(sent));
    const got = [];
    for (let i = 0; i < n; i++) got.push(await conn.readResponse());
    assert.deepEqual(got.map((r) => r.status), Array(n).fill(200));
    assert.deepEqual(got.map((r) => r.headers['x-request-id']), sent.map((_, i) => `q-${i}`));
    // The connection stays usable afterwards.
    await conn.write(request('GET', '/healthz'));
    assert.equal((await conn.readResponse()).status, 200);
    assert.ok(!conn.ended, 'still open');
    conn.destroy();
  });
});

describe('timeouts', () => {
  it('answers a request whose headers dribble in with 408 and closes', async () => {
    const conn = await connect();
    await conn.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    let n = 0;
    const timer = setInterval(() => {
      if (conn.buf.length > 0 || conn.ended) return clearInterval(timer);
      conn.sock.write(`X-Slow-${n++}: 1\r\n`);
    }, 100);
    try {
      const res = await conn.readResponse();
      assert.equal(res.status, 408);
    } finally {
      clearInterval(timer);
    }
    assert.ok(n > 0, 'the headers were still arriving');
    await expectCleanClose(conn);
  });

  it('answers a body that stops arriving with 408 and closes', async () => {
    const conn = await connect();
    await conn.write(request('POST', '/mcp', { headers: mcpHeaders({ 'Content-Length': 100 }) }));
    await conn.write('{"jsonrpc"');
    assert.equal((await conn.readResponse()).status, 408);
    await expectCleanClose(conn);
  });
});

describe('session limits', () => {
  it('refuses initialize over maxSessions with 503 and ends idle sessions', async () => {
    const small = makeConfig({ server: { maxSessions: 2, sessionIdleTimeoutMs: 2000 } });
    const g = await Gateway.start({ config: small });
    try {
      const init = () => fetch(g.url, { method: 'POST', headers: mcpHeaders(), body: INIT });
      const ids = [];
      for (let i = 0; i < 2; i++) {
        const res = await init();
        assert.equal(res.status, 200);
        await res.arrayBuffer();
        ids.push(res.headers.get('mcp-session-id'));
      }
      const over = await init();
      assert.equal(over.status, 503);
      assert.match((await over.json()).error.message, /sessions/);
      // Keep one session busy while the other stays idle for longer than
      // sessionIdleTimeoutMs; asking about the idle one would wake it. The
      // 2 s timeout leaves a loaded machine seconds for the steps that must
      // come before it: the sessions above and each ping of the busy one.
      const ping = (id) =>
        fetch(g.url, { method: 'POST', headers: mcpHeaders({ 'Mcp-Session-Id': id }), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
      const start = Date.now();
      while (Date.now() - start < 2500) {
        await new Promise((r) => setTimeout(r, 200));
        const busy = await ping(ids[1]);
        assert.equal(busy.status, 200, 'a session in use does not expire');
        await busy.arrayBuffer();
      }
      const idle = await ping(ids[0]);
      assert.equal(idle.status, 404, 'the idle session ended');
      await idle.arrayBuffer();
      const again = await init();
      assert.equal(again.status, 200, 'its place is free again');
      await again.arrayBuffer();
    } finally {
      await g.stop();
      small.remove();
    }
  });
});

describe('connection limit', () => {
  it('answers connections over maxConnections with 503 and closes them', async () => {
    const small = makeConfig({ server: { ...LIMITS, maxConnections: 2 } });
    const g = await Gateway.start({ config: small });
    const open = [];
    try {
      for (let i = 0; i < 2; i++) {
        const c = await RawConn.connect(g.port);
        await c.write(request('GET', '/healthz'));
        assert.equal((await c.readResponse()).status, 200);
        open.push(c);
      }
      const over = await RawConn.connect(g.port);
      const res = await over.readResponse();
      assert.equal(res.status, 503);
      assert.ok(res.headers['retry-after'], 'Retry-After is given');
      await expectCleanClose(over);
      // Once a connection goes, a new one is served again.
      open.shift().destroy();
      let status = 0;
      while (status !== 200) {
        const c = await RawConn.connect(g.port);
        await c.write(request('GET', '/healthz')).catch(() => {});
        status = (await c.readResponse()).status;
        c.destroy();
        if (status !== 200) await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      open.forEach((c) => c.destroy());
      await g.stop();
      small.remove();
    }
  });
});
