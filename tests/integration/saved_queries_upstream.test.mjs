// SPDX-License-Identifier: AGPL-3.0-or-later
// The connector client's rules seen through execute_saved_query: the W3C
// traceparent carries the tool call's request id, a POST marked retryUnsafe
// is retried, a GET reports as many attempts as it sent requests, redirects
// stop at the connector's limit and never go from https to http, a
// connector without authentication sends no credentials, the concurrency
// limit queues and then refuses calls, the POST of a call cancelled while
// the upstream hangs is answered, and a name that does
// not resolve is reported as a DNS failure (against a local name server
// that answers NXDOMAIN, so the test needs no network).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { requestsTo, sampleOrder, startMock } from './lib/upstream.mjs';

const erpToken = `erp-${randomUUID()}`;
const env = { DATAGATE_SAMPLE_ERP_TOKEN: erpToken };

let mock;
let dns;
let config;
let gw;
let tmp;
const ids = {};

// A name server on 127.0.0.1 that answers every question with NXDOMAIN
// and counts the questions.
async function startNxdomainServer() {
  const socket = dgram.createSocket('udp4');
  const server = { questions: 0, socket };
  socket.on('message', (msg, rinfo) => {
    if (msg.length < 12) return;
    server.questions++;
    const reply = Buffer.from(msg);
    reply[2] = 0x80 | (msg[2] & 0x01); // a response; recursion desired copied
    reply[3] = 0x83; // recursion available, NXDOMAIN
    reply.writeUInt16BE(0, 6); // no answers, authority or additional records
    reply.writeUInt16BE(0, 8);
    reply.writeUInt16BE(0, 10);
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise((r) => socket.bind(0, '127.0.0.1', r));
  server.port = socket.address().port;
  server.close = () => new Promise((r) => socket.close(r));
  return server;
}

function connector(name, baseUrl, extra = {}) {
  return { id: randomUUID(), name, baseUrl, allowPrivateAddresses: true,
    auth: { type: 'bearer', tokenEnv: 'DATAGATE_SAMPLE_ERP_TOKEN' },
    breaker: { failures: 1000 }, ...extra };
}

const orderFields = [
  { property: 'OrderNumber', path: 'number' },
  { property: 'Status', path: 'status' },
  { property: 'Amount', path: 'total.amount' },
];

function orderQuery(name, conn) {
  return { id: randomUUID(), name, connector: conn, dataModel: 'Orders',
    inputs: [{ name: 'OrderNumber', type: 'String', required: true }],
    request: { path: '/orders/{OrderNumber}' }, resultPath: '$.order', idPath: 'id', fields: orderFields };
}

function editConfig(dir) {
  const conns = readJson(path.join(dir, 'connectors.json'));
  const https = mock.tlsBase.replace('127.0.0.1', 'localhost');
  const fast = { timeouts: { totalMs: 5000 }, retry: { maxAttempts: 3 } };
  conns.connectors.push(
    connector('TraceErp', `${mock.base}/erp`),
    connector('RetryErp', `${mock.base}/erp`, fast),
    connector('HttpsErp', `${https}/erp`, { caFile: mock.pki.ca, retry: { maxAttempts: 1 } }),
    connector('ShortRedirectErp', `${mock.base}/erp`, { maxRedirects: 2 }),
    connector('OpenErp', `${mock.base}/erp`, { auth: { type: 'none' } }),
    connector('SerialErp', `${mock.base}/erp`, { maxConcurrency: 1, maxQueue: 1,
      timeouts: { firstByteMs: 20000, totalMs: 30000 }, retry: { maxAttempts: 1 } }),
    connector('UnknownHostErp', 'http://no-such-host.datagate.test/erp',
      { timeouts: { dnsMs: 3000, totalMs: 5000 }, retry: { maxAttempts: 1 } }),
  );
  writeJson(path.join(dir, 'connectors.json'), conns);

  const queries = readJson(path.join(dir, 'saved_queries.json'));
  const search = queries.savedQueries.find((q) => q.name === 'SearchOrders');
  queries.savedQueries.push(
    orderQuery('TraceOrder', 'TraceErp'),
    orderQuery('RetryOrder', 'RetryErp'),
    orderQuery('HttpsOrder', 'HttpsErp'),
    orderQuery('ShortRedirectOrder', 'ShortRedirectErp'),
    orderQuery('OpenOrder', 'OpenErp'),
    orderQuery('SerialOrder', 'SerialErp'),
    orderQuery('UnknownHostOrder', 'UnknownHostErp'),
    { ...search, id: randomUUID(), name: 'RetriedSearch', connector: 'RetryErp',
      request: { ...search.request, retryUnsafe: true } },
    { ...search, id: randomUUID(), name: 'OnceSearch', connector: 'RetryErp' },
  );
  writeJson(path.join(dir, 'saved_queries.json'), queries);
  for (const q of queries.savedQueries) ids[q.name] = q.id;
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-upstream-'));
  mock = await startMock({ tlsDir: tmp, credentials: { erpToken } });
  dns = await startNxdomainServer();
  config = makeConfig({ server: { upstreamDnsServers: `127.0.0.1:${dns.port}` }, edit: editConfig });
  gw = await Gateway.start({ config, env });
});
after(async () => {
  await gw?.stop();
  config?.remove();
  await mock?.close();
  await dns?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

async function withClient(fn, headers = {}) {
  const { client, transport } = await httpClient(gw, { token: TOKENS.admin, headers });
  try {
    return await fn(client);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

function callArgs(name, values) {
  return { name: 'execute_saved_query', arguments: { savedQueryId: ids[name],
    inputs: Object.entries(values).map(([key, value]) => ({ key, value })) } };
}

async function execute(name, values, headers) {
  return withClient((client) => client.callTool(callArgs(name, values)), headers);
}

function structured(result) {
  assert.notEqual(result.isError, true, `tool failed: ${JSON.stringify(result.content)}`);
  return JSON.parse(result.content[0].text);
}

function errorText(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result.structuredContent)}`);
  return result.content[0].text;
}

function mapped(n) {
  const o = sampleOrder(n);
  return { orderNumber: o.number, status: o.status, amount: o.total.amount };
}

async function until(what, check) {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting until ${what}`);
}

describe('connector client rules through execute_saved_query', () => {
  it('traceparent carries the trace id of the request id, a new span per call', async () => {
    mock.upstream.control({ reset: true });
    const requestId = randomUUID();
    for (const n of [1040, 1041])
      structured(await execute('TraceOrder', { OrderNumber: `SO-${n}` }, { 'X-Request-Id': requestId }));
    const sent = [1040, 1041].map((n) => requestsTo(mock, `/erp/orders/SO-${n}`)[0].headers.traceparent);
    const traceId = requestId.replaceAll('-', '');
    for (const t of sent) assert.match(t, new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`));
    assert.notEqual(sent[0].split('-')[2], sent[1].split('-')[2], 'each call has its own span id');
  });

  it('a POST marked retryUnsafe is retried on 503; the same POST without it is not', async () => {
    const script = { path: '/erp/orders/search', responses: [{ status: 503, retryAfter: 0 }] };
    mock.upstream.control({ reset: true, script });
    const r = structured(await execute('RetriedSearch', { MinAmount: '1100' }));
    assert.ok(r.count > 0);
    assert.equal(requestsTo(mock, '/erp/orders/search', 'POST').length, 2);
    mock.upstream.control({ reset: true, script });
    assert.match(errorText(await execute('OnceSearch', { MinAmount: '1100' })), /answered 503/);
    assert.equal(requestsTo(mock, '/erp/orders/search', 'POST').length, 1);
  });

  it('a GET retried after connection resets reports as many attempts as requests were sent', async () => {
    mock.upstream.control({ reset: true });
    // The first call leaves a keep-alive connection in the pool; the next
    // call's first request goes out on it and is reset like the later ones.
    structured(await execute('RetryOrder', { OrderNumber: 'SO-1060' }));
    const resets = Array.from({ length: 4 }, () => ({ reset: true }));
    mock.upstream.control({ script: { path: '/erp/orders/SO-1061', responses: resets } });
    const text = errorText(await execute('RetryOrder', { OrderNumber: 'SO-1061' }));
    const sent = requestsTo(mock, '/erp/orders/SO-1061').length;
    assert.equal(sent, 3, 'retry.maxAttempts is 3');
    assert.match(text, new RegExp(`\\(after ${sent} attempts\\)`));
  });

  it('a redirect from https to http is refused', async () => {
    mock.upstream.control({ reset: true, script: { path: '/erp/orders/SO-1042',
      responses: [{ redirect: `${mock.base}/erp/orders/SO-1043` }] } });
    const text = errorText(await execute('HttpsOrder', { OrderNumber: 'SO-1042' }));
    assert.match(text, /^Saved Query 'HttpsOrder' failed: upstream 'HttpsErp' GET https:\/\/localhost:\d+\/erp\/orders\/SO-1042 was redirected from https to http, which is refused/);
    assert.equal(requestsTo(mock, '/erp/orders/SO-1043').length, 0, 'the http URL was never called');
    // The same connector follows an https redirect.
    mock.upstream.control({ script: { path: '/erp/orders/SO-1044', responses: [{ redirect: '/erp/orders/SO-1045' }] } });
    assert.deepEqual(structured(await execute('HttpsOrder', { OrderNumber: 'SO-1044' })).entities[0].properties, mapped(45));
  });

  it('redirects stop at the connector limit', async () => {
    const hop = (from, to) => ({ path: `/erp/orders/SO-${from}`, responses: [{ redirect: `/erp/orders/SO-${to}` }] });
    mock.upstream.control({ reset: true, script: hop(1046, 1047) });
    mock.upstream.control({ script: hop(1047, 1048) });
    assert.deepEqual(structured(await execute('ShortRedirectOrder', { OrderNumber: 'SO-1046' })).entities[0].properties, mapped(48));
    mock.upstream.control({ reset: true, script: hop(1046, 1047) });
    mock.upstream.control({ script: hop(1047, 1048) });
    mock.upstream.control({ script: hop(1048, 1049) });
    const text = errorText(await execute('ShortRedirectOrder', { OrderNumber: 'SO-1046' }));
    // The message names the URL that asked for the redirect over the limit.
    assert.match(text, /upstream 'ShortRedirectErp' GET .*\/erp\/orders\/SO-1048 was redirected more than 2 times/);
    assert.equal(requestsTo(mock, '/erp/orders/SO-1048').length, 1);
    assert.equal(requestsTo(mock, '/erp/orders/SO-1049').length, 0);
  });

  it('a connector without authentication sends no credentials', async () => {
    mock.upstream.control({ reset: true, script: { path: '/erp/orders/SO-1050',
      responses: [{ status: 200, json: { order: sampleOrder(50) } }] } });
    assert.deepEqual(structured(await execute('OpenOrder', { OrderNumber: 'SO-1050' })).entities[0].properties, mapped(50));
    const [req] = requestsTo(mock, '/erp/orders/SO-1050');
    assert.equal(req.headers.authorization, undefined);
    assert.equal(Object.keys(req.query).length, 0);
  });

  it('the concurrency limit queues one call and refuses the next while the upstream hangs', async () => {
    mock.upstream.control({ reset: true, script: { path: '/erp/orders/SO-1051', responses: [{ hang: true }] } });
    await withClient(async (client) => {
      const ac = new AbortController();
      const hung = client.callTool(callArgs('SerialOrder', { OrderNumber: 'SO-1051' }), undefined, { signal: ac.signal });
      hung.catch(() => {});
      await until('the first call reached the upstream', () => requestsTo(mock, '/erp/orders/SO-1051').length === 1);
      const later = [1052, 1053].map((n) => client.callTool(callArgs('SerialOrder', { OrderNumber: `SO-${n}` })));
      const refused = await Promise.race(later);
      assert.match(errorText(refused), /^Saved Query 'SerialOrder' failed: upstream 'SerialErp' GET .* was refused: the connector already has 1 calls running and 1 waiting/);
      assert.equal(requestsTo(mock, '/erp/orders/SO-1052').length + requestsTo(mock, '/erp/orders/SO-1053').length, 0,
        'the queued call waits for the slot');
      ac.abort();
      await assert.rejects(hung);
      const results = await Promise.all(later);
      const ok = results.filter((r) => r.isError !== true);
      assert.equal(ok.length, 1, 'the queued call ran once the slot was free');
      const n = Number(structured(ok[0]).entities[0].properties.orderNumber.slice(3));
      assert.deepEqual(structured(ok[0]).entities[0].properties, mapped(n - 1000));
    });
  });

  // MCP "Cancellation": the cancelled request gets no response, yet its POST
  // still needs an answer that is not the 202 of notifications.
  it('answers the POST of a cancelled call with an event stream that carries no response', async () => {
    mock.upstream.control({ reset: true, script: { path: '/erp/orders/SO-1055', responses: [{ hang: true }] } });
    const headers = { Authorization: `Bearer ${TOKENS.admin}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const post = (body, sid) => fetch(gw.url, { method: 'POST', headers: sid ? { ...headers, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' } : headers, body: JSON.stringify(body) });
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cancel', version: '1' } } });
    assert.equal(init.status, 200);
    await init.arrayBuffer();
    const sid = init.headers.get('mcp-session-id');
    const pending = post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: callArgs('OpenOrder', { OrderNumber: 'SO-1055' }) }, sid);
    await until('the call reached the upstream', () => requestsTo(mock, '/erp/orders/SO-1055').length === 1);
    const note = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'test' } }, sid);
    assert.equal(note.status, 202);
    const res = await pending;
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    const text = await res.text();
    assert.ok(!text.includes('data:'), `no response event: ${JSON.stringify(text)}`);
  });

  it('a name that does not resolve is reported as a DNS failure', async () => {
    const before = dns.questions;
    const text = errorText(await execute('UnknownHostOrder', { OrderNumber: 'SO-1054' }));
    assert.match(text, /^Saved Query 'UnknownHostOrder' failed: upstream 'UnknownHostErp' GET http:\/\/no-such-host\.datagate\.test\/erp\/orders\/SO-1054 /);
    assert.match(text, /no-such-host\.datagate\.test/);
    assert.match(text, /resolve|DNS|not found/i);
    assert.ok(dns.questions > before, 'the configured name server was asked');
  });
});
