// SPDX-License-Identifier: AGPL-3.0-or-later
// MCP protocol through the official SDK client over Streamable HTTP:
// version negotiation, server info, ping, tools/list, the two Data Model
// tools for every role of conf/, tool errors, cancellation and progress.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { authHeaders, expectedView, Gateway, httpClient, readJson, TOKENS, wsClient } from './lib/gateway.mjs';

const VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];
const NEWEST = '2025-11-25';

let gw;
before(async () => {
  gw = await Gateway.start();
});
after(async () => {
  await gw.stop();
});

async function withClient(opts, fn) {
  const { client, transport } = await httpClient(gw, opts);
  try {
    return await fn(client, transport);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

// The tool result's text item holds the same JSON as structuredContent.
function structured(result) {
  assert.notEqual(result.isError, true, `tool failed: ${JSON.stringify(result.content)}`);
  assert.equal(result.content.length, 1);
  assert.equal(result.content[0].type, 'text');
  const parsed = JSON.parse(result.content[0].text);
  assert.deepEqual(result.structuredContent, parsed);
  return parsed;
}

function errorText(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result)}`);
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

// Every key of every object in value starts with a lowercase letter.
function assertCamelKeys(value, where = '') {
  if (Array.isArray(value)) return value.forEach((v, i) => assertCamelKeys(v, `${where}[${i}]`));
  if (value === null || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value)) {
    assert.match(k, /^[a-z]/, `key ${where}.${k} is not camelCased`);
    assertCamelKeys(v, `${where}.${k}`);
  }
}

describe('initialize', () => {
  for (const version of VERSIONS) {
    it(`negotiates ${version} when the client asks for it`, async () => {
      await withClient({ version }, async (client, transport) => {
        assert.equal(transport.protocolVersion, version);
        const info = client.getServerVersion();
        assert.equal(info.name, 'datagate');
        assert.match(info.version, /^\d+\.\d+\.\d+/);
        assert.ok(client.getServerCapabilities().tools, 'tools capability declared');
        await client.ping();
      });
    });
  }

  it('answers an unknown version with the newest it speaks', async () => {
    await withClient({ version: '2024-10-07' }, async (client, transport) => {
      assert.equal(transport.protocolVersion, NEWEST);
      await client.ping();
    });
  });

  it('gives instructions that name the tool to call first', async () => {
    await withClient({}, async (client) => {
      const text = client.getInstructions();
      assert.equal(typeof text, 'string');
      const first = text.indexOf('get_data_models');
      assert.ok(first >= 0, 'instructions mention get_data_models');
      assert.ok(first < text.indexOf('get_data_model_properties'), 'get_data_models comes first');
    });
  });
});

describe('tools/list', () => {
  it('lists every tool with an input and an output schema', async () => {
    await withClient({}, async (client) => {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      assert.ok(names.includes('get_data_models') && names.includes('get_data_model_properties'));
      assert.equal(new Set(names).size, names.length, 'tool names are unique');
      for (const t of tools) {
        assert.equal(t.inputSchema?.type, 'object', `${t.name} inputSchema`);
        assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema`);
        assert.ok(t.description.length > 40, `${t.name} has a description`);
        assert.equal(typeof t.annotations?.readOnlyHint, 'boolean');
      }
      const props = tools.find((t) => t.name === 'get_data_model_properties');
      assert.deepEqual(props.inputSchema.required, ['dataModelId']);
    });
  });

  it('leaves outputSchema and titles out at 2025-03-26, which does not know them', async () => {
    await withClient({ version: '2025-03-26' }, async (client) => {
      assert.equal(client.getServerVersion().title, undefined);
      const { tools } = await client.listTools();
      assert.ok(tools.length >= 2);
      for (const t of tools) {
        assert.equal(t.outputSchema, undefined);
        assert.equal(t.title, undefined);
        assert.equal(typeof t.annotations?.readOnlyHint, 'boolean');
      }
      const r = await client.callTool({ name: 'get_data_models', arguments: {} });
      assert.equal(r.structuredContent, undefined);
      assert.ok(Array.isArray(JSON.parse(r.content[0].text).dataModels));
    });
  });

  it('lists name, description and inputSchema only at 2024-11-05, and answers with text', async () => {
    await withClient({ version: '2024-11-05' }, async (client, transport) => {
      assert.equal(transport.protocolVersion, '2024-11-05');
      const { tools } = await client.listTools();
      assert.ok(tools.length >= 2);
      for (const t of tools) assert.deepEqual(Object.keys(t).sort(), ['description', 'inputSchema', 'name']);
      const r = await client.callTool({ name: 'get_data_models', arguments: {} });
      assert.equal(r.structuredContent, undefined);
      assert.ok(Array.isArray(JSON.parse(r.content[0].text).dataModels));
    });
  });
});

describe('Data Model tools honour each role of conf/', () => {
  for (const user of ['admin', 'sales', 'auditor']) {
    it(`get_data_models as ${user}`, async () => {
      const { models, view } = expectedView(gw.config.dir, user);
      await withClient({ token: TOKENS[user] }, async (client) => {
        const result = structured(await client.callTool({ name: 'get_data_models', arguments: {} }));
        assertCamelKeys(result);
        const got = result.dataModels.map((m) => m.dataModelId.toLowerCase());
        const want = models.filter((m) => view.has(m.id.toLowerCase())).map((m) => m.id.toLowerCase());
        assert.deepEqual(got, want);
        for (const m of result.dataModels) {
          const conf = view.get(m.dataModelId.toLowerCase()).model;
          assert.equal(m.name, conf.name);
          assert.equal(m.entityType, conf.entityType);
          assert.equal(m.entitySubType, conf.entitySubType ?? null);
        }
      });
    });

    it(`get_data_model_properties as ${user}`, async () => {
      const { models, view } = expectedView(gw.config.dir, user);
      await withClient({ token: TOKENS[user] }, async (client) => {
        for (const m of models) {
          const r = await client.callTool({ name: 'get_data_model_properties', arguments: { dataModelId: m.id } });
          const seen = view.get(m.id.toLowerCase());
          if (!seen) {
            // A hidden model is reported exactly as an unknown one.
            const text = errorText(r);
            assert.match(text, /dataModelId/);
            assert.ok(text.includes(m.id), 'the message repeats the id given');
            continue;
          }
          const result = structured(r);
          assertCamelKeys(result);
          assert.equal(result.dataModelId.toLowerCase(), m.id.toLowerCase());
          assert.deepEqual(
            result.properties.map((p) => p.propertyName),
            seen.properties.map((p) => p.name),
          );
          for (const p of result.properties) checkReference(p, m, view);
        }
      });
    });
  }

  it('differs between roles where conf/ says so', async () => {
    const admin = expectedView(gw.config.dir, 'admin').view;
    const sales = expectedView(gw.config.dir, 'sales').view;
    // The sample must keep a model hidden from sales and a denied property,
    // or the role tests above would prove nothing.
    assert.ok(admin.size > sales.size, 'a model is hidden from sales');
    const trimmed = [...sales.entries()].some(([id, v]) => v.properties.length < admin.get(id).properties.length);
    assert.ok(trimmed, 'a property is hidden from sales');
  });

  it('looks a model id up in any case', async () => {
    const { models } = readJson(`${gw.config.dir}/models.json`);
    await withClient({}, async (client) => {
      const r = await client.callTool({
        name: 'get_data_model_properties',
        arguments: { dataModelId: models[0].id.toUpperCase() },
      });
      assert.equal(structured(r).name, models[0].name);
    });
  });
});

// A reference object as the seed describes it, checked against conf/.
function checkReference(p, model, view) {
  const conf = model.properties.find((c) => c.name === p.propertyName);
  assert.equal(p.dataType, conf.dataType);
  if (conf.dataType !== 'Reference') {
    assert.equal(p.reference, undefined, `${p.propertyName} has no reference object`);
    return;
  }
  const ref = conf.reference;
  const r = p.reference;
  assert.equal(r.direction, ref.direction);
  assert.equal(r.cardinality, ref.direction === 'Outbound' ? 'OneToOne' : 'OneToMany');
  assert.equal(r.derived, ref.direction === 'Inbound');
  if (ref.direction === 'Inbound') assert.equal(p.readOnly, true, `${p.propertyName} is read-only`);
  if (ref.target === undefined || ref.target === null) {
    assert.equal(r.targetDataModelId, null);
    assert.equal(r.targetEntityType, ref.targetEntityType);
    assert.equal(r.expandable, false);
    return;
  }
  const target = ref.target.toLowerCase();
  const tm = allModels().find((m) => m.name.toLowerCase() === target || m.id.toLowerCase() === target);
  assert.ok(tm, `target ${ref.target} exists`);
  assert.equal(r.targetDataModelId.toLowerCase(), tm.id.toLowerCase());
  assert.equal(r.targetEntityType, tm.entityType);
  assert.equal(r.expandable, view.has(tm.id.toLowerCase()), `${model.name}.${p.propertyName} expandable`);
}

function allModels() {
  return readJson(`${gw.config.dir}/models.json`).models;
}

describe('tool errors', () => {
  it('refuses an unknown tool with -32602 naming it', async () => {
    await withClient({}, async (client) => {
      await assert.rejects(
        client.callTool({ name: 'no_such_tool', arguments: {} }),
        (err) => err instanceof McpError && err.code === -32602 && /no_such_tool/.test(err.message),
      );
    });
  });

  it('names the parameter, the value given and what is allowed', async () => {
    await withClient({}, async (client) => {
      const bad = await client.callTool({ name: 'get_data_model_properties', arguments: { dataModelId: 'not-a-guid' } });
      const text = errorText(bad);
      assert.match(text, /dataModelId/);
      assert.match(text, /not-a-guid/);
      assert.match(text, /uuid|GUID/i);

      const missing = errorText(await client.callTool({ name: 'get_data_model_properties', arguments: {} }));
      assert.match(missing, /dataModelId/);
      assert.match(missing, /required|missing/i);

      const typed = errorText(await client.callTool({ name: 'get_data_model_properties', arguments: { dataModelId: 42 } }));
      assert.match(typed, /dataModelId/);
      assert.match(typed, /42/);
      assert.match(typed, /GUID|string/);

      const extra = errorText(await client.callTool({ name: 'get_data_models', arguments: { limit: 5 } }));
      assert.match(extra, /limit/);

      const unknown = '00000000-0000-4000-8000-000000000000';
      const none = errorText(await client.callTool({ name: 'get_data_model_properties', arguments: { dataModelId: unknown } }));
      assert.ok(none.includes(unknown) && /get_data_models/.test(none), none);
    });
  });

  it('keeps the session usable after errors', async () => {
    await withClient({}, async (client) => {
      await client.callTool({ name: 'get_data_models', arguments: { bogus: true } });
      await assert.rejects(client.callTool({ name: 'nope', arguments: {} }));
      structured(await client.callTool({ name: 'get_data_models', arguments: {} }));
    });
  });
});

describe('cancellation and progress', () => {
  it('ignores notifications/cancelled for a request that has ended', async () => {
    await withClient({}, async (client, transport) => {
      await client.notification({ method: 'notifications/cancelled', params: { requestId: 12345, reason: 'test' } });
      // The raw notification gets 202 too.
      const res = await fetch(gw.url, {
        method: 'POST',
        headers: {
          ...authHeaders(),
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Session-Id': transport.sessionId,
          'MCP-Protocol-Version': transport.protocolVersion,
        },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'x' } }),
      });
      assert.equal(res.status, 202);
      assert.equal(await res.text(), '');
      structured(await client.callTool({ name: 'get_data_models', arguments: {} }));
    });
  });

  it('rejects an aborted call on the client and keeps the session', async () => {
    await withClient({}, async (client) => {
      const ac = new AbortController();
      ac.abort('changed my mind');
      await assert.rejects(client.callTool({ name: 'get_data_models', arguments: {} }, undefined, { signal: ac.signal }));
      structured(await client.callTool({ name: 'get_data_models', arguments: {} }));
    });
  });

  it('answers a call with a progress token over an SSE stream', async () => {
    await withClient({}, async (client, transport) => {
      const notes = [];
      const r = await client.callTool({ name: 'get_data_models', arguments: {} }, undefined, {
        onprogress: (p) => notes.push(p),
      });
      assert.ok(structured(r).dataModels.length > 0);
      // The two tools answer at once; any progress they send is well formed.
      for (const n of notes) assert.equal(typeof n.progress, 'number');

      const res = await fetch(gw.url, {
        method: 'POST',
        headers: {
          ...authHeaders(),
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Session-Id': transport.sessionId,
          'MCP-Protocol-Version': transport.protocolVersion,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'p1',
          method: 'tools/call',
          params: { name: 'get_data_models', arguments: {}, _meta: { progressToken: 'tok-1' } },
        }),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type'), /^text\/event-stream/);
      const events = (await res.text()).split('\n\n').filter((e) => e.trim() !== '');
      const data = events.map((e) => e.split('\n').find((l) => l.startsWith('data: '))).filter(Boolean);
      const messages = data.map((l) => JSON.parse(l.slice(6)));
      const final = messages.at(-1);
      assert.equal(final.id, 'p1');
      assert.ok(final.result.structuredContent.dataModels.length > 0);
      for (const m of messages.slice(0, -1)) {
        assert.equal(m.method, 'notifications/progress');
        assert.equal(m.params.progressToken, 'tok-1');
      }
    });
  });
});

describe('many clients at once', () => {
  it('answers every call of concurrent HTTP and WebSocket clients, then holds no session', async () => {
    const health = async () => (await fetch(`${gw.origin}/healthz`)).json();
    const before = (await health()).sessions;
    const users = ['admin', 'sales', 'auditor'];
    const want = Object.fromEntries(users.map((u) => [u, [...expectedView(gw.config.dir, u).view.keys()].sort()]));
    const clients = 30;
    const calls = 8;
    const results = await Promise.all(
      Array.from({ length: clients }, async (_, i) => {
        const user = users[i % users.length];
        const { client, transport } = i % 2 ? await httpClient(gw, { token: TOKENS[user] }) : await wsClient(gw, { token: TOKENS[user] });
        let ok = 0;
        for (let k = 0; k < calls; k++) {
          const r = await client.callTool({ name: 'get_data_models', arguments: {} });
          const got = r.structuredContent.dataModels.map((m) => m.dataModelId.toLowerCase()).sort();
          assert.deepEqual(got, want[user]);
          ok++;
        }
        if (transport.terminateSession) await transport.terminateSession();
        await client.close();
        return ok;
      }),
    );
    assert.equal(results.reduce((a, b) => a + b, 0), clients * calls);
    // WebSocket sessions end as their connections close, a moment later.
    while ((await health()).sessions !== before) await new Promise((r) => setTimeout(r, 20));
  });
});
