// SPDX-License-Identifier: AGPL-3.0-or-later
// Answers that fit: query_entities and lookup_by_keyword keep the whole
// entities that fit the server's maxResultBytes or the smaller budget a
// call gives, say what was left out and how to get it, and never go over
// the budget. Every expectation is the same call's unbudgeted answer.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, writeJson } from './lib/gateway.mjs';
import { startMock } from './lib/upstream.mjs';

const SERVER_LIMIT = 8192;
const DOC = Array.from({ length: 400 }, (_, i) => `Paragraph ${i}: the delivery terms apply to every order.`).join('\n\n');
let mock;
let gw;
let config;
let client;
const ID = {};

before(async () => {
  mock = await startMock();
  mock.upstream.addFile('/files/b/terms.txt', DOC, 'text/plain; charset=utf-8');
  config = makeConfig({
    edit: (dir) => {
      const files = readJson(path.join(dir, 'files.json'));
      files.sources[0].origin = mock.base;
      writeJson(path.join(dir, 'files.json'), files);
      const file = path.join(dir, 'datagate.json');
      const conf = readJson(file);
      conf.server.maxResultBytes = SERVER_LIMIT;
      writeJson(file, conf);
      for (const m of readJson(path.join(dir, 'models.json')).models) ID[m.name] = m.id;
    },
  });
  gw = await Gateway.start({ config });
  ({ client } = await httpClient(gw));
});
after(async () => {
  await client?.close();
  await gw?.stop();
  config?.remove();
  await mock?.close();
});

async function tool(name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.notEqual(r.isError, true, JSON.stringify(r.content));
  return { s: r.structuredContent, bytes: Buffer.byteLength(r.content[0].text) };
}

describe('query_entities within a budget', () => {
  it('keeps whole entities, says what was left out, and continueWith reads on from there', async () => {
    const args = { dataModelId: ID.Orders, paging: { pageNumber: 1, pageSize: 100 } };
    const all = [];
    for (let page = 1; page !== null;) {
      // Unbudgeted, a page of 5 fits the server's limit.
      const { s } = await tool('query_entities', { dataModelId: ID.Orders, paging: { pageNumber: page, pageSize: 5 } });
      assert.equal(s.truncated, undefined);
      all.push(...s.entities.map((e) => e.id));
      page = s.nextPage;
    }
    assert.ok(all.length > 20);
    for (const budget of [2000, 3000]) {
      const seen = [];
      let paging = args.paging;
      let truncations = 0;
      for (let guard = 0; paging && guard < 200; guard++) {
        const { s, bytes } = await tool('query_entities', { ...args, paging, maxResultBytes: budget });
        assert.ok(bytes <= budget, `${bytes} bytes over the budget of ${budget}`);
        assert.ok(s.entities.length > 0);
        seen.push(...s.entities.map((e) => e.id));
        if (s.truncated) {
          truncations++;
          const start = (paging.pageNumber - 1) * paging.pageSize + s.entities.length;
          assert.equal(s.omittedCount, Math.min(paging.pageSize, all.length - (paging.pageNumber - 1) * paging.pageSize) - s.entities.length);
          assert.equal((s.continueWith.pageNumber - 1) * s.continueWith.pageSize, start, 'continueWith starts at the first entity left out');
          assert.ok(s.continueWith.pageSize <= s.entities.length);
          paging = s.continueWith;
        } else {
          paging = s.nextPage ? { pageNumber: s.nextPage, pageSize: paging.pageSize } : null;
        }
      }
      assert.ok(truncations > 0);
      assert.deepEqual(seen, all, `every entity once, in order, with a budget of ${budget}`);
    }
  });

  it('the server limit trims an answer that was refused before', async () => {
    const { s, bytes } = await tool('query_entities', { dataModelId: ID.Orders, paging: { pageSize: 100 } });
    assert.equal(s.truncated, true);
    assert.ok(bytes <= SERVER_LIMIT);
    assert.ok(s.entities.length > 0 && s.omittedCount > 0);
  });

  it('a budget above the server limit is capped by it', async () => {
    const { s, bytes } = await tool('query_entities', { dataModelId: ID.Orders, paging: { pageSize: 100 }, maxResultBytes: 1 << 20 });
    assert.equal(s.truncated, true);
    assert.ok(bytes <= SERVER_LIMIT);
  });
});

describe('lookup_by_keyword within a budget', () => {
  it('keeps the best matches that fit and names the others for get_entities_by_ids', async () => {
    const full = (await tool('lookup_by_keyword', { searchValue: 'so', limit: 100, maxResultBytes: SERVER_LIMIT })).s;
    const { s, bytes } = await tool('lookup_by_keyword', { searchValue: 'so', limit: 100, maxResultBytes: 1500 });
    assert.ok(bytes <= 1500);
    assert.equal(s.truncated, true);
    const total = s.entities.length + s.omittedCount;
    assert.ok(s.entities.length > 0 && s.omittedCount > 0);
    if (!full.truncated) assert.equal(total, full.entities.length);
    // The omitted ones are named best first, as many as the budget has room for.
    assert.ok(s.omitted.length > 0 && s.omitted.length <= s.omittedCount);
    const ids = [...s.entities.map((e) => e.id), ...s.omitted.map((o) => o.id)];
    assert.deepEqual(ids, full.entities.map((e) => e.id).slice(0, ids.length));
    const o = s.omitted[0];
    const fetched = (await tool('get_entities_by_ids', { dataModelId: o.dataModelId, entityIds: [o.id] })).s;
    assert.equal(fetched.entities[0].id, o.id);
  });
});

describe('get_file_text within a budget', () => {
  it('answers shorter chunks that fit, and nextOffset reads the whole text', async () => {
    const url = `${mock.base}/files/b/terms.txt`;
    for (const budget of [undefined, 9000, 4096]) {
      let text = '';
      let offset = 0;
      for (let guard = 0; guard < 500; guard++) {
        const args = budget ? { url, offset, maxResultBytes: budget } : { url, offset };
        const { s, bytes } = await tool('get_file_text', args);
        assert.ok(bytes <= Math.min(budget ?? SERVER_LIMIT, SERVER_LIMIT), `${bytes} bytes`);
        if (s.hasMore) assert.equal(s.shortened, true, 'a chunk of 10000 characters does not fit');
        text += s.text;
        if (!s.hasMore) break;
        offset = s.nextOffset;
      }
      assert.equal(text, DOC, `the whole text with a budget of ${budget}`);
    }
  });
});

describe('get_data_entry_form within a budget', () => {
  it('drops lists of related records first, then whole fields from the end, and names them', async () => {
    const full = (await tool('get_data_entry_form', { dataModelId: ID.Orders, format: 'Json' })).s;
    assert.equal(full.truncated, undefined);
    const withChoices = full.fields.filter((f) => f.choices && f.control !== 'choice').map((f) => f.key);
    assert.ok(withChoices.length > 0, 'the Orders form lists related records');
    const fullBytes = Buffer.byteLength(JSON.stringify(full));
    // Room for the form without its longest list of related records.
    let budget = fullBytes - 1;
    let { s, bytes } = await tool('get_data_entry_form', { dataModelId: ID.Orders, format: 'Json', maxResultBytes: budget });
    assert.ok(bytes <= budget);
    assert.equal(s.truncated, true);
    assert.ok(s.omittedChoices.length >= 1 && s.omittedChoices.every((k) => withChoices.includes(k)));
    assert.deepEqual(s.omittedFields, []);
    for (const k of s.omittedChoices) {
      const f = s.fields.find((x) => x.key === k);
      assert.equal(f.choices, undefined);
      assert.match(f.lookup.hint, /lookup_by_keyword/);
    }
    assert.deepEqual(s.fields.map((f) => f.key), full.fields.map((f) => f.key));
    // A budget so small that fields must go too: they go from the end.
    budget = 3000;
    ({ s, bytes } = await tool('get_data_entry_form', { dataModelId: ID.Orders, format: 'AdaptiveCard', maxResultBytes: budget }));
    assert.ok(bytes <= budget, `${bytes} bytes`);
    assert.ok(s.omittedFields.length > 0);
    assert.deepEqual([...s.fields.map((f) => f.key), ...[...s.omittedFields].reverse()], full.fields.map((f) => f.key));
  });
});

describe('get_entities_by_ids within the server limit', () => {
  it('keeps the entities that fit, in the order asked, and lists the others', async () => {
    const ids = [];
    for (let page = 1; ids.length < 50; page++) {
      const { s } = await tool('query_entities', { dataModelId: ID.Orders, properties: [], paging: { pageNumber: page, pageSize: 25 } });
      ids.push(...s.entities.map((e) => e.id));
      if (!s.hasMore) break;
    }
    const asked = ids.slice(0, 50).reverse();
    const { s, bytes } = await tool('get_entities_by_ids', { dataModelId: ID.Orders, entityIds: asked });
    assert.ok(bytes <= SERVER_LIMIT);
    assert.equal(s.truncated, true);
    assert.deepEqual([...s.entities.map((e) => e.id), ...s.omittedIds], asked);
    const rest = (await tool('get_entities_by_ids', { dataModelId: ID.Orders, entityIds: s.omittedIds.slice(0, 5) })).s;
    assert.deepEqual(rest.entities.map((e) => e.id), s.omittedIds.slice(0, 5));
  });
});
