// SPDX-License-Identifier: AGPL-3.0-or-later
// A mock upstream for datagate's connectors: a small sample API for the
// sample configuration's Saved Queries (ERP orders, shipment tracking, a
// GraphQL product catalog behind OAuth 2.0 client credentials, accounts
// receivable behind Basic), and for tests a control endpoint that makes the
// next requests to a path slow, reset, malformed, chunked, gzipped, 429/503
// with Retry-After, redirected, or hung, and that lets tokens expire.
// It also serves documents for get_file_text: the sample domain's files
// under /files/ (and, behind the ERP's bearer token, /erp/documents/), made
// by documents.mjs, with ETag and Last-Modified, and any a test adds.
//
// Plain node:http and node:https, no framework. Run it alone:
//   node tests/upstream/server.mjs [--host 127.0.0.1] [--port 8091]
//        [--tls-port N --tls-cert cert.pem --tls-key key.pem]
// It prints one JSON line {"event":"listening","port":...,"tlsPort":...}.
// Tests import startUpstream() instead.
import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { createHash, randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';

import { Commerce } from './commerce.mjs';
import { SAMPLE_FILES, sampleFilePath } from './documents.mjs';

// Credentials come from the same variables the sample connectors name.
export function defaultCredentials(env = process.env) {
  return {
    erpToken: env.DATAGATE_SAMPLE_ERP_TOKEN || 'sample-erp-token',
    logisticsKey: env.DATAGATE_SAMPLE_LOGISTICS_KEY || 'sample-logistics-key',
    clientId: env.DATAGATE_SAMPLE_CLIENT_ID || 'sample-client',
    clientSecret: env.DATAGATE_SAMPLE_CLIENT_SECRET || 'sample-client-secret',
    financeUser: env.DATAGATE_SAMPLE_FINANCE_USER || 'finance',
    financePassword: env.DATAGATE_SAMPLE_FINANCE_PASSWORD || 'sample-finance-password',
  };
}

// ---- Sample data -----------------------------------------------------------

const customers = [
  { id: '3f2c8a51-7d4e-4b0a-9c61-0d8e5b7a1c01', name: 'Acme Corporation', region: 'AMER',
    billing: { email: 'ap@acme.example' }, credit: { limit: 250000 } },
  { id: '3f2c8a51-7d4e-4b0a-9c61-0d8e5b7a1c02', name: 'Globex', region: 'EMEA',
    billing: { email: 'finance@globex.example' }, credit: { limit: 120000.5 } },
  { id: '3f2c8a51-7d4e-4b0a-9c61-0d8e5b7a1c03', name: 'Initech', region: 'APAC',
    billing: { email: 'billing@initech.example' }, credit: { limit: '75000' } },
];

const statuses = ['Open', 'Shipped', 'Open', 'Draft', 'Cancelled'];

export function sampleOrder(i) {
  const c = customers[i % customers.length];
  const day = String(1 + (i % 28)).padStart(2, '0');
  return {
    id: i % 2 === 0 ? `ord-${1000 + i}` : `7a1e0c9b-5b2d-4c8e-8f10-${String(1000 + i).padStart(12, '0')}`,
    number: `SO-${1000 + i}`,
    customer: c.name,
    status: statuses[i % statuses.length],
    placedAt: `2025-03-${day}T09:30:00Z`,
    dueDate: `2025-04-${day}`,
    total: { amount: 1000 + i * 12.5, currency: 'EUR' },
    itemCount: 1 + (i % 7),
  };
}

const products = [
  { id: 'gid://catalog/Product/1', sku: 'HW-100', name: 'Rack server', category: 'Hardware', active: true, price: { amount: 4999.0, currency: 'EUR' } },
  { id: 'gid://catalog/Product/2', sku: 'HW-200', name: 'Switch 48p', category: 'Hardware', active: true, price: { amount: 1299.5, currency: 'EUR' } },
  { id: 'gid://catalog/Product/3', sku: 'SW-300', name: 'Backup suite', category: 'Software', active: true, price: { amount: 799, currency: 'EUR' } },
  { id: 'gid://catalog/Product/4', sku: 'HW-050', name: 'Old router', category: 'Hardware', active: false, price: { amount: 99.99, currency: 'EUR' } },
];

// ---- Helpers -------------------------------------------------------------------

function send(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(''));
  });
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function basicPair(header) {
  const m = /^Basic (.+)$/i.exec(header || '');
  if (!m) return null;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const at = text.indexOf(':');
  return at < 0 ? null : [text.slice(0, at), text.slice(at + 1)];
}

// ---- The upstream -------------------------------------------------------------

export class Upstream {
  constructor(credentials = defaultCredentials()) {
    this.credentials = credentials;
    this.reset();
  }

  reset() {
    this.scripts = new Map(); // path -> queue of behaviours
    this.log = [];
    this.tokens = new Map(); // token -> expiry (ms since epoch)
    this.tokenTtl = 3600;
    this.tokenCount = 0;
    this.delayMs = 0; // every answer waits this long
    this.commerce = new Commerce();
    this.files = new Map(); // path -> {body, type, etag}
    this.held = new Map(); // path -> release() of a body held back part way
    for (const f of SAMPLE_FILES) {
      const body = f.make();
      this.addFile(sampleFilePath(f), body, f.type);
      this.addFile(sampleFilePath(f).replace('/files/', '/erp/documents/'), body, f.type);
    }
  }

  // Serves body at path (a path starting with /files/ or /erp/documents/)
  // with this Content-Type (null: none) and any other headers given (a
  // Content-Encoding for a body that is already compressed, say).
  addFile(path, body, type, headers = {}) {
    const etag = `"${createHash('sha1').update(body).digest('hex').slice(0, 16)}"`;
    this.files.set(path, { body: Buffer.isBuffer(body) ? body : Buffer.from(body), type, etag, headers });
  }

  // The next requests to path (without query) get these behaviours in turn.
  script(path, responses) {
    this.scripts.set(path, [...(this.scripts.get(path) || []), ...responses]);
  }

  control(body) {
    if (body.reset) this.reset();
    if (body.script) this.script(body.script.path, body.script.responses || []);
    if (body.tokenTtl !== undefined) this.tokenTtl = body.tokenTtl;
    if (body.revokeTokens) this.tokens.clear();
    if (body.delayMs !== undefined) this.delayMs = body.delayMs;
    return { ok: true };
  }

  async handle(req, res) {
    const url = new URL(req.url, 'http://upstream');
    const body = await readBody(req);
    if (url.pathname.startsWith('/__control')) return this.handleControl(req, res, url, body);
    const entry = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams),
                    headers: req.headers, body, at: Date.now(), aborted: false };
    this.log.push(entry);
    // The client went away before the answer was sent (a cancelled call).
    res.on('close', () => { if (!res.writableFinished) entry.aborted = true; });
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const queue = this.scripts.get(url.pathname);
    const behaviour = queue && queue.length ? queue.shift() : null;
    if (behaviour) return this.behave(behaviour, req, res, url, body);
    return this.route(req, res, url, body);
  }

  handleControl(req, res, url, body) {
    if (req.method === 'GET' && url.pathname === '/__control/log') return send(res, 200, this.log);
    if (req.method === 'POST' && url.pathname === '/__control') return send(res, 200, this.control(parseJson(body) || {}));
    return send(res, 404, { error: 'unknown control path' });
  }

  // One scripted response. Without a status it answers as the API would,
  // shaped by the other fields (delayMs, gzip, chunked).
  async behave(b, req, res, url, body) {
    if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    if (b.hang) return; // never answers; the client's timeout ends it
    if (b.reset) return req.socket.destroy();
    if (b.redirect) {
      res.writeHead(b.status || 302, { Location: b.redirect, 'Content-Length': 0 });
      return res.end();
    }
    if (b.malformed) return send(res, 200, '{"order": {"number": "SO-1001", "status": ');
    if (b.stall) { // the head and the first bytes, then nothing more
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 100000 });
      return res.write('The beginning of a document that never ends. ');
    }
    const headers = { ...(b.headers || {}) };
    if (b.retryAfter !== undefined) headers['Retry-After'] = String(b.retryAfter);
    if (b.status) return this.write(res, b.status, b.json ?? b.body ?? { error: `scripted ${b.status}` }, headers, b);
    return this.route(req, res, url, body, b);
  }

  // Writes a JSON answer, optionally gzipped and/or chunked.
  write(res, status, body, headers = {}, shape = {}) {
    let data = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const out = { 'Content-Type': 'application/json', ...headers };
    if (shape.gzip) {
      data = zlib.gzipSync(data);
      out['Content-Encoding'] = 'gzip';
    }
    if (!shape.chunked) {
      out['Content-Length'] = data.length;
      res.writeHead(status, out);
      return res.end(data);
    }
    res.writeHead(status, out); // no Content-Length: node sends chunks
    const step = Math.max(1, Math.ceil(data.length / 5));
    let at = 0;
    const next = () => {
      if (at >= data.length) return res.end();
      res.write(data.subarray(at, at + step));
      at += step;
      setTimeout(next, 5);
    };
    next();
  }

  // ---- Authentication --------------------------------------------------------

  bearerOk(req) {
    return req.headers.authorization === `Bearer ${this.credentials.erpToken}`;
  }

  apiKeyOk(req, url) {
    const key = req.headers['x-api-key'] || url.searchParams.get('api_key');
    return key === this.credentials.logisticsKey;
  }

  basicOk(req) {
    const pair = basicPair(req.headers.authorization);
    return pair && pair[0] === this.credentials.financeUser && pair[1] === this.credentials.financePassword;
  }

  oauthOk(req) {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization || '');
    const expiry = m && this.tokens.get(m[1]);
    return Boolean(expiry && expiry > Date.now());
  }

  issueToken(req, res, body) {
    const form = new URLSearchParams(body);
    const pair = basicPair(req.headers.authorization);
    const id = pair ? decodeURIComponent(pair[0]) : form.get('client_id');
    const secret = pair ? decodeURIComponent(pair[1]) : form.get('client_secret');
    if (form.get('grant_type') !== 'client_credentials')
      return send(res, 400, { error: 'unsupported_grant_type' });
    if (id !== this.credentials.clientId || secret !== this.credentials.clientSecret)
      return send(res, 401, { error: 'invalid_client' });
    const token = `tok-${++this.tokenCount}-${randomBytes(6).toString('hex')}`;
    this.tokens.set(token, Date.now() + this.tokenTtl * 1000);
    return send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: this.tokenTtl,
                            scope: form.get('scope') || '' });
  }

  // ---- The sample API -----------------------------------------------------------

  route(req, res, url, body, shape = {}) {
    const p = url.pathname;
    const denied = (scheme) => send(res, 401, { error: 'unauthorized' }, { 'WWW-Authenticate': scheme });
    if (p === '/oauth/token' && req.method === 'POST') return this.issueToken(req, res, body);
    if (p.startsWith('/files/') && req.method === 'GET') return this.file(req, res, url, shape);
    if (p.startsWith('/erp/')) {
      if (!this.bearerOk(req)) return denied('Bearer');
      return this.erp(req, res, url, body, shape);
    }
    if (p.startsWith('/logistics/')) {
      if (!this.apiKeyOk(req, url)) return denied('ApiKey');
      return this.logistics(res, url, shape);
    }
    if (p === '/catalog/graphql' && req.method === 'POST') {
      if (!this.oauthOk(req)) return denied('Bearer error="invalid_token"');
      return this.graphql(res, body, shape);
    }
    if (p.startsWith('/finance/')) {
      if (!this.basicOk(req)) return denied('Basic realm="finance"');
      return this.finance(res, url, shape);
    }
    return send(res, 404, { error: `no route for ${req.method} ${p}` });
  }

  // Lets the rest of a held body go (see the hold behaviour).
  release(path) {
    const go = this.held.get(path);
    this.held.delete(path);
    go?.();
  }

  // A document: 304 to a matching If-None-Match; ?type= replaces the
  // Content-Type (empty: none); the hold behaviour sends that many bytes
  // of the body, then the rest once a test calls release(path).
  file(req, res, url, shape = {}) {
    const f = this.files.get(url.pathname);
    if (!f) return send(res, 404, { error: `no document at ${url.pathname}` });
    const headers = { ETag: f.etag, 'Last-Modified': 'Wed, 01 Jan 2025 00:00:00 GMT', ...f.headers };
    if (req.headers['if-none-match'] === f.etag) {
      res.writeHead(304, headers);
      return res.end();
    }
    const type = url.searchParams.has('type') ? url.searchParams.get('type') : f.type;
    if (type) headers['Content-Type'] = type;
    headers['Content-Length'] = f.body.length;
    res.writeHead(200, headers);
    if (!shape.hold) return res.end(f.body);
    res.write(f.body.subarray(0, shape.hold));
    this.held.set(url.pathname, () => res.end(f.body.subarray(shape.hold)));
    res.on('close', () => this.held.delete(url.pathname));
  }

  erp(req, res, url, body, shape) {
    const p = url.pathname;
    if (req.method === 'GET' && p.startsWith('/erp/documents/')) return this.file(req, res, url, shape);
    const one = /^\/erp\/orders\/([^/]+)$/.exec(p);
    if (req.method === 'GET' && one && one[1] !== 'search') {
      const number = decodeURIComponent(one[1]);
      const n = Number(number.replace(/^SO-/, '')) - 1000;
      if (!/^SO-\d+$/.test(number) || n < 0 || n > 100000)
        return this.write(res, 404, { error: `order ${number} not found` }, {}, shape);
      return this.write(res, 200, { order: sampleOrder(n) }, {}, shape);
    }
    if (req.method === 'GET' && p === '/erp/orders') {
      const q = url.searchParams;
      const limit = Math.min(Number(q.get('limit') || 25), 20000);
      const all = Array.from({ length: Math.max(limit * 5, 50) }, (_, i) => sampleOrder(i));
      const orders = all.filter((o) => (!q.get('customer') || o.customer.includes(q.get('customer'))) &&
        (!q.get('status') || o.status === q.get('status')) &&
        (!q.get('since') || o.placedAt.slice(0, 10) >= q.get('since'))).slice(0, limit);
      return this.write(res, 200, { orders }, {}, shape);
    }
    if (req.method === 'POST' && p === '/erp/orders/search') {
      const q = parseJson(body);
      if (!q || typeof q.minAmount !== 'number' || !Array.isArray(q.statuses))
        return this.write(res, 400, { error: 'minAmount must be a number and statuses an array' }, {}, shape);
      const results = Array.from({ length: 30 }, (_, i) => sampleOrder(i)).filter((o) =>
        (q.customer === null || q.customer === undefined || o.customer.includes(q.customer)) &&
        o.total.amount >= q.minAmount && q.statuses.includes(o.status));
      return this.write(res, 200, { results }, {}, shape);
    }
    if (req.method === 'POST' && p.startsWith('/erp/echo/'))
      return this.write(res, 200, { echo: p.slice(10), body: parseJson(body) ?? null }, {}, shape);
    const edit = this.commerce.rest(req.method, p, body, req.headers);
    if (edit) return this.write(res, edit[0], edit[1], {}, shape);
    if (req.method === 'POST' && p === '/erp/graphql') return this.write(res, 200, this.commerce.graphql(body), {}, shape);
    return send(res, 404, { error: `no route for ${req.method} ${p}` });
  }

  logistics(res, url, shape) {
    const number = url.searchParams.get('orderNumber') || '';
    const n = Number(number.replace(/^SO-/, '')) - 1000;
    const shipments = /^SO-\d+$/.test(number) ? [{ orderNumber: number, carrier: 'DHL',
      state: n % 2 ? 'Shipped' : 'Open', eta: `2025-04-${String(1 + (n % 28)).padStart(2, '0')}T12:00:00Z` }] : [];
    return this.write(res, 200, { shipments }, {}, shape);
  }

  graphql(res, body, shape) {
    const q = parseJson(body) || {};
    if (typeof q.query !== 'string' || !q.query.includes('products'))
      return this.write(res, 200, { data: null, errors: [{ message: 'Cannot query field on type Query' }] }, {}, shape);
    const v = q.variables || {};
    const found = products.filter((p) => (v.category == null || p.category === v.category) &&
      (v.active == null || p.active === v.active)).slice(0, typeof v.first === 'number' ? v.first : 20);
    return this.write(res, 200, { data: { products: { edges: found.map((node) => ({ node })) } } }, {}, shape);
  }

  finance(res, url, shape) {
    if (url.pathname === '/finance/customers') {
      const name = (url.searchParams.get('name') || '').toLowerCase();
      return this.write(res, 200, { customers: customers.filter((c) => c.name.toLowerCase().includes(name)) }, {}, shape);
    }
    if (url.pathname === '/finance/payments') {
      const number = url.searchParams.get('order') || '';
      const n = Number(number.replace(/^SO-/, '')) - 1000;
      const payments = /^SO-\d+$/.test(number) ? [
        { id: `pay-${n}-1`, amount: 500, paidOn: '2025-03-20', method: 'Transfer', reference: `RF-${n}-1` },
        { id: `pay-${n}-2`, amount: '250.75', paidOn: '2025-03-27T08:00:00Z', method: 'Card', reference: `RF-${n}-2` },
      ] : [];
      return this.write(res, 200, { payments }, {}, shape);
    }
    return send(res, 404, { error: `no route for ${url.pathname}` });
  }
}

// Starts the upstream on HTTP (and HTTPS when tls {cert, key} is given).
// Returns {upstream, port, tlsPort, close()}.
export async function startUpstream({ host = '127.0.0.1', port = 0, tls, tlsPort = 0, credentials } = {}) {
  const upstream = new Upstream(credentials || defaultCredentials());
  const handler = (req, res) => {
    upstream.handle(req, res).catch((e) => {
      if (!res.headersSent) send(res, 500, { error: String(e) });
    });
  };
  const servers = [http.createServer(handler)];
  if (tls) servers.push(https.createServer({ cert: tls.cert, key: tls.key }, handler));
  const ports = [];
  for (const [i, server] of servers.entries()) {
    server.keepAliveTimeout = 5000;
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(i === 0 ? port : tlsPort, host, resolve);
    });
    ports.push(server.address().port);
  }
  const sockets = new Set();
  for (const server of servers) {
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
  }
  return {
    upstream,
    port: ports[0],
    tlsPort: ports[1],
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}

function option(args, name, fallback) {
  const at = args.indexOf(name);
  return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
}

if (import.meta.url === pathToFileURL(process.argv[1] || '').href) {
  const args = process.argv.slice(2);
  const cert = option(args, '--tls-cert');
  const key = option(args, '--tls-key');
  const started = await startUpstream({
    host: option(args, '--host', '127.0.0.1'),
    port: Number(option(args, '--port', '8091')),
    tlsPort: Number(option(args, '--tls-port', '0')),
    tls: cert && key ? { cert: fs.readFileSync(cert), key: fs.readFileSync(key) } : undefined,
  });
  console.log(JSON.stringify({ event: 'listening', port: started.port, tlsPort: started.tlsPort ?? null }));
  const stop = () => started.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
