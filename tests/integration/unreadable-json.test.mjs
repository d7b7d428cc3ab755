// SPDX-License-Identifier: AGPL-3.0-or-later
// Valid JSON that a message may not hold (a \u0000 in a string, an integer
// beyond 64 bits, a repeated key) is answered with the request's id, so the
// official SDK client hears its error at once instead of waiting for its
// timeout, over HTTP and over WebSocket.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { authHeaders, Gateway, httpClient, makeConfig, wsClient } from './lib/gateway.mjs';
import { RawWs } from './lib/raw.mjs';

let config;
let gw;
before(async () => {
  config = makeConfig();
  gw = await Gateway.start({ config });
});
after(async () => {
  await gw.stop();
  config.remove();
});

// Longer than any answer needs, so that a timeout shows as a failure.
const SDK_TIMEOUT_MS = 60000;

async function expectInvalidParams(client, args, pattern) {
  const started = Date.now();
  const err = await client
    .callTool({ name: 'get_data_models', arguments: args }, undefined, { timeout: SDK_TIMEOUT_MS })
    .then(() => null, (e) => e);
  assert.ok(err, 'the call failed');
  assert.equal(err.code, -32602, String(err));
  assert.match(err.message, pattern);
  assert.ok(Date.now() - started < SDK_TIMEOUT_MS, 'answered, not timed out');
}

for (const [name, connect] of [['HTTP', httpClient], ['WebSocket', wsClient]]) {
  describe(`unreadable values over ${name}`, () => {
    it('answers a \\u0000 in a string with -32602 and the request id', async () => {
      const { client } = await connect(gw);
      try {
        await expectInvalidParams(client, { x: 'a\u0000b' }, /\\u0000 is not allowed in a string/);
        await expectInvalidParams(client, { n: 1e20 }, /integer out of range/);
        // The session goes on.
        const ok = await client.callTool({ name: 'get_data_models', arguments: {} });
        assert.notEqual(ok.isError, true);
      } finally {
        await client.close();
      }
    });
  });
}

describe('repeated keys', () => {
  async function initialized() {
    const ws = await RawWs.open(gw.port, '/mcp', { headers: authHeaders() });
    const init = await ws.rpc({ jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    assert.ok(init.result);
    return ws;
  }

  it('refuses a repeated key with -32600, with the id when the id itself is not repeated', async () => {
    const ws = await initialized();
    await ws.sendText('{"jsonrpc":"2.0","id":4,"method":"ping","method":"tools/list"}');
    const dup = JSON.parse((await ws.readUntil(1)).text);
    assert.equal(dup.id, 4);
    assert.equal(dup.error.code, -32600);
    assert.match(dup.error.message, /the key "method" is repeated/);
    await ws.sendText('{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}');
    const ids = JSON.parse((await ws.readUntil(1)).text);
    assert.equal(ids.id, null);
    assert.equal(ids.error.code, -32600);
    assert.match(ids.error.message, /the key "id" is repeated/);
    ws.conn.destroy();
  });

  it('refuses a repeated key over HTTP', async () => {
    const { client, transport } = await httpClient(gw);
    try {
      const res = await fetch(gw.url, {
        method: 'POST',
        headers: { ...authHeaders(), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
          'Mcp-Session-Id': transport.sessionId, 'MCP-Protocol-Version': '2025-06-18' },
        body: '{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"a":1,"a":2}}',
      });
      const body = await res.json();
      assert.equal(body.id, 9);
      assert.equal(body.error.code, -32600);
      assert.match(body.error.message, /the key "a" is repeated/);
    } finally {
      await client.close();
    }
  });
});
