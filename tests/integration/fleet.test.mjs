// SPDX-License-Identifier: AGPL-3.0-or-later
// Two gateway processes on one database, as a fleet behind a load balancer
// runs them: the configuration's SQLite file, or one PostgreSQL database
// when DG_TEST_DATABASE names a server (scripts/test runs both). The same
// idempotency key sent 100 times at once across both creates one record
// and answers every other call with the first outcome; what one gateway
// writes the other reads. On PostgreSQL, a notifications/cancelled or a
// DELETE of the session sent to one gateway stops the call the other runs,
// and a flood of cancels sends no more NOTIFYs than the relay budget.
// A session's event stream opens on either gateway.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { databaseArgs, Gateway, makeConfig, readJson, TEST_DATABASE, TOKENS } from './lib/gateway.mjs';
import { psql } from './lib/pg.mjs';
import { call, CUSTOMERS, entity, ENV, pointAt, structured, values } from './lib/forms.mjs';
import { requestsTo, startMock } from './lib/upstream.mjs';

const SENDS = 100;

let config;
let mock;
let gws = [];

before(async () => {
  mock = await startMock();
  // One session key: a session begun on one gateway goes on on the other.
  const env = { ...ENV, DATAGATE_FLEET_SESSION_KEY: randomBytes(32).toString('hex') };
  config = makeConfig({ server: { sessionKeyEnv: 'DATAGATE_FLEET_SESSION_KEY' }, edit: pointAt(mock.base) });
  gws.push(await Gateway.start({ config, env }));
  gws.push(await Gateway.start({ config, env }));
});
after(async () => {
  for (const gw of gws) await gw.stop();
  gws = [];
  config?.remove();
  await mock?.close();
});

async function countNamed(gw, name) {
  const r = structured(await call(gw, 'query_entities', {
    dataModelId: CUSTOMERS,
    countOnly: true,
    queryParameterGroups: [{ parameters: [{ propertyName: 'Name', operator: 'EqualTo', value: name }] }],
  }));
  return r.count;
}

describe('two gateways on one database', () => {
  it('run the same idempotency key once, whichever gateway each call reaches', async () => {
    const key = `fleet-${randomUUID()}`;
    const name = `Fleet ${key}`;
    const args = { dataModelId: CUSTOMERS, system: 'Copilot', idempotencyKey: key, formValues: values({ Name: name }) };
    const results = await Promise.all(
      Array.from({ length: SENDS }, (_, i) => call(gws[i % 2], 'submit_data_entry_form', args)),
    );
    const answers = results.map(structured);
    assert.equal(answers.filter((a) => a.replayed === false).length, 1);
    assert.equal(answers.filter((a) => a.replayed === true).length, SENDS - 1);
    assert.equal(new Set(answers.map((a) => a.id)).size, 1);
    assert.equal(new Set(answers.map((a) => a.submissionId)).size, 1);
    for (const gw of gws) assert.equal(await countNamed(gw, name), 1);
  });

  it('read through one gateway what the other wrote', async () => {
    const name = `Written ${randomUUID()}`;
    const created = structured(await call(gws[0], 'submit_data_entry_form', {
      dataModelId: CUSTOMERS, formValues: values({ Name: name, Region: 'APAC' }),
    }));
    const seen = await entity(gws[1], CUSTOMERS, created.id);
    assert.equal(seen.name, name);
    assert.equal(seen.region, 'APAC');
  });
});

// ---- Cancels that reach the other gateway ------------------------------------------

const HEADERS = {
  Authorization: `Bearer ${TOKENS.admin}`,
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
};

function post(gw, body, sid) {
  const headers = sid ? { ...HEADERS, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' } : HEADERS;
  return fetch(gw.url, { method: 'POST', headers, body: JSON.stringify(body) });
}

async function openSession(gw) {
  const init = await post(gw, { jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fleet', version: '1' } } });
  assert.equal(init.status, 200);
  await init.arrayBuffer();
  return init.headers.get('mcp-session-id');
}

async function until(what, check) {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting until ${what}`);
}

// A call of LiveOrderStatus on gw whose upstream request never gets an
// answer (the connector would wait firstByteMs, 10 s, for it).
async function hangingCall(gw, sid, requestId, order) {
  const path = `/erp/orders/${order}`;
  mock.upstream.control({ script: { path, responses: [{ hang: true }] } });
  const queries = readJson(config.file('saved_queries.json')).savedQueries;
  const live = queries.find((q) => q.name === 'LiveOrderStatus');
  const pending = post(gw, { jsonrpc: '2.0', id: requestId, method: 'tools/call', params: {
    name: 'execute_saved_query',
    arguments: { savedQueryId: live.id, inputs: [{ key: 'OrderNumber', value: order }] } } }, sid);
  pending.catch(() => {});
  await until('the call reached the upstream', () => requestsTo(mock, path).length === 1);
  return { pending, path };
}

// The call on gw ended as canceled (not by the upstream's timeout), and
// the gateway closed its upstream request.
async function assertCanceled(gw, path) {
  const log = await gw.waitForLog((l) => l.event === 'tool_call' && l.tool === 'execute_saved_query');
  assert.equal(log.outcome, 'canceled');
  await until('the upstream saw its request aborted', () => requestsTo(mock, path)[0].aborted);
  assert.equal(requestsTo(mock, path).length, 1, 'the request was not sent again');
}

const PG_ONLY = TEST_DATABASE === '' && 'cancels between gateways need PostgreSQL (LISTEN/NOTIFY)';

describe('a cancel that reaches the other gateway', () => {
  it('notifications/cancelled sent to B stops the call running on A', { skip: PG_ONLY }, async () => {
    const [a, b] = gws;
    const sid = await openSession(a);
    const { pending, path } = await hangingCall(a, sid, 7, `SO-${9000 + Math.floor(Math.random() * 999)}`);
    const note = await post(b, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'test' } }, sid);
    assert.equal(note.status, 202);
    const res = await pending;
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.ok(!text.includes('data:'), `the cancelled call gets no response: ${JSON.stringify(text)}`);
    await assertCanceled(a, path);
    assert.equal(b.logs.filter((l) => l.event === 'tool_call' && l.tool === 'execute_saved_query').length, 0);
    // The session goes on, on either gateway.
    const ping = await post(b, { jsonrpc: '2.0', id: 8, method: 'ping' }, sid);
    assert.equal(ping.status, 200);
  });

  it('a DELETE of the session sent to B stops its call on A and ends it there too', { skip: PG_ONLY }, async () => {
    const [a, b] = gws;
    const sid = await openSession(a);
    const before = a.logs.filter((l) => l.event === 'tool_call' && l.tool === 'execute_saved_query').length;
    const { pending, path } = await hangingCall(a, sid, 'call-1', `SO-${8000 + Math.floor(Math.random() * 999)}`);
    const del = await fetch(b.url, { method: 'DELETE', headers: { ...HEADERS, 'Mcp-Session-Id': sid } });
    assert.equal(del.status, 204);
    await pending.then((r) => r.arrayBuffer()).catch(() => {});
    await a.waitForLogs((l) => l.event === 'tool_call' && l.tool === 'execute_saved_query', before + 1);
    const log = a.logs.filter((l) => l.event === 'tool_call' && l.tool === 'execute_saved_query')[before];
    assert.equal(log.outcome, 'canceled');
    await until('the upstream saw its request aborted', () => requestsTo(mock, path)[0].aborted);
    const again = await post(a, { jsonrpc: '2.0', id: 2, method: 'ping' }, sid);
    assert.equal(again.status, 404, 'A ended the session as well');
  });
});

// ---- The relay budget ----------------------------------------------------------------

// What a session may relay (src/mcp/internal.h): its burst, then one a second.
const SESSION_BURST = 10;
const SESSION_PER_SECOND = 1;

async function metric(gw, line) {
  const text = await (await fetch(`${gw.origin}/metrics`)).text();
  const m = text.split('\n').find((l) => l.startsWith(line));
  return m === undefined ? 0 : Number(m.slice(line.length).trim());
}

// A psql session LISTENing on the gateways' cancel channel; heard() asks
// the server for what arrived (psql prints notifications after each
// statement) and returns every payload so far.
function listen(uri) {
  const child = spawn('psql', [uri, '-qAtX'], { stdio: ['pipe', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stdin.write('LISTEN datagate_cancel;\n');
  return {
    heard() {
      child.stdin.write('SELECT 1;\n');
      return [...out.matchAll(/Asynchronous notification "datagate_cancel" with payload "([^"]*)"/g)].map((m) => m[1]);
    },
    stop() {
      child.stdin.end();
    },
  };
}

describe('a flood of cancels', () => {
  it('sends no more NOTIFYs than the session\'s relay budget and counts the rest refused', { skip: PG_ONLY }, async () => {
    const [a, b] = gws;
    const uri = databaseArgs(config.dir)[1];
    const listener = listen(uri);
    try {
      // Sent again until heard: a NOTIFY before the LISTEN is lost.
      await until('the listener hears', () => {
        psql(uri, "NOTIFY datagate_cancel, 'ready'");
        return listener.heard().includes('ready');
      });
      const sid = await openSession(a);
      const hash = createHash('sha256').update(sid).digest('hex');
      const sent0 = await metric(b, 'dg_mcp_cancel_relays_total{outcome="sent"}');
      const refused0 = await metric(b, 'dg_mcp_cancel_relays_total{outcome="refused"}');
      const FLOOD = 4 * SESSION_BURST;
      const start = Date.now();
      for (let i = 0; i < FLOOD; i++) {
        const note = await post(b, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1000 + i } }, sid);
        assert.equal(note.status, 202);
      }
      const seconds = Math.floor((Date.now() - start) / 1000) + 1;
      const sent = (await metric(b, 'dg_mcp_cancel_relays_total{outcome="sent"}')) - sent0;
      const refused = (await metric(b, 'dg_mcp_cancel_relays_total{outcome="refused"}')) - refused0;
      assert.equal(sent + refused, FLOOD);
      assert.ok(sent >= SESSION_BURST, `the burst is relayed: ${sent}`);
      assert.ok(sent <= SESSION_BURST + seconds * SESSION_PER_SECOND, `${sent} relayed in ${seconds} s`);
      const ours = () => listener.heard().filter((p) => p.startsWith(`c1 ${hash} `)).length;
      await until('the relayed cancels arrive', () => ours() >= sent);
      // Anything NOTIFYd before this one arrives before it.
      psql(uri, "NOTIFY datagate_cancel, 'done'");
      await until('the listener hears the end', () => listener.heard().includes('done'));
      assert.equal(ours(), sent, 'one NOTIFY per relayed cancel, none for a refused one');
    } finally {
      listener.stop();
    }
  });
});

// Nothing is replayed: a session's GET stream reconnected to the other
// gateway (Last-Event-ID included) opens there afresh, and a request on it
// is answered on its own POST's stream.
describe('an event stream that moves to the other gateway', () => {
  it('opens on B for a session begun on A, Last-Event-ID ignored', async () => {
    const [a, b] = gws;
    const sid = await openSession(a);
    const ac = new AbortController();
    const stream = await fetch(b.url, { method: 'GET', signal: ac.signal, headers: {
      Authorization: HEADERS.Authorization, Accept: 'text/event-stream', 'Mcp-Session-Id': sid,
      'MCP-Protocol-Version': '2025-06-18', 'Last-Event-ID': '41' } });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type'), /^text\/event-stream/);
    const res = await post(b, { jsonrpc: '2.0', id: 3, method: 'ping' }, sid);
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json()).result, {});
    ac.abort();
    await stream.body?.cancel().catch(() => {});
  });
});
