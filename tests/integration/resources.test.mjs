// SPDX-License-Identifier: AGPL-3.0-or-later
// MCP resources through the official SDK client: the capability as
// declared, resources/list per role (the Data Models each may read), the
// templates, reads of a model, of an entity (equal to get_entities_by_ids)
// and of a document by its URL (the text of get_file_text, with where it
// stops), each with the tools' permissions, and the errors for what does
// not exist or may not be read.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { CONF_DIR, expectedView, Gateway, httpClient, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { startMock } from './lib/upstream.mjs';

const CHUNK = 100;
const DOC = Array.from({ length: 12 }, (_, i) => `Line ${i + 1} of the attached contract text.`).join('\n') + '\n';

let mock;
let config;
let gw;
const clients = {};

before(async () => {
  mock = await startMock();
  mock.upstream.addFile('/files/r/contract.txt', DOC, 'text/plain; charset=utf-8');
  config = makeConfig({
    edit: (dir) => {
      const files = readJson(path.join(dir, 'files.json'));
      files.sources[0].origin = mock.base;
      files.chunkChars = CHUNK;
      writeJson(path.join(dir, 'files.json'), files);
    },
  });
  gw = await Gateway.start({ config });
  for (const user of ['admin', 'sales', 'auditor']) clients[user] = (await httpClient(gw, { token: TOKENS[user] })).client;
});
after(async () => {
  for (const c of Object.values(clients)) await c.close();
  await gw?.stop();
  config?.remove();
  await mock?.close();
});

const data = (model) => readJson(path.join(CONF_DIR, 'data', `${model}.json`)).entities;
const modelId = (name) => readJson(path.join(CONF_DIR, 'models.json')).models.find((m) => m.name === name).id;

async function readFails(client, uri, code = -32002) {
  await assert.rejects(client.readResource({ uri }), (e) => {
    assert.ok(e instanceof McpError, String(e));
    assert.equal(e.code, code, e.message);
    return true;
  });
}

describe('resources', () => {
  it('declares the resources capability without subscriptions or change notices', () => {
    assert.deepEqual(clients.admin.getServerCapabilities().resources, {});
  });

  it('lists the Data Models each user may read', async () => {
    for (const user of ['admin', 'sales', 'auditor']) {
      const { resources } = await clients[user].listResources();
      const { view } = expectedView(CONF_DIR, user);
      const want = [...view.values()].map((v) => v.model);
      assert.deepEqual(resources.map((r) => r.uri), want.map((m) => `datagate://models/${m.id}`), user);
      assert.deepEqual(resources.map((r) => r.name), want.map((m) => m.name));
      assert.ok(resources.every((r) => r.mimeType === 'application/json'));
    }
  });

  it('offers the entity and model templates', async () => {
    const { resourceTemplates } = await clients.admin.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(),
      ['datagate://entities/{dataModelId}/{id}', 'datagate://models/{dataModelId}']);
  });

  it('reads a model as get_data_model_properties answers, with the same permissions', async () => {
    const id = modelId('Customers');
    const { contents } = await clients.sales.readResource({ uri: `datagate://models/${id}` });
    const tool = await clients.sales.callTool({ name: 'get_data_model_properties', arguments: { dataModelId: id } });
    assert.equal(contents.length, 1);
    assert.equal(contents[0].mimeType, 'application/json');
    assert.deepEqual(JSON.parse(contents[0].text), tool.structuredContent);
    assert.ok(!JSON.parse(contents[0].text).properties.some((p) => p.propertyName === 'CreditLimit'));
    await readFails(clients.sales, `datagate://models/${modelId('Payments')}`);
  });

  it('reads an entity exactly as get_entities_by_ids answers for its id', async () => {
    for (const [user, model] of [['admin', 'Orders'], ['sales', 'Customers'], ['auditor', 'Payments']]) {
      const e = data(model)[0];
      const uri = `datagate://entities/${modelId(model)}/${e.id}`;
      const { contents } = await clients[user].readResource({ uri });
      const tool = await clients[user].callTool({ name: 'get_entities_by_ids', arguments: { dataModelId: modelId(model), entityIds: [e.id] } });
      assert.equal(contents[0].uri, uri);
      assert.equal(contents[0].text, tool.content[0].text, `${user} ${model}`);
      assert.equal(JSON.parse(contents[0].text).entities[0].id, e.id);
    }
    const sales = JSON.parse((await clients.sales.readResource({ uri: `datagate://entities/${modelId('Customers')}/${data('Customers')[0].id}` })).contents[0].text);
    assert.ok(!('creditLimit' in sales.entities[0].properties));
  });

  it('refuses what does not exist or may not be read, as not found', async () => {
    const orders = modelId('Orders');
    await readFails(clients.admin, `datagate://entities/${orders}/00000000-0000-4000-8000-000000000000`);
    await readFails(clients.admin, `datagate://entities/${orders}/not-a-guid`);
    await readFails(clients.admin, `datagate://entities/${orders}`);
    await readFails(clients.admin, 'datagate://elsewhere/x');
    await readFails(clients.admin, 'ftp://example.com/x');
    await readFails(clients.auditor, `datagate://entities/${modelId('Customers')}/${data('Customers')[0].id}`);
  });

  it('reads a document by its URL: the text of get_file_text, with where it stops', async () => {
    const uri = `${mock.base}/files/r/contract.txt`;
    const { contents } = await clients.admin.readResource({ uri });
    const tool = (await clients.admin.callTool({ name: 'get_file_text', arguments: { url: uri } })).structuredContent;
    assert.equal(contents[0].mimeType, 'text/plain');
    assert.equal(contents[0].text, tool.text);
    assert.ok(DOC.startsWith(contents[0].text));
    const meta = contents[0]._meta['datagate/document'];
    assert.equal(meta.hasMore, true);
    assert.equal(meta.nextOffset, tool.nextOffset);
    assert.equal(meta.totalChars, DOC.length);
    // A URL outside every configured source is refused as get_file_text refuses it.
    await readFails(clients.admin, 'http://198.51.100.7/files/r/contract.txt');
  });
});
