// SPDX-License-Identifier: AGPL-3.0-or-later
// Document sources are granted to roles, as models are: by default to the
// roles that may read a model whose entities hold document URLs (Files),
// or to the roles a source lists in files.json. A refusal names only the
// sources the caller may use. The sample roles: admin and sales read
// Files, the auditor does not.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { startMock } from './lib/upstream.mjs';
import { call, CREDS, ENV } from './lib/forms.mjs';
import { SAMPLE_FILES, sampleFilePath } from '../upstream/documents.mjs';

let mock;
const running = [];

before(async () => {
  mock = await startMock({ credentials: CREDS });
});
after(async () => {
  for (const { gw, config } of running) {
    await gw.stop();
    config.remove();
  }
  await mock?.close();
});

async function gateway(roles) {
  const config = makeConfig({
    edit: (dir) => {
      const conns = readJson(path.join(dir, 'connectors.json'));
      for (const c of conns.connectors) c.baseUrl = c.baseUrl.replace('http://127.0.0.1:8091', mock.base);
      writeJson(path.join(dir, 'connectors.json'), conns);
      const files = readJson(path.join(dir, 'files.json'));
      files.sources[0].origin = mock.base;
      if (roles) files.sources[1].roles = roles;
      else delete files.sources[1].roles;
      writeJson(path.join(dir, 'files.json'), files);
    },
  });
  const gw = await Gateway.start({ config, env: ENV });
  running.push({ gw, config });
  return gw;
}

const invoice = () => `${mock.base}${sampleFilePath(SAMPLE_FILES[0])}`;
const erpDocument = () => `${mock.base}/erp/documents/${SAMPLE_FILES[1].id}/x.docx`;

function fileText(gw, url, token) {
  return call(gw, 'get_file_text', { url }, token);
}

describe('document sources and roles', () => {
  it('by default, only roles that may read a model with documents read them', async () => {
    const gw = await gateway(null);
    const sales = await fileText(gw, invoice(), TOKENS.sales);
    assert.notEqual(sales.isError, true, sales.content[0].text);
    assert.match(sales.structuredContent.text, /Invoice SO-1001/);
    const requests = mock.upstream.log.length;
    const auditor = await fileText(gw, invoice(), TOKENS.auditor);
    assert.equal(auditor.isError, true);
    assert.match(auditor.content[0].text, /none of your roles may read documents from any source/);
    assert.doesNotMatch(auditor.content[0].text, /allowed are|erp\/documents/);
    assert.equal(mock.upstream.log.length, requests, 'nothing was fetched for the auditor');
  });

  it('a source with its own roles is refused to others, as if it were not there', async () => {
    const gw = await gateway(['admin']);
    const r = await fileText(gw, erpDocument(), TOKENS.sales);
    assert.equal(r.isError, true);
    const text = r.content[0].text;
    assert.match(text, /is not under an allowed document source; allowed are URLs under /);
    const listed = text.slice(text.indexOf('allowed are'));
    assert.match(listed, new RegExp(`${mock.base}/files/`));
    assert.doesNotMatch(listed, /erp\/documents/, 'the other source is not named');
    const admin = await fileText(gw, erpDocument(), TOKENS.admin);
    assert.doesNotMatch(admin.content[0].text, /not under an allowed document source/);
  });
});
