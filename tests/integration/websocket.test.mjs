// SPDX-License-Identifier: AGPL-3.0-or-later
// MCP over WebSocket: the SDK client over a `ws` transport, and RFC 6455
// spoken by hand for the handshake, masking, fragmentation, control frames,
// size and UTF-8 limits and the close handshake.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import WebSocket from 'ws';

import { authHeaders, Gateway, makeConfig, TOKENS, wsClient } from './lib/gateway.mjs';
import { closePayload, frame, RawConn, RawWs, upgradeRequest, wsAcceptFor } from './lib/raw.mjs';

const MAX_MESSAGE = 4096;

let config;
let gw;
before(async () => {
  config = makeConfig({ server: { maxWsMessageBytes: MAX_MESSAGE } });
  gw = await Gateway.start({ config });
});
after(async () => {
  await gw.stop();
  config.remove();
});

const TEXT = 1;
const BINARY = 2;
const CONT = 0;
const CLOSE = 8;
const PING = 9;
const PONG = 10;

function open(opts = {}) {
  return RawWs.open(gw.port, '/mcp', { headers: authHeaders(), ...opts });
}

async function initialized(ws) {
  const r = await ws.rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  assert.equal(r.result.protocolVersion, '2025-06-18');
  await ws.sendText(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  return ws;
}

// The server fails the connection: a close frame with `code`, then a FIN.
async function expectClose(ws, code) {
  const f = await ws.readUntil(CLOSE);
  assert.equal(f.code, code, `close code ${f.code} (${f.reason})`);
  const { clean, error } = await ws.conn.waitClosed();
  assert.ok(clean, `TCP closed cleanly, not ${error?.code}`);
  ws.conn.destroy();
}

describe('the SDK client over WebSocket', () => {
  it('initializes, lists tools and calls them', async () => {
    const { client, transport } = await wsClient(gw);
    assert.equal(transport.socket.protocol, 'mcp');
    assert.equal(client.getServerVersion().name, 'datagate');
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'get_data_models'));
    const r = await client.callTool({ name: 'get_data_models', arguments: {} });
    const models = r.structuredContent.dataModels;
    assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
    const props = await client.callTool({ name: 'get_data_model_properties', arguments: { dataModelId: models[0].dataModelId } });
    assert.equal(props.structuredContent.name, models[0].name);
    await client.ping();
    await client.close();
    assert.equal(transport.closeCode, 1000, 'the close status is echoed');
  });

  it('applies each user\'s permissions', async () => {
    const admin = await wsClient(gw);
    const sales = await wsClient(gw, { token: TOKENS.sales });
    const a = (await admin.client.callTool({ name: 'get_data_models', arguments: {} })).structuredContent.dataModels;
    const s = (await sales.client.callTool({ name: 'get_data_models', arguments: {} })).structuredContent.dataModels;
    assert.ok(s.length < a.length);
    await admin.client.close();
    await sales.client.close();
  });

  it('accepts the token as the access_token query parameter', async () => {
    const ws = await RawWs.open(gw.port, `/mcp?access_token=${encodeURIComponent(TOKENS.auditor)}`);
    await initialized(ws);
    const r = await ws.rpc({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_data_models', arguments: {} } });
    assert.ok(r.result.structuredContent.dataModels.length > 0);
    await ws.send(CLOSE, closePayload(1000));
    await expectClose(ws, 1000);
  });
});

describe('handshake', () => {
  async function refused(opts, status) {
    const conn = await RawConn.connect(gw.port);
    const { bytes } = upgradeRequest('/mcp', { headers: authHeaders(), ...opts });
    await conn.write(bytes);
    const res = await conn.readResponse();
    assert.equal(res.status, status, `${JSON.stringify(opts)}: ${res.status} ${res.text}`);
    conn.destroy();
    return res;
  }

  it('refuses a client that does not offer the mcp subprotocol', async () => {
    await refused({ protocol: null }, 400);
    await refused({ protocol: 'graphql-ws' }, 400);
  });

  it('refuses a bad Sec-WebSocket-Key', async () => {
    await refused({ key: 'not-a-key' }, 400);
    await refused({ key: Buffer.alloc(8).toString('base64') }, 400);
  });

  it('asks for version 13 when another is offered', async () => {
    const res = await refused({ headers: { ...authHeaders(), 'Sec-WebSocket-Version': '8' } }, 426);
    assert.equal(res.headers['sec-websocket-version'], '13');
  });

  it('refuses a missing token and a foreign Origin', async () => {
    const res = await refused({ headers: {} }, 401);
    assert.match(res.headers['www-authenticate'], /^Bearer /);
    await refused({ headers: { ...authHeaders(), Origin: 'http://evil.example' } }, 403);
  });

  // An upgrade request written line by line, for fields that appear twice
  // or not at all.
  function rawUpgrade(lines) {
    const head = ['GET /mcp HTTP/1.1', 'Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Version: 13', `Authorization: ${authHeaders().Authorization}`, ...lines];
    return head.join('\r\n') + '\r\n\r\n';
  }

  async function rawStatus(text) {
    const conn = await RawConn.connect(gw.port);
    await conn.write(text);
    const res = await conn.readResponse();
    conn.destroy();
    return res;
  }

  it('refuses two Sec-WebSocket-Key lines', async () => {
    const key = 'dGhlIHNhbXBsZSBub25jZQ==';
    for (const other of [key, 'AQIDBAUGBwgJCgsMDQ4PEA==']) {
      const res = await rawStatus(rawUpgrade(['Host: localhost', `Sec-WebSocket-Key: ${key}`, `Sec-WebSocket-Key: ${other}`, 'Sec-WebSocket-Protocol: mcp']));
      assert.equal(res.status, 400, res.text);
    }
  });

  it('reads Sec-WebSocket-Protocol on two lines as one list', async () => {
    const key = 'dGhlIHNhbXBsZSBub25jZQ==';
    const res = await rawStatus(rawUpgrade(['Host: localhost', `Sec-WebSocket-Key: ${key}`, 'Sec-WebSocket-Protocol: graphql-ws', 'Sec-WebSocket-Protocol: mcp']));
    assert.equal(res.status, 101, res.text);
    assert.equal(res.headers['sec-websocket-protocol'], 'mcp');
    assert.equal(res.headers['sec-websocket-accept'], wsAcceptFor(key));
  });

  it('refuses an upgrade without Host', async () => {
    const res = await rawStatus(rawUpgrade(['Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: mcp']));
    assert.equal(res.status, 400);
  });

  it('the ws package is refused without the subprotocol', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/mcp`, { headers: authHeaders() });
    const status = await new Promise((resolve) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode));
      ws.on('open', () => resolve(101));
      ws.on('error', () => {});
    });
    ws.terminate();
    assert.equal(status, 400);
  });
});

describe('frames', () => {
  it('closes with 1002 on an unmasked client frame', async () => {
    const ws = await initialized(await open());
    await ws.send(TEXT, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }), { mask: false });
    await expectClose(ws, 1002);
  });

  it('closes with 1009 on a message over the limit', async () => {
    const ws = await initialized(await open());
    await ws.send(TEXT, 'a'.repeat(MAX_MESSAGE + 1));
    await expectClose(ws, 1009);
  });

  it('closes with 1009 when fragments add up to more than the limit', async () => {
    const ws = await initialized(await open());
    const half = 'b'.repeat(MAX_MESSAGE / 2 + 1);
    await ws.send(TEXT, half, { fin: false });
    await ws.send(CONT, half, { fin: true });
    await expectClose(ws, 1009);
  });

  it('closes with 1007 on invalid UTF-8 in a text message', async () => {
    const ws = await initialized(await open());
    await ws.send(TEXT, Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]));
    await expectClose(ws, 1007);
  });

  it('closes with 1007 on UTF-8 split badly across fragments', async () => {
    const ws = await initialized(await open());
    await ws.send(TEXT, Buffer.from('"\xe2'.slice(0, 1)), { fin: false });
    await ws.send(CONT, Buffer.from([0xe2, 0x82]), { fin: false });
    await ws.send(CONT, Buffer.from([0x22]), { fin: true });
    await expectClose(ws, 1007);
  });

  it('reassembles a fragmented message, with a ping between fragments', async () => {
    const ws = await initialized(await open());
    const msg = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'frag', method: 'tools/call', params: { name: 'get_data_models', arguments: {}, _meta: { note: 'ünïcödé €' } } }));
    // Cut inside a multi-byte character: only the whole message is UTF-8.
    const cut = msg.indexOf(Buffer.from('€')) + 1;
    await ws.send(TEXT, msg.subarray(0, 10), { fin: false });
    await ws.send(PING, 'mid');
    await ws.send(CONT, msg.subarray(10, cut), { fin: false });
    await ws.send(CONT, msg.subarray(cut), { fin: true });
    const pong = await ws.readFrame();
    assert.equal(pong.opcode, PONG);
    assert.equal(pong.payload.toString(), 'mid');
    const reply = JSON.parse((await ws.readUntil(TEXT)).text);
    assert.equal(reply.id, 'frag');
    assert.ok(reply.result.structuredContent.dataModels.length > 0);
    await ws.send(CLOSE, closePayload(1000));
    await expectClose(ws, 1000);
  });

  it('answers a ping with a pong carrying the same payload', async () => {
    const ws = await open();
    await ws.send(PING, 'hello-ping');
    const f = await ws.readFrame();
    assert.equal(f.opcode, PONG);
    assert.equal(f.payload.toString(), 'hello-ping');
    await ws.send(CLOSE, closePayload(1000));
    await expectClose(ws, 1000);
  });

  it('echoes the status code in the close handshake', async () => {
    const ws = await open();
    await ws.send(CLOSE, closePayload(4321, 'bye'));
    await expectClose(ws, 4321);
  });

  it('closes with 1002 on an invalid close code', async () => {
    const ws = await open();
    await ws.send(CLOSE, closePayload(1005));
    await expectClose(ws, 1002);
  });

  it('refuses binary messages with 1003', async () => {
    const ws = await initialized(await open());
    await ws.send(BINARY, Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' })));
    await expectClose(ws, 1003);
  });

  it('closes with 1002, not 1003, on a binary frame inside a fragmented text message', async () => {
    const ws = await initialized(await open());
    await ws.send(TEXT, '{"jsonrpc":', { fin: false });
    await ws.send(BINARY, '"2.0"}');
    await expectClose(ws, 1002);
  });

  it('closes with 1002 on a continuation without a message', async () => {
    const ws = await open();
    await ws.send(CONT, 'x');
    await expectClose(ws, 1002);
  });

  it('closes with 1002 on control frames that break the rules', async () => {
    const cases = [
      ['a ping longer than 125 bytes', (ws) => ws.send(PING, 'x'.repeat(126))],
      ['a fragmented ping', (ws) => ws.send(PING, 'x', { fin: false })],
      ['reserved bits', (ws) => ws.send(TEXT, '{}', { rsv: 4 })],
      ['a reserved opcode', (ws) => ws.send(3, 'x')],
      ['a one-byte close payload', (ws) => ws.send(CLOSE, Buffer.from([3]))],
      ['a new message inside a fragmented one', async (ws) => {
        await ws.send(TEXT, '{', { fin: false });
        await ws.send(TEXT, '}');
      }],
    ];
    for (const [what, act] of cases) {
      const ws = await open();
      await act(ws);
      await assert.doesNotReject(expectClose(ws, 1002), what);
    }
  });

  it('closes with 1009 on a frame header that announces too much', async () => {
    const ws = await open();
    await ws.conn.write(Buffer.from([0x81, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]));
    await expectClose(ws, 1009);
  });

  it('reads frames that arrive with the upgrade request', async () => {
    const conn = await RawConn.connect(gw.port);
    const { bytes } = upgradeRequest('/mcp', { headers: authHeaders() });
    const init = { jsonrpc: '2.0', id: 'early', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
    await conn.write(Buffer.concat([bytes, frame(TEXT, JSON.stringify(init)), frame(PING, 'early-ping')]));
    assert.equal((await conn.readResponse()).status, 101);
    const ws = new RawWs(conn);
    const frames = [await ws.readFrame(), await ws.readFrame()];
    const pong = frames.find((f) => f.opcode === PONG);
    const text = frames.find((f) => f.opcode === TEXT);
    assert.equal(pong.payload.toString(), 'early-ping');
    assert.equal(JSON.parse(text.text).id, 'early');
    await ws.send(CLOSE, closePayload(1000));
    await expectClose(ws, 1000);
  });

  it('answers JSON-RPC errors without closing', async () => {
    const ws = await initialized(await open());
    await ws.sendText('{not json');
    const parse = JSON.parse((await ws.readUntil(TEXT)).text);
    assert.equal(parse.error.code, -32700);
    const unknown = await ws.rpc({ jsonrpc: '2.0', id: 5, method: 'nope' });
    assert.equal(unknown.error.code, -32601);
    const ping = await ws.rpc({ jsonrpc: '2.0', id: 6, method: 'ping' });
    assert.deepEqual(ping.result, {});
    await ws.send(CLOSE, closePayload(1000));
    await expectClose(ws, 1000);
  });
});

describe('keep-alive pings', () => {
  it('pings an idle WebSocket and drops one that never answers', async () => {
    // The interval is also the time the live client has to answer: long
    // enough for a loaded machine, since the answer is the side that must win.
    const cfg = makeConfig({ server: { wsPingIntervalMs: 1500 } });
    const g = await Gateway.start({ config: cfg });
    try {
      const live = await RawWs.open(g.port, '/mcp', { headers: authHeaders() });
      const dead = await RawWs.open(g.port, '/mcp', { headers: authHeaders() });
      for (let i = 0; i < 2; i++) {
        const ping = await live.readFrame();
        assert.equal(ping.opcode, PING);
        await live.send(PONG, ping.payload);
      }
      assert.equal((await dead.readFrame()).opcode, PING);
      await dead.conn.waitClosed();
      assert.ok(!live.conn.ended, 'the answering client stays');
      await initialized(live);
      await live.send(CLOSE, closePayload(1000));
      await expectClose(live, 1000);
    } finally {
      await g.stop();
      cfg.remove();
    }
  });
});
