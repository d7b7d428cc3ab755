// SPDX-License-Identifier: AGPL-3.0-or-later
// Documents cannot starve the gateway: every document is parsed in an
// extractor process of its own, with a CPU-time and a memory limit set by
// the operating system and a wall-time limit past which it is killed. The
// hostile documents are made here: an HTML page, an XML document and a DOCX
// with 200,000 attributes on one element (libxml2 compares every attribute
// with the earlier ones), a PDF whose table of objects grows past the
// memory limit and a small PDF whose pages keep MuPDF busy for seconds. Each is refused at its limit while query_entities, which
// runs on the store's threads, is answered meanwhile. A gzip body that
// inflates a thousandfold is decoded a share per loop turn and refused at
// the download limit while the gateway keeps answering.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, writeJson } from './lib/gateway.mjs';
import { startMock } from './lib/upstream.mjs';
import { manyAttributes, slowPdf, sparseObjectsPdf } from '../upstream/documents.mjs';

const CPU_SECONDS = 3;
const MEMORY_BYTES = 512 * 1024 * 1024;

let mock;

const HOSTILE = manyAttributes(200000);

function configWith(files) {
  return makeConfig({
    edit: (dir) => {
      const f = readJson(path.join(dir, 'files.json'));
      f.sources[0].origin = mock.base;
      Object.assign(f, { maxDownloadBytes: 8 << 20, maxConcurrentExtractions: 4, ...files });
      writeJson(path.join(dir, 'files.json'), f);
    },
  });
}

async function start(files) {
  const config = configWith(files);
  const gw = await Gateway.start({ config });
  const { client } = await httpClient(gw);
  return { gw, client, config };
}

async function stop({ gw, client, config }) {
  await client?.close();
  await gw?.stop();
  config?.remove();
}

const url = (p) => `${mock.base}${p}`;

async function fileText(client, p) {
  return client.callTool({ name: 'get_file_text', arguments: { url: url(p) } });
}

function refusal(result) {
  assert.equal(result.isError, true, `expected an error, got ${JSON.stringify(result.structuredContent)}`);
  const text = result.content[0].text;
  assert.match(text, /^The document at '.*' cannot be read: /);
  return text;
}

// A query on the store, which must not wait for any document.
async function queryEntities(client) {
  const models = await client.callTool({ name: 'get_data_models', arguments: {} });
  assert.equal(models.isError, undefined, models.content?.[0]?.text);
  const id = models.structuredContent.dataModels[0].dataModelId;
  const r = await client.callTool({ name: 'query_entities', arguments: { dataModelId: id, paging: { pageSize: 5 } } });
  assert.equal(r.isError, undefined, r.content?.[0]?.text);
  return r.structuredContent;
}

// The extractor processes the gateway runs now: [{pid, environ, limits}].
function extractorsOf(parent) {
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (ppid !== parent || cmd[1] !== '--extract-worker') continue;
      found.push({ pid, environ: fs.readFileSync(`/proc/${pid}/environ`, 'utf8'),
        limits: fs.readFileSync(`/proc/${pid}/limits`, 'utf8') });
    } catch {
      // The process ended while it was being looked at.
    }
  }
  return found;
}

before(async () => {
  mock = await startMock({});
  mock.upstream.addFile('/files/h/attrs.html', HOSTILE.html, 'text/html');
  mock.upstream.addFile('/files/h/attrs-2.html', HOSTILE.html, 'text/html');
  mock.upstream.addFile('/files/h/attrs.xml', HOSTILE.xml, 'application/xml');
  mock.upstream.addFile('/files/h/attrs.docx', HOSTILE.docx,
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
  mock.upstream.addFile('/files/h/objects.pdf', sparseObjectsPdf(5000, 1600), 'application/pdf');
  mock.upstream.addFile('/files/h/slow.pdf', slowPdf(16, 2000000), 'application/pdf');
  mock.upstream.addFile('/files/h/fine.txt', 'A plain document.\n', 'text/plain');
  // 64 KiB on the wire, 64 MiB once inflated.
  mock.upstream.addFile('/files/h/bomb.txt', zlib.gzipSync(Buffer.alloc(64 << 20, 'y'), { level: 9 }),
    'text/plain', { 'Content-Encoding': 'gzip' });
});

after(async () => {
  await mock?.close();
});

describe('extractor processes', () => {
  let g;
  before(async () => {
    g = await start({ extractCpuSeconds: CPU_SECONDS, extractMemoryBytes: MEMORY_BYTES, extractTimeoutMs: 120000 });
  });
  after(async () => stop(g));

  it('refuse each hostile document at its limit while query_entities is answered meanwhile', async () => {
    const expected = {
      '/files/h/attrs.html': new RegExp(`used more than the CPU-time limit of ${CPU_SECONDS} s`),
      '/files/h/attrs-2.html': new RegExp(`used more than the CPU-time limit of ${CPU_SECONDS} s`),
      '/files/h/attrs.xml': /the XML document has an element with more than the limit of 1024 attributes/,
      '/files/h/attrs.docx': /part word\/document\.xml has an element with more than the limit of 1024 attributes/,
      '/files/h/objects.pdf': new RegExp(`needs more than the limit of ${MEMORY_BYTES / 2 / 1048576} MiB of memory`),
      '/files/h/slow.pdf': new RegExp(`used more than the CPU-time limit of ${CPU_SECONDS} s`),
    };
    const pending = new Set(Object.keys(expected));
    const calls = Object.keys(expected).map((p) => fileText(g.client, p).finally(() => pending.delete(p)));
    // Both HTML pages keep a process busy for seconds of CPU; the store's
    // threads are not theirs, so the query does not wait for them.
    const page = await queryEntities(g.client);
    assert.ok(page.entities.length > 0, 'query_entities returned entities');
    assert.ok(pending.has('/files/h/attrs.html') || pending.has('/files/h/attrs-2.html'),
      'query_entities was answered while the HTML pages were still being parsed');
    const results = await Promise.all(calls);
    Object.values(expected).forEach((re, i) => assert.match(refusal(results[i]), re));
    // The gateway goes on reading documents.
    const fine = await fileText(g.client, '/files/h/fine.txt');
    assert.equal(fine.isError, undefined, fine.content?.[0]?.text);
    assert.equal(fine.structuredContent.text, 'A plain document.\n');
  });
});

describe('a gzip bomb', () => {
  let g;
  before(async () => {
    g = await start({});
  });
  after(async () => stop(g));

  it('is refused at the download limit while pings and queries are answered', async () => {
    const calls = Array.from({ length: 4 }, () => fileText(g.client, '/files/h/bomb.txt'));
    const pings = Array.from({ length: 4 }, () => g.client.ping());
    const page = await queryEntities(g.client);
    assert.ok(page.entities.length > 0);
    for (const p of await Promise.all(pings)) assert.deepEqual(p, {});
    for (const r of await Promise.all(calls)) {
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, new RegExp(`is larger than the download limit of ${8 << 20} bytes`));
    }
  });
});

// Waits (polling) until one of the extractor processes of parent has set
// its limits (it is seen first as it starts, before it has read them), or
// done resolves.
async function limitedExtractor(parent, done) {
  // The worker sets its CPU limit last: seeing it, the other limits are set.
  const limited = (x) => /^Max cpu time\s+600\s/m.test(x.limits);
  let ended = false;
  done.finally(() => { ended = true; });
  let seen = [];
  while (!seen.some(limited) && !ended) {
    seen = extractorsOf(parent);
    await new Promise((r) => setTimeout(r, 10));
  }
  return seen.filter(limited);
}

describe('a gateway killed outright', () => {
  it('takes its extractor processes with it', async () => {
    const g = await start({ extractCpuSeconds: 600, extractTimeoutMs: 600000 });
    try {
      const call = fileText(g.client, '/files/h/attrs.html').catch((e) => e);
      const [x] = await limitedExtractor(g.gw.pid, call);
      assert.ok(x, 'an extractor process ran');
      g.gw.kill();
      await g.gw.waitExit();
      // The process is gone (the kernel kills it with its parent), not left
      // parsing for up to its ten minutes of CPU.
      while (fs.existsSync(`/proc/${x.pid}`) && !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${x.pid}/status`, 'utf8')))
        await new Promise((r) => setTimeout(r, 10));
      await call;
    } finally {
      await g.client.close().catch(() => {});
      g.config.remove();
    }
  });
});

describe('the wall-time limit', () => {
  let g;
  before(async () => {
    g = await start({ extractCpuSeconds: 600, extractTimeoutMs: 2000 });
  });
  after(async () => stop(g));

  it('kills the extractor process past it and answers at once', async () => {
    const call = fileText(g.client, '/files/h/attrs.html');
    let answered = false;
    call.finally(() => { answered = true; });
    // The process runs with its limits set and none of the gateway's
    // environment (its tokens are there).
    const seen = await limitedExtractor(g.gw.pid, call);
    assert.equal(seen.length, 1, 'an extractor process ran with its limits');
    assert.match(seen[0].limits, /^Max cpu time\s+600\s+601\s+seconds/m);
    assert.match(seen[0].limits, /^Max core file size\s+0\s+0\s+bytes/m);
    assert.match(fs.readFileSync(`/proc/${g.gw.pid}/environ`, 'utf8'), /DATAGATE_TOKEN_ADMIN=/);
    assert.doesNotMatch(seen[0].environ, /DATAGATE_TOKEN/);
    await queryEntities(g.client);
    assert.equal(answered, false, 'query_entities was answered while the page was being parsed');
    assert.match(refusal(await call), /took longer than the limit of 2000 ms/);
    const fine = await fileText(g.client, '/files/h/fine.txt');
    assert.equal(fine.structuredContent.text, 'A plain document.\n');
  });
});
