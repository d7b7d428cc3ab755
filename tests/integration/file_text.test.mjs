// SPDX-License-Identifier: AGPL-3.0-or-later
// get_file_text through the official MCP client against the mock upstream
// of tests/upstream/: the sample domain's files of every format (one behind
// a connector's bearer token), chunk boundaries and character offsets over
// multi-byte text, the cache (downloads counted by the mock, 304
// revalidation), the order of streamed progress notifications over SSE and
// WebSocket, every refusal (scheme, origin, private addresses before and
// after a redirect, size, time, format) and hostile documents, which fail
// cleanly while other calls keep being answered.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, writeJson, wsClient } from './lib/gateway.mjs';
import { requestsTo, startMock } from './lib/upstream.mjs';
import { docx, pdf, prose, SAMPLE_FILES, sampleFilePath, zip } from '../upstream/documents.mjs';

const CHUNK = 200;
const MAX_DOWNLOAD = 256 * 1024;
// Long enough that the requests a test expects the cache to answer come
// well within it on a loaded machine; the waits past it are TTL_MS + 300.
const TTL_MS = 2500;
const erpToken = `erp-${randomUUID()}`;

let mock;
let gw;
let client;
let transport;

const chars = (s) => Array.from(s).length;

// ---- Fixtures ------------------------------------------------------------------

// Paragraphs of Latin, accented, CJK and emoji sentences (astral characters
// are one character each but two UTF-16 units in JavaScript).
function multibyteText() {
  const sentences = [
    'Grüße aus Köln, die Lieferung kommt morgen.',
    '納期は十日以内です。',
    'Emoji check 📦🚚 done!',
    'Ça coûte 12,50 € pièce?',
    'Ελληνικά γράμματα εδώ.',
  ];
  const paras = [];
  for (let p = 0; p < 24; p++) {
    const n = 2 + (p % 4);
    paras.push(Array.from({ length: n }, (_, i) => sentences[(p + i) % sentences.length]).join(' '));
  }
  return paras.join('\n\n') + '\n';
}

const MULTIBYTE = multibyteText();
const LONG_PDF_PAGES = Array.from({ length: 12 }, (_, p) => [`Page heading ${p + 1}`, ...prose(p + 7, 6)]);

// A DOCX whose one part inflates far beyond the allowed ratio.
function zipBomb() {
  const para = '<w:p><w:r><w:t>a</w:t></w:r></w:p>';
  const big = `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${para.repeat(240000)}</w:body></w:document>`;
  const rels = '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';
  return zip([{ name: '_rels/.rels', data: rels }, { name: 'word/document.xml', data: big }]);
}

function billionLaughs() {
  const defs = Array.from({ length: 9 }, (_, i) =>
    `<!ENTITY lol${i + 1} "${`&lol${i || ''};`.repeat(10)}">`).join('');
  return `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${defs}]><lolz>&lol9;</lolz>`;
}

const FIXTURES = {
  '/files/t/multibyte.txt': [MULTIBYTE, 'text/plain; charset=utf-8'],
  '/files/t/cached.txt': ['First version of the cached document.\n', 'text/plain'],
  '/files/t/long.pdf': [pdf(LONG_PDF_PAGES), 'application/pdf'],
  '/files/t/held.txt': [prose(3, 120).join(' '), 'text/plain'],
  '/files/t/ws.md': [prose(4, 40).join('\n\n'), 'text/markdown'],
  '/files/t/target.txt': ['Redirect target.\n', 'text/plain'],
  '/files/t/big.txt': ['x'.repeat(MAX_DOWNLOAD + 1000), 'text/plain'],
  '/files/t/image.png': [Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(64, 1)]), 'image/png'],
  '/files/t/blob': [Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 7) % 256)), 'application/octet-stream'],
  '/files/t/bomb.docx': [zipBomb(), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  '/files/t/deep.xml': ['<a>'.repeat(5000) + 'x' + '</a>'.repeat(5000), 'application/xml'],
  '/files/t/laughs.xml': [billionLaughs(), 'application/xml'],
  '/files/t/broken.pdf': ['%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ngarbage\n', 'application/pdf'],
};

function editConfig(dir) {
  const conns = readJson(path.join(dir, 'connectors.json'));
  for (const c of conns.connectors) c.baseUrl = c.baseUrl.replace('http://127.0.0.1:8091', mock.base);
  writeJson(path.join(dir, 'connectors.json'), conns);
  const files = readJson(path.join(dir, 'files.json'));
  files.sources[0].origin = mock.base;
  files.sources.push(
    // Allowed origins whose addresses are private: refused by the client.
    { name: 'Localhost', origin: `http://localhost:${mock.port}`, pathPrefix: '/files/' },
    { name: 'PrivateLiteral', origin: 'http://10.0.0.1' },
    { name: 'LinkLocal', origin: 'http://169.254.169.254' },
  );
  Object.assign(files, { chunkChars: CHUNK, maxDownloadBytes: MAX_DOWNLOAD, downloadTimeoutMs: 4000,
    cacheTtlMs: TTL_MS, maxRedirects: 3 });
  writeJson(path.join(dir, 'files.json'), files);
}

const url = (p) => `${mock.base}${p}`;

async function fileText(args, opts = {}, c = client) {
  return c.callTool({ name: 'get_file_text', arguments: args }, undefined, opts);
}

async function ok(args, opts, c) {
  const r = await fileText(args, opts, c);
  assert.equal(r.isError, undefined, r.content?.[0]?.text);
  return r.structuredContent;
}

async function refused(args) {
  const r = await fileText(args);
  assert.equal(r.isError, true, `expected an error, got ${JSON.stringify(r.structuredContent)}`);
  return r.content[0].text;
}

// Every chunk from offset 0, following nextOffset.
async function allChunks(p) {
  const chunks = [];
  let offset = 0;
  for (;;) {
    const c = await ok({ url: url(p), offset });
    chunks.push(c);
    if (!c.hasMore) return chunks;
    offset = c.nextOffset;
  }
}

const downloads = (p) => requestsTo(mock, p, 'GET').filter((r) => !r.headers['if-none-match']);

before(async () => {
  mock = await startMock({ credentials: { erpToken } });
  for (const [p, [body, type]] of Object.entries(FIXTURES)) mock.upstream.addFile(p, body, type);
  // Small on the wire, far over the limit once inflated.
  mock.upstream.addFile('/files/t/gzip.txt', zlib.gzipSync(Buffer.alloc(4 << 20, 'y')), 'text/plain',
    { 'Content-Encoding': 'gzip' });
  const config = makeConfig({ edit: editConfig });
  gw = await Gateway.start({ config, env: { DATAGATE_SAMPLE_ERP_TOKEN: erpToken } });
  ({ client, transport } = await httpClient(gw));
  await client.listTools(); // so that the client checks results against the output schema
});

after(async () => {
  await client?.close();
  await gw?.stop();
  await mock?.close();
});

// ---- The sample domain -------------------------------------------------------------

describe('the sample files', () => {
  const expected = {
    'SO-1001 invoice.pdf': ['PDF', ['--- Page 1 ---', 'Total due: EUR 11297.50', '--- Page 2 ---\nPayment terms']],
    'SO-1001 delivery note.docx': ['DOCX', ['--- Header ---', 'Item | Quantity\nRack server | 2', '[1] Dock 4', '--- Footer ---']],
    'SO-1002 invoice.pdf': ['PDF', ['Backup suite x 3']],
    'SO-1003 terms.txt': ['TXT', ['10 working days.\nPrices', '納期は十日以内です。']],
    'SO-1004 order export.json': ['JSON', ['"order": "SO-1004"']],
    'SO-1005 quote.pptx': ['PPTX', ['--- Slide 1 ---\nTitle: Quote SO-1005', 'Notes:\nMention the volume discount.', '--- Slide 3 ---']],
    'SO-1006 shipping manifest.xml': ['XML', ['SO-1006 DHL 12.5 Rack server 3.2 Switch 48p']],
    'SO-1007 packing list.csv': ['CSV', ['HW-200,"Switch, 48 ports",1']],
    'SO-1012 notes.md': ['MD', ['# Notes for SO-1012', '**express**']],
    'Price list 2024.html': ['HTML', ['All prices in EUR & without VAT.', 'Rack server | 4999']],
  };

  it('the Files entities point at documents of every supported format under an allowed source', async () => {
    const conf = readJson(path.join(gw.config.dir, 'data/Files.json'));
    const formats = new Set(Object.values(expected).map(([f]) => f));
    assert.deepEqual([...formats].sort(), ['CSV', 'DOCX', 'HTML', 'JSON', 'MD', 'PDF', 'PPTX', 'TXT', 'XML']);
    assert.equal(conf.entities.length, SAMPLE_FILES.length);
    for (const e of conf.entities) {
      assert.ok(expected[e.Name], e.Name);
      assert.match(e.ExternalFileLocation, /^http:\/\/127\.0\.0\.1:8091\/(files|erp\/documents)\//);
    }
  });

  for (const f of SAMPLE_FILES) {
    it(`reads ${f.name}`, async () => {
      const entity = readJson(path.join(gw.config.dir, 'data/Files.json')).entities.find((e) => e.id === f.id);
      const location = entity.ExternalFileLocation.replace('http://127.0.0.1:8091', mock.base);
      const text = (await allChunks(location.slice(mock.base.length))).map((c) => c.text).join('');
      const [format, parts] = expected[f.name];
      const first = await ok({ url: location });
      assert.equal(first.format, format);
      assert.equal(first.offset, 0);
      for (const part of parts) assert.ok(text.includes(part), `${f.name}: ${JSON.stringify(part)} in ${JSON.stringify(text)}`);
      assert.ok(!text.includes('\r'));
    });
  }

  it('leaves out what a reader of the HTML does not see', async () => {
    const f = SAMPLE_FILES.find((s) => s.name.endsWith('.html'));
    const text = (await ok({ url: url(sampleFilePath(f)) })).text;
    for (const hidden of ['track()', 'color:red', 'internal margin']) assert.ok(!text.includes(hidden), hidden);
  });

  it('sends the connector credentials for a connector source, and only there', async () => {
    const f = SAMPLE_FILES.find((s) => s.name.endsWith('.docx'));
    const erpPath = sampleFilePath(f).replace('/files/', '/erp/documents/');
    await ok({ url: url(erpPath) });
    const seen = requestsTo(mock, erpPath, 'GET');
    assert.ok(seen.length >= 1);
    assert.equal(seen.at(-1).headers.authorization, `Bearer ${erpToken}`);
    const plain = requestsTo(mock, sampleFilePath(f), 'GET');
    assert.ok(plain.every((r) => r.headers.authorization === undefined));
  });
});

// ---- Chunks and offsets ---------------------------------------------------------------

describe('chunks', () => {
  it('cover the text in order, at most chunkChars characters each, ending at boundaries', async () => {
    const chunks = await allChunks('/files/t/multibyte.txt');
    assert.ok(chunks.length > 5);
    let offset = 0;
    for (const [i, c] of chunks.entries()) {
      const n = chars(c.text);
      assert.equal(c.offset, offset);
      assert.ok(n <= CHUNK, `chunk ${i} has ${n} characters`);
      assert.equal(c.totalChars, chars(MULTIBYTE));
      const last = i === chunks.length - 1;
      assert.equal(c.hasMore, !last);
      assert.equal(c.nextOffset, last ? null : offset + n);
      if (!last) assert.match(c.text, /(\n|[.!?] |[。！？])$/u, `chunk ${i} ends inside a sentence: ${JSON.stringify(c.text.slice(-20))}`);
      offset += n;
    }
    assert.equal(chunks.map((c) => c.text).join(''), MULTIBYTE);
  });

  it('start at any character offset, counted in characters', async () => {
    const all = Array.from(MULTIBYTE);
    const emoji = all.indexOf('📦');
    for (const at of [1, emoji, emoji + 1, 777, all.length - 3]) {
      const c = await ok({ url: url('/files/t/multibyte.txt'), offset: at });
      assert.equal(c.offset, at);
      assert.equal(c.text, all.slice(at, at + chars(c.text)).join(''));
      assert.ok(chars(c.text) > 0);
    }
    const end = await ok({ url: url('/files/t/multibyte.txt'), offset: all.length });
    assert.deepEqual([end.text, end.hasMore, end.nextOffset], ['', false, null]);
  });

  it('refuse an offset past the end, naming it and the length', async () => {
    const total = chars(MULTIBYTE);
    const text = await refused({ url: url('/files/t/multibyte.txt'), offset: total + 1 });
    assert.match(text, /^Invalid argument 'offset': offset \d+ is past the end of the text: allowed are 0 to \d+/);
    assert.ok(text.includes(String(total)));
    const negative = await refused({ url: url('/files/t/multibyte.txt'), offset: -1 });
    assert.match(negative, /offset/);
  });
});

// ---- The cache ---------------------------------------------------------------------------

describe('the cache', () => {
  it('serves the next chunks without downloading again', async () => {
    const p = '/files/t/long.pdf';
    const first = await ok({ url: url(p) });
    assert.ok(first.hasMore);
    await ok({ url: url(p), offset: first.nextOffset });
    await ok({ url: `${url(p)}#page=2`, offset: first.nextOffset }); /* the fragment is not part of the key */
    assert.equal(downloads(p).length, 1);
  });

  it('revalidates with the ETag once the copy is older than its time to live', async () => {
    const p = '/files/t/cached.txt';
    assert.equal((await ok({ url: url(p) })).text, 'First version of the cached document.\n');
    await ok({ url: url(p) });
    assert.equal(requestsTo(mock, p, 'GET').length, 1);
    await new Promise((r) => setTimeout(r, TTL_MS + 300));
    assert.equal((await ok({ url: url(p) })).text, 'First version of the cached document.\n');
    const seen = requestsTo(mock, p, 'GET');
    assert.equal(seen.length, 2);
    assert.equal(seen[1].headers['if-none-match'], mock.upstream.files.get(p).etag);
    // A changed document (new ETag) is downloaded and read again.
    mock.upstream.addFile(p, 'Second version.\n', 'text/plain');
    await new Promise((r) => setTimeout(r, TTL_MS + 300));
    assert.equal((await ok({ url: url(p) })).text, 'Second version.\n');
  });
});

// ---- Streaming ------------------------------------------------------------------------------

// Progress notifications as the transport receives them, in order. The
// SDK hands them to onprogress a microtask later, so one that arrives in
// the same read as the result would be lost to onprogress: what the
// gateway sent is checked here instead.
function tap(t, onNote) {
  const notes = [];
  const deliver = t.onmessage;
  t.onmessage = (msg, extra) => {
    if (msg.method === 'notifications/progress') {
      notes.push(msg.params);
      onNote?.(msg.params);
    }
    deliver(msg, extra);
  };
  return { notes, untap: () => (t.onmessage = deliver) };
}

// Calls with a progress token; returns the result and the notifications.
async function streamed(args, { c = client, t = transport, onNote } = {}) {
  const { notes, untap } = tap(t, onNote);
  try {
    const result = await ok(args, { onprogress: () => {} }, c);
    return { result, notes };
  } finally {
    untap();
  }
}

function assertStreamOrder(notes, from, total) {
  assert.ok(notes.length > 1, `${notes.length} notifications`);
  let offset = from;
  for (const [i, n] of notes.entries()) {
    const last = i === notes.length - 1;
    assert.equal(n._meta.offset, offset);
    assert.equal(n._meta.hasMore, !last);
    assert.equal(n._meta.nextOffset, last ? null : offset + chars(n.message));
    assert.equal(n.progress, offset + chars(n.message));
    assert.equal(n.total, last ? total : undefined);
    offset += chars(n.message);
  }
  assert.equal(offset, total);
}

describe('streaming', () => {
  it('sends every chunk from the offset as a progress notification, in order', async () => {
    const { result, notes } = await streamed({ url: url('/files/t/long.pdf'), offset: 50 });
    assertStreamOrder(notes, 50, result.totalChars);
    assert.equal(notes[0].message, result.text);
    assert.equal(result.streamedThrough, result.totalChars);
    const whole = (await allChunks('/files/t/long.pdf')).map((c) => c.text).join('');
    assert.equal(notes.map((n) => n.message).join(''), Array.from(whole).slice(50).join(''));
  });

  it('sends the first chunk while the rest of the document is still held back upstream', async () => {
    const p = '/files/t/held.txt';
    mock.upstream.script(p, [{ hold: 4000 }]); // past the 1 KiB that decides the format
    const held = [];
    const { result, notes } = await streamed({ url: url(p) }, { onNote: () => {
      held.push(mock.upstream.held.has(p));
      mock.upstream.release(p);
    } });
    assertStreamOrder(notes, 0, result.totalChars);
    assert.ok(result.totalChars > 8000);
    assert.equal(held[0], true, 'the first chunk came before the rest of the body was sent');
  });

  it('streams over WebSocket too, and from the cache', async () => {
    const ws = await wsClient(gw);
    try {
      const p = '/files/t/ws.md';
      const opts = { c: ws.client, t: ws.transport };
      const fresh = await streamed({ url: url(p) }, opts);
      assertStreamOrder(fresh.notes, 0, fresh.result.totalChars);
      const cached = await streamed({ url: url(p), offset: fresh.result.nextOffset }, opts);
      assertStreamOrder(cached.notes, fresh.result.nextOffset, fresh.result.totalChars);
      assert.equal(downloads(p).length, 1);
    } finally {
      await ws.client.close();
    }
  });
});

// ---- Refusals -------------------------------------------------------------------------------

describe('refusals', () => {
  it('an origin that is not a configured source', async () => {
    const text = await refused({ url: 'https://example.com/files/report.pdf?token=secret' });
    assert.match(text, /^Invalid argument 'url': 'https:\/\/example\.com\/files\/report\.pdf' is not under an allowed document source; allowed are URLs under http:\/\/127\.0\.0\.1:\d+\/files\//);
    assert.ok(!text.includes('secret'));
    assert.match(await refused({ url: url('/other/report.pdf') }), /is not under an allowed document source/);
  });

  it('a scheme that is not allowed', async () => {
    assert.match(await refused({ url: 'file:///etc/passwd' }), /uses the scheme 'file', which is not allowed; allowed schemes are https, http/);
    assert.match(await refused({ url: 'ftp://127.0.0.1/files/a.txt' }), /uses the scheme 'ftp'/);
    assert.match(await refused({ url: 'files/a.txt' }), /is not an absolute URL/);
  });

  it('dot segments that would leave the source', async () => {
    assert.match(await refused({ url: url('/files/../erp/orders/SO-1001') }), /'\.' or '\.\.' path segments/);
  });

  it('private, loopback and link-local addresses, after the name is resolved', async () => {
    const p = '/files/t/target.txt';
    const before = requestsTo(mock, p).length;
    const text = await refused({ url: `http://localhost:${mock.port}${p}` });
    assert.match(text, /host 'localhost' resolves to 127\.0\.0\.1, an address this call may not reach/);
    assert.match(await refused({ url: 'http://10.0.0.1/files/a.pdf' }), /10\.0\.0\.1, an address this call may not reach/);
    assert.match(await refused({ url: 'http://169.254.169.254/latest/meta-data' }), /169\.254\.169\.254, an address this call may not reach/);
    assert.equal(requestsTo(mock, p).length, before);
  });

  it('a redirect to a private address or to an origin that is not allowed', async () => {
    const target = '/files/t/target.txt';
    const before = requestsTo(mock, target).length;
    mock.upstream.script('/files/t/go-private', [{ redirect: `http://localhost:${mock.port}${target}` }]);
    assert.match(await refused({ url: url('/files/t/go-private') }), /resolves to 127\.0\.0\.1, an address this call may not reach/);
    mock.upstream.script('/files/t/go-away', [{ redirect: 'https://example.com/x.pdf' }]);
    assert.match(await refused({ url: url('/files/t/go-away') }),
      /cannot be read: the redirect target 'https:\/\/example\.com\/x\.pdf' is not under an allowed document source/);
    mock.upstream.script('/files/t/go-http', [{ redirect: 'file:///etc/passwd' }]);
    assert.match(await refused({ url: url('/files/t/go-http') }), /redirect/);
    assert.equal(requestsTo(mock, target).length, before);
    // A redirect within the source is followed.
    mock.upstream.script('/files/t/go-fine', [{ redirect: target }]);
    assert.equal((await ok({ url: url('/files/t/go-fine') })).text, 'Redirect target.\n');
  });

  it('too many redirects', async () => {
    const hops = Array.from({ length: 5 }, (_, i) => `/files/t/hop${i}`);
    hops.forEach((h, i) => mock.upstream.script(h, [{ redirect: hops[i + 1] ?? '/files/t/target.txt' }]));
    assert.match(await refused({ url: url(hops[0]) }), /redirected more than 3 times/);
  });

  it('a document over the download limit, declared or decompressed', async () => {
    const limit = new RegExp(`larger than the download limit of ${MAX_DOWNLOAD} bytes`);
    assert.match(await refused({ url: url('/files/t/big.txt') }), limit);
    assert.match(await refused({ url: url('/files/t/gzip.txt') }), limit);
  });

  it('a download slower than its limit', async () => {
    mock.upstream.script('/files/t/stall.txt', [{ stall: true }]);
    assert.match(await refused({ url: url('/files/t/stall.txt') }), /took longer than allowed \(at most 4000 ms\)/);
    mock.upstream.script('/files/t/hang.txt', [{ hang: true }]);
    assert.match(await refused({ url: url('/files/t/hang.txt') }), /took longer than allowed/);
  });

  it('a format that is not supported, naming the supported ones', async () => {
    const supported = 'supported formats are PDF, DOCX, PPTX, HTML, TXT, MD, CSV, JSON, XML';
    const png = await refused({ url: url('/files/t/image.png') });
    assert.ok(png.includes(`the document is a PNG image): ${supported}`), png);
    const blob = await refused({ url: url('/files/t/blob') });
    assert.ok(blob.includes(supported), blob);
  });

  it('a document that is missing upstream', async () => {
    assert.match(await refused({ url: url('/files/t/nothing-here.pdf') }), /answered 404/);
  });
});

// ---- Hostile documents ------------------------------------------------------------------------

describe('hostile documents', () => {
  it('fail with a clear error or a bounded result while other calls are answered', async () => {
    const hostile = {
      '/files/t/bomb.docx': /the DOCX package part word\/document\.xml expands/,
      '/files/t/deep.xml': /nests elements deeper than the limit of 200 levels/,
      '/files/t/broken.pdf': /PDF/,
    };
    const calls = Object.keys(hostile).map((p) => fileText({ url: url(p) }));
    const laughs = fileText({ url: url('/files/t/laughs.xml') });
    const others = Array.from({ length: 4 }, () => client.callTool({ name: 'get_data_models', arguments: {} }));
    const normal = ok({ url: url('/files/t/target.txt') });
    const results = await Promise.all(calls);
    Object.values(hostile).forEach((re, i) => {
      assert.equal(results[i].isError, true);
      assert.match(results[i].content[0].text, /^The document at '.*' cannot be read: /);
      assert.match(results[i].content[0].text, re);
    });
    const bounded = await laughs;
    assert.equal(bounded.isError, undefined);
    assert.ok(bounded.structuredContent.totalChars < 100, 'entities are not expanded');
    for (const r of await Promise.all(others)) assert.equal(r.isError, undefined);
    assert.equal((await normal).text, 'Redirect target.\n');
  });
});

// ---- Shutdown -----------------------------------------------------------------------------------

describe('shutdown', () => {
  it('ends cleanly while a document is being downloaded and extracted', async () => {
    const p = '/files/t/held-at-exit.txt';
    mock.upstream.addFile(p, prose(9, 200).join(' '), 'text/plain');
    mock.upstream.script(p, [{ hold: 4000 }]);
    const config = makeConfig({ server: { drainTimeoutMs: 200 }, edit: editConfig });
    const other = await Gateway.start({ config, env: { DATAGATE_SAMPLE_ERP_TOKEN: erpToken } });
    try {
      const { client: c } = await httpClient(other);
      const pending = c.callTool({ name: 'get_file_text', arguments: { url: url(p) } },
        undefined, { onprogress: () => {} }).catch((e) => e);
      while (!mock.upstream.held.has(p)) await new Promise((r) => setTimeout(r, 20));
      await other.stop(); // exit status 0 and no bug events, or it throws
      await pending;
    } finally {
      mock.upstream.release(p);
      other.kill();
      config.remove();
    }
  });
});
