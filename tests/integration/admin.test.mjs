// SPDX-License-Identifier: AGPL-3.0-or-later
// The admin API under /admin/api/ and the page's static files: sign-in
// and the administration role, the configuration with its version, checks
// of a change as --check-config makes them, the atomic save with the
// previous version kept, the reload, and the refusal of a stale version.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Gateway, TOKENS, makeConfig, readJson, runBinary } from './lib/gateway.mjs';

const webDir = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-admin-web-'));
fs.mkdirSync(path.join(webDir, 'assets'));
fs.writeFileSync(path.join(webDir, 'index.html'), '<!doctype html><title>admin page</title>');
fs.writeFileSync(path.join(webDir, 'assets', 'app-1.js'), 'console.log(1)');
fs.writeFileSync(path.join(webDir, '.secret'), 'hidden');

async function api(gw, method, what, { token = TOKENS.admin, body, headers = {} } = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  if (body !== undefined && !h['Content-Type']) h['Content-Type'] = 'application/json';
  const res = await fetch(`${gw.origin}/admin/api/${what}`, {
    method,
    headers: h,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, etag: res.headers.get('etag'), body: await res.json() };
}

const version = (etag) => etag.replace(/"/g, '');

describe('admin API', () => {
  let conf;
  let gw;
  before(async () => {
    conf = makeConfig({ server: { adminWebDir: webDir } });
    gw = await Gateway.start({ config: conf });
  });
  after(async () => {
    await gw?.stop();
    conf?.remove();
  });

  test('info needs no token and says whether OAuth is configured', async () => {
    const r = await api(gw, 'GET', 'info', { token: null });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.oauth, { enabled: false, issuer: null });
  });

  test('config: 401 without a token, 403 for a role without administration', async () => {
    const none = await api(gw, 'GET', 'config', { token: null });
    assert.equal(none.status, 401);
    for (const token of [TOKENS.sales, TOKENS.auditor]) {
      const r = await api(gw, 'GET', 'config', { token });
      assert.equal(r.status, 403);
      assert.match(r.body.error, /administration/);
    }
    const put = await api(gw, 'PUT', 'config', {
      token: TOKENS.sales,
      body: { files: { 'endpoints.json': readJson(conf.file('endpoints.json')) } },
      headers: { 'If-Match': '"x"' },
    });
    assert.equal(put.status, 403);
  });

  test('config: the files, their version and the Session Values of each action', async () => {
    const r = await api(gw, 'GET', 'config');
    assert.equal(r.status, 200);
    assert.equal(r.etag, `"${r.body.version}"`);
    assert.match(r.body.version, /^[0-9a-f]{32}$/);
    assert.equal(r.body.ok, true);
    assert.deepEqual(r.body.files['endpoints.json'], readJson(conf.file('endpoints.json')));
    assert.deepEqual(Object.keys(r.body.files).sort(), [
      'connectors.json',
      'endpoints.json',
      'models.json',
      'saved_queries.json',
    ]);
    // The root runs before its extraction: nothing reaches it.
    const own = r.body.scopes.OrderEdit.places[0];
    assert.equal(own.parent, null);
    assert.deepEqual(own.steps[0].sessionValues, []);
    const commit = own.steps.find((s) => s.path === '/endpoints/0/save/actions/1');
    assert.deepEqual(
      commit.sessionValues.map((v) => [v.insert, v.origin]),
      [['{SESSION:CalculatedOrderId}', 'header']],
    );
    // The child reads the list values as session values and the parent's
    // header values of its run as {SESSION:Order.Name}.
    const child = r.body.scopes.OrderLineEdit.places.find((p) => p.parent === 'OrderEdit');
    assert.equal(child.list, 'OrderLines');
    assert.deepEqual(child.steps[0].sessionValues.map((v) => v.insert).sort(), [
      '{SESSION:LineItemId}',
      '{SESSION:Order.CalculatedOrderId}',
    ]);
  });

  test('check: a change is checked as --check-config checks files, nothing is written', async () => {
    const before = fs.readFileSync(conf.file('endpoints.json'), 'utf8');
    const doc = readJson(conf.file('endpoints.json'));
    doc.endpoints[0].save.actions[1].request.path = '/orders/{SESSION:Nope}/commit.json';
    const bad = await api(gw, 'POST', 'check', { body: { files: { 'endpoints.json': doc } } });
    assert.equal(bad.status, 200);
    assert.equal(bad.body.ok, false);
    const e = bad.body.errors.find((x) => x.path === '/endpoints/0/save/actions/1/request/path');
    assert.ok(e, JSON.stringify(bad.body.errors));
    assert.equal(e.file, 'endpoints.json');
    assert.match(e.message, /\{SESSION:Nope\}/);
    assert.equal(fs.readFileSync(conf.file('endpoints.json'), 'utf8'), before);

    const fine = readJson(conf.file('endpoints.json'));
    fine.endpoints[0].save.title = 'Begin The Edit';
    const ok = await api(gw, 'POST', 'check', { body: { files: { 'endpoints.json': fine } } });
    assert.equal(ok.body.ok, true);
    assert.deepEqual(ok.body.errors, []);
    assert.equal(ok.body.scopes.OrderEdit.places[0].steps[0].title, 'Begin The Edit');
    assert.equal(fs.readFileSync(conf.file('endpoints.json'), 'utf8'), before);
  });

  test('changes are refused unless JSON from the page origin, of editable files', async () => {
    const doc = readJson(conf.file('endpoints.json'));
    const text = await api(gw, 'POST', 'check', {
      body: JSON.stringify({ files: { 'endpoints.json': doc } }),
      headers: { 'Content-Type': 'text/plain' },
    });
    assert.equal(text.status, 415);
    const foreign = await api(gw, 'POST', 'check', {
      body: { files: { 'endpoints.json': doc } },
      headers: { Origin: 'https://evil.example' },
    });
    assert.equal(foreign.status, 403);
    const own = await api(gw, 'POST', 'check', {
      body: { files: { 'endpoints.json': doc } },
      headers: { Origin: gw.origin },
    });
    assert.equal(own.status, 200);
    const other = await api(gw, 'POST', 'check', { body: { files: { 'datagate.json': {} } } });
    assert.equal(other.status, 400);
    assert.match(other.body.error, /datagate\.json/);
    const notJson = await api(gw, 'POST', 'check', { body: '{' });
    assert.equal(notJson.status, 400);
  });

  test('save: If-Match required, invalid and stale changes write nothing', async () => {
    const file = conf.file('endpoints.json');
    const before = fs.readFileSync(file, 'utf8');
    const cur = await api(gw, 'GET', 'config');
    const doc = readJson(file);
    doc.endpoints[0].save.title = 'Renamed';
    const noMatch = await api(gw, 'PUT', 'config', { body: { files: { 'endpoints.json': doc } } });
    assert.equal(noMatch.status, 428);
    const stale = await api(gw, 'PUT', 'config', {
      body: { files: { 'endpoints.json': doc } },
      headers: { 'If-Match': '"0123456789abcdef0123456789abcdef"' },
    });
    assert.equal(stale.status, 412);
    assert.match(stale.body.error, /changed since you loaded it/);
    assert.equal(stale.body.version, cur.body.version);
    const bad = readJson(file);
    bad.endpoints[0].save.actions[0].extractions[0].modelProperty = 'NoSuchProperty';
    const invalid = await api(gw, 'PUT', 'config', {
      body: { files: { 'endpoints.json': bad } },
      headers: { 'If-Match': cur.etag },
    });
    assert.equal(invalid.status, 422);
    assert.ok(
      invalid.body.errors.some((e) => e.path === '/endpoints/0/save/actions/0/extractions/0/modelProperty'),
      JSON.stringify(invalid.body.errors),
    );
    assert.equal(fs.readFileSync(file, 'utf8'), before);
    assert.equal(fs.existsSync(file + '.prev'), false);
  });

  test('save: written atomically, previous kept, reloaded; the second save of one version is refused', async () => {
    const file = conf.file('endpoints.json');
    const before = fs.readFileSync(file, 'utf8');
    const cur = await api(gw, 'GET', 'config');
    const doc = readJson(file);
    doc.endpoints[0].save.title = 'Begin The Order Edit';
    const reloads = gw.logs.filter((l) => l.event === 'reloaded').length;
    const r = await api(gw, 'PUT', 'config', {
      body: { files: { 'endpoints.json': doc } },
      headers: { 'If-Match': cur.etag },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.notEqual(r.body.version, cur.body.version);
    assert.equal(r.etag, `"${r.body.version}"`);
    assert.deepEqual(readJson(file), doc);
    assert.equal(fs.readFileSync(file + '.prev', 'utf8'), before);
    assert.equal(r.body.scopes.OrderEdit.places[0].steps[0].title, 'Begin The Order Edit');
    await gw.waitForLogs((l) => l.event === 'reloaded', reloads + 1);
    const check = await runBinary(['--check-config', conf.dir]);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    const now = await api(gw, 'GET', 'config');
    assert.equal(version(now.etag), r.body.version);

    // A second editor still holding the old version.
    doc.endpoints[0].save.title = 'Someone Else';
    const second = await api(gw, 'PUT', 'config', {
      body: { files: { 'endpoints.json': doc } },
      headers: { 'If-Match': cur.etag },
    });
    assert.equal(second.status, 412);
    assert.equal(readJson(file).endpoints[0].save.title, 'Begin The Order Edit');
  });

  test('methods and unknown API paths', async () => {
    const r = await api(gw, 'DELETE', 'config');
    assert.equal(r.status, 405);
    const missing = await api(gw, 'GET', 'nothing');
    assert.equal(missing.status, 404);
  });

  test('the page: index, assets, nothing outside the directory', async () => {
    for (const p of ['/admin', '/admin/', '/admin/index.html']) {
      const res = await fetch(gw.origin + p);
      assert.equal(res.status, 200, p);
      assert.match(res.headers.get('content-type'), /^text\/html/);
      assert.match(res.headers.get('content-security-policy'), /default-src 'self'/);
      assert.match(await res.text(), /admin page/);
    }
    const js = await fetch(gw.origin + '/admin/assets/app-1.js');
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type'), /^text\/javascript/);
    for (const p of ['/admin/.secret', '/admin/assets/../.secret', '/admin/assets//app-1.js', '/admin/nope.js']) {
      const res = await fetch(gw.origin + p);
      assert.equal(res.status, 404, p);
    }
    const post = await fetch(gw.origin + '/admin/', { method: 'POST' });
    assert.equal(post.status, 405);
    const other = await fetch(gw.origin + '/administrator');
    assert.equal(other.status, 404);
  });
});

after(() => fs.rmSync(webDir, { recursive: true, force: true }));

describe('admin API: test runs', () => {
  let conf, gw, upstream, hits;
  before(async () => {
    const http = await import('node:http');
    hits = [];
    upstream = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        hits.push({ method: req.method, url: req.url, body, auth: req.headers.authorization });
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ calculatedOrder: { id: 'real-9', lineItems: [] } }));
      });
    });
    await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
    const port = upstream.address().port;
    conf = makeConfig({
      edit: (dir) => {
        const cf = path.join(dir, 'connectors.json');
        const c = readJson(cf);
        c.connectors.find((x) => x.name === 'SampleErp').baseUrl = `http://127.0.0.1:${port}/erp`;
        fs.writeFileSync(cf, JSON.stringify(c));
        const ef = path.join(dir, 'endpoints.json');
        const e = readJson(ef);
        e.endpoints[0].save.request.headers = { 'X-Api-Key': 'key-{OrderNumber}', 'X-Trace': 'plain' };
        fs.writeFileSync(ef, JSON.stringify(e));
      },
    });
    gw = await Gateway.start({ config: conf, env: { DATAGATE_SAMPLE_ERP_TOKEN: 'erp-token-secret' } });
  });
  after(async () => {
    await gw?.stop();
    conf?.remove();
    await new Promise((r) => upstream?.close(r));
  });

  const run = (body, token) =>
    api(gw, 'POST', 'test', {
      token,
      body: {
        endpoint: 'OrderEdit',
        operation: 'Update',
        record: { id: 'o-1', values: { OrderNumber: 'SO-7', Status: 'Open' } },
        children: { OrderLines: [{ id: 'l-1', values: { SKU: 'A-1', Quantity: 3 } }] },
        ...body,
      },
    });

  test('a dry run builds every request, masks credentials and sends nothing', async () => {
    const r = await run({
      dryRun: true,
      answers: [{ calculatedOrder: { id: 'c-1', lineItems: [{ id: 'li-1', sku: 'A-1' }] } }],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(hits.length, 0);
    assert.equal(r.body.dryRun, true);
    assert.equal(r.body.succeeded, true, JSON.stringify(r.body.trace));
    assert.deepEqual(
      r.body.requests.map((q) => [q.method, q.url.replace(/^http:\/\/127\.0\.0\.1:\d+/, ''), q.sent]),
      [
        ['POST', '/erp/orders/SO-7/edits/begin.json', false],
        ['POST', '/erp/orders/SO-7/edits/c-1/line_items/li-1.json', false],
        ['POST', '/erp/orders/SO-7/edits/c-1/commit.json', false],
      ],
    );
    assert.equal(r.body.requests[0].headers['X-Api-Key'], '***');
    assert.equal(r.body.requests[0].headers['X-Trace'], 'plain');
    assert.doesNotMatch(JSON.stringify(r.body), /key-SO-7|erp-token-secret/);
    assert.equal(JSON.parse(r.body.requests[1].body).lineItem.quantity, 3);
    const extract = r.body.trace.actions.find((a) => a.title === 'Extract Edit Session');
    assert.deepEqual(extract.sessionValues, { CalculatedOrderId: 'c-1' });
    assert.ok(r.body.changes.some((c) => c.id === 'l-1' && c.values.LineItemId === 'li-1'));
  });

  test('a real run calls the upstream and shows what it answered', async () => {
    const r = await run({ dryRun: false, children: {} });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.dryRun, false);
    assert.deepEqual(
      hits.map((h) => h.url),
      ['/erp/orders/SO-7/edits/begin.json', '/erp/orders/SO-7/edits/real-9/commit.json'],
    );
    assert.equal(hits[0].auth, 'Bearer erp-token-secret');
    assert.equal(r.body.requests[0].sent, true);
    const extract = r.body.trace.actions.find((a) => a.title === 'Extract Edit Session');
    assert.deepEqual(extract.sessionValues, { CalculatedOrderId: 'real-9' });
    assert.equal(r.body.trace.actions[0].upstream.status, 200);
    assert.doesNotMatch(JSON.stringify(r.body), /erp-token-secret/);
  });

  test('bad test requests name the field; a non-admin is refused', async () => {
    const sent = hits.length;
    const noDry = await run({});
    assert.equal(noDry.status, 400);
    assert.match(noDry.body.error, /^dryRun/);
    const unknown = await run({ dryRun: true, endpoint: 'Nope' });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error, /^endpoint/);
    const op = await run({ dryRun: true, operation: 'Delete' });
    assert.equal(op.status, 400);
    assert.match(op.body.error, /^operation/);
    const sales = await run({ dryRun: true }, TOKENS.sales);
    assert.equal(sales.status, 403);
    assert.equal(hits.length, sent);
  });
});

describe('admin API: OAuth and workers', () => {
  test('with OAuth configured, info names the identity provider', async () => {
    const conf = makeConfig({
      edit: (dir) => {
        const file = path.join(dir, 'datagate.json');
        const d = readJson(file);
        d.oauth.enabled = true;
        fs.writeFileSync(file, JSON.stringify(d));
      },
    });
    const gw = await Gateway.start({ config: conf, env: { DATAGATE_JWT_SECRET: 'x'.repeat(40) } });
    try {
      const r = await api(gw, 'GET', 'info', { token: null });
      assert.deepEqual(r.body.oauth, { enabled: true, issuer: 'https://login.example.com/' });
    } finally {
      await gw.stop();
      conf.remove();
    }
  });

  test('with --workers 2 a save reloads every worker', async () => {
    const conf = makeConfig();
    const gw = await Gateway.start({ config: conf, args: ['--workers', '2'], listening: 2 });
    try {
      const cur = await api(gw, 'GET', 'config');
      const doc = readJson(conf.file('endpoints.json'));
      doc.endpoints[0].description = 'saved with two workers';
      const r = await api(gw, 'PUT', 'config', {
        body: { files: { 'endpoints.json': doc } },
        headers: { 'If-Match': cur.etag },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const lines = await gw.waitForLogs((l) => l.event === 'reloaded' && l.worker !== undefined, 2);
      assert.equal(new Set(lines.map((l) => l.worker)).size, 2);
    } finally {
      await gw.stop();
      conf.remove();
    }
  });
});
