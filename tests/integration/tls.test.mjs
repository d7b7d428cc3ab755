// SPDX-License-Identifier: AGPL-3.0-or-later
// TLS termination: a certificate made for the test with openssl, HTTPS
// keep-alive and large bodies, the SDK client over wss://, and plain HTTP
// on the TLS port refused without an answer.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';

import { authHeaders, Gateway, makeConfig, readJson, writeJson, wsClient } from './lib/gateway.mjs';

let config;
let gw;
let ca;
before(async () => {
  config = makeConfig({
    server: { tlsCertFile: 'tls/cert.pem', tlsKeyFile: 'tls/key.pem' },
    edit: (dir) => {
      fs.mkdirSync(`${dir}/tls`);
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
        '-keyout', `${dir}/tls/key.pem`, '-out', `${dir}/tls/cert.pem`, '-days', '2', '-subj', '/CN=localhost',
        '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'pipe' });
      // OAuth on, so that the protected-resource metadata is served.
      const conf = readJson(`${dir}/datagate.json`);
      conf.oauth.enabled = true;
      writeJson(`${dir}/datagate.json`, conf);
    },
  });
  ca = fs.readFileSync(config.file('tls/cert.pem'));
  gw = await Gateway.start({ config, env: { DATAGATE_JWT_SECRET: 'tls-test-secret-0123456789abcdef' } });
});
after(async () => {
  await gw.stop();
  config.remove();
});

function send(agent, path, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: gw.port, path, method, headers, agent }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(parts).toString(), socket: req.socket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tls', version: '1' } } });

describe('TLS', () => {
  it('announces an https URL and serves keep-alive requests', async () => {
    assert.ok(gw.tls, 'the listening line gives an https URL');
    const agent = new https.Agent({ ca, keepAlive: true, maxSockets: 1 });
    try {
      const sockets = new Set();
      for (let i = 0; i < 3; i++) {
        const r = await send(agent, '/healthz');
        assert.equal(r.status, 200);
        assert.equal(JSON.parse(r.text).status, 'ok');
        sockets.add(r.socket);
      }
      assert.equal(sockets.size, 1, 'one connection served all three');
      const id = `tls-${Date.now()}`;
      await send(agent, '/healthz', { headers: { 'X-Request-Id': id } });
      const line = await gw.waitForLog((l) => l.event === 'access' && l.request_id === id);
      assert.equal(line.transport, 'https');
    } finally {
      agent.destroy();
    }
  });

  it('reads a large body and answers over TLS', async () => {
    const agent = new https.Agent({ ca });
    const body = INIT + ' '.repeat(300000);
    const r = await send(agent, '/mcp', { method: 'POST', headers: { ...authHeaders(), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body });
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).result.protocolVersion, '2025-06-18');
    const oauth = await send(agent, '/.well-known/oauth-protected-resource');
    assert.equal(JSON.parse(oauth.text).resource, `https://127.0.0.1:${gw.port}/mcp`);
    agent.destroy();
  });

  it('drives the SDK client over wss://', async () => {
    const { client } = await wsClient(gw, { wsOptions: { ca } });
    const r = await client.callTool({ name: 'get_data_models', arguments: {} });
    assert.ok(r.structuredContent.dataModels.length > 0);
    await client.close();
  });

  it('closes a plain HTTP connection without an answer', async () => {
    const got = await new Promise((resolve) => {
      const sock = net.connect(gw.port, '127.0.0.1', () => sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
      let data = '';
      sock.on('data', (d) => (data += d.toString('latin1')));
      sock.on('error', () => {});
      sock.on('close', () => resolve(data));
    });
    assert.ok(!got.startsWith('HTTP/'), 'no plaintext HTTP answer');
    const r = await send(new https.Agent({ ca }), '/healthz');
    assert.equal(r.status, 200, 'the server still serves TLS');
  });
});
