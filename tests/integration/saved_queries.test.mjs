// SPDX-License-Identifier: AGPL-3.0-or-later
// Saved Queries through the official MCP client against the mock upstream
// of tests/upstream/: listing and details per role, every auth kind with
// OAuth token reuse, expiry and refresh on 401, retries on 429/503 for GET
// and none for POST, timeouts, resets, malformed JSON, gzip and chunked
// bodies, redirects, HTTPS with a test CA, refused and forbidden
// addresses, response caps, permission filtering and every input error.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { defaultCredentials, requestsTo, sampleOrder, startMock } from './lib/upstream.mjs';

const creds = {
  erpToken: `erp-${randomUUID()}`,
  logisticsKey: `key-${randomUUID()}`,
  clientId: 'it client',
  clientSecret: `secret:${randomUUID()}`,
  financeUser: 'finance',
  financePassword: `pw-${randomUUID()}`,
};
const env = {
  DATAGATE_SAMPLE_ERP_TOKEN: creds.erpToken,
  DATAGATE_SAMPLE_LOGISTICS_KEY: creds.logisticsKey,
  DATAGATE_SAMPLE_CLIENT_ID: creds.clientId,
  DATAGATE_SAMPLE_CLIENT_SECRET: creds.clientSecret,
  DATAGATE_SAMPLE_FINANCE_USER: creds.financeUser,
  DATAGATE_SAMPLE_FINANCE_PASSWORD: creds.financePassword,
};

let mock;
let config;
let gw;
let closedPort;
const ids = {}; // saved query name -> id

// A port nothing listens on: bound, then closed.
async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

function connector(name, baseUrl, extra = {}) {
  return { id: randomUUID(), name, baseUrl, allowPrivateAddresses: true,
    auth: { type: 'bearer', tokenEnv: 'DATAGATE_SAMPLE_ERP_TOKEN' }, ...extra };
}

const orderFields = [
  { property: 'OrderNumber', path: 'number' },
  { property: 'Status', path: 'status' },
  { property: 'Amount', path: 'total.amount' },
];

function orderQuery(name, conn, extra = {}) {
  return { id: randomUUID(), name, connector: conn, dataModel: 'Orders',
    inputs: [{ name: 'OrderNumber', type: 'String', required: true }],
    request: { path: '/orders/{OrderNumber}' }, resultPath: '$.order', idPath: 'id', fields: orderFields, ...extra };
}

// conf/ with the sample connectors pointed at the mock, plus connectors and
// queries that exercise each failure.
function editConfig(dir) {
  const conns = readJson(path.join(dir, 'connectors.json'));
  for (const c of conns.connectors) {
    c.baseUrl = c.baseUrl.replace('http://127.0.0.1:8091', mock.base);
    if (c.auth.tokenUrl) c.auth.tokenUrl = c.auth.tokenUrl.replace('http://127.0.0.1:8091', mock.base);
  }
  // Failure tests share these connectors: their breakers must stay closed.
  const closed = { breaker: { failures: 1000 } };
  // Calls expected to succeed get seconds to spare on a loaded machine; the
  // one expected to time out (ErpOnce) meets an upstream that never answers.
  const fast = { timeouts: { connectMs: 5000, firstByteMs: 5000, totalMs: 15000 }, retry: { maxAttempts: 3 }, ...closed };
  const https = mock.tlsBase.replace('127.0.0.1', 'localhost');
  conns.connectors.push(
    connector('ErpFast', `${mock.base}/erp`, fast),
    connector('ErpOnce', `${mock.base}/erp`, { timeouts: { firstByteMs: 400, totalMs: 3000 }, retry: { maxAttempts: 1 }, ...closed }),
    connector('ErpBreaker', `${mock.base}/erp`, { retry: { maxAttempts: 1 }, breaker: { failures: 2, cooldownMs: 60000 } }),
    connector('ErpSmall', `${mock.base}/erp`, { maxResponseBytes: 2048 }),
    connector('ErpNoRedirects', `${mock.base}/erp`, { maxRedirects: 0 }),
    connector('ErpHttps', `${https}/erp`, { caFile: mock.pki.ca }),
    connector('ErpUntrusted', `${https}/erp`, { retry: { maxAttempts: 1 } }),
    connector('ErpClosed', `http://127.0.0.1:${closedPort}/erp`, { retry: { maxAttempts: 1 } }),
    connector('ErpPublicOnly', `${mock.base}/erp`, { allowPrivateAddresses: false }),
    connector('ErpNoSecret', `${mock.base}/erp`, { auth: { type: 'bearer', tokenEnv: 'DATAGATE_IT_UNSET_TOKEN' } }),
    connector('LogisticsQueryKey', `${mock.base}/logistics`,
      { auth: { type: 'apiKey', keyEnv: 'DATAGATE_SAMPLE_LOGISTICS_KEY', keyName: 'api_key', in: 'query' } }),
    connector('CatalogFormAuth', `${mock.base}/catalog`, { auth: { type: 'oauth2ClientCredentials',
      tokenUrl: `${mock.base}/oauth/token`, clientIdEnv: 'DATAGATE_SAMPLE_CLIENT_ID',
      clientSecretEnv: 'DATAGATE_SAMPLE_CLIENT_SECRET', clientAuth: 'body', scopes: ['catalog.read'] } }),
  );
  writeJson(path.join(dir, 'connectors.json'), conns);

  const queries = readJson(path.join(dir, 'saved_queries.json'));
  const sample = (name) => queries.savedQueries.find((q) => q.name === name);
  const products = sample('ProductPrices');
  const shipment = sample('TrackShipment');
  queries.savedQueries.push(
    orderQuery('FastOrder', 'ErpFast'),
    orderQuery('OnceOrder', 'ErpOnce'),
    orderQuery('BreakerOrder', 'ErpBreaker'),
    orderQuery('NoRedirectOrder', 'ErpNoRedirects'),
    orderQuery('HttpsOrder', 'ErpHttps'),
    orderQuery('UntrustedOrder', 'ErpUntrusted'),
    orderQuery('ClosedOrder', 'ErpClosed'),
    orderQuery('PublicOnlyOrder', 'ErpPublicOnly'),
    orderQuery('NoSecretOrder', 'ErpNoSecret'),
    { ...sample('SearchOrders'), id: randomUUID(), name: 'FastSearch', connector: 'ErpFast' },
    { ...sample('OpenOrdersByCustomer'), id: randomUUID(), name: 'SmallOrders', connector: 'ErpSmall' },
    { ...shipment, id: randomUUID(), name: 'QueryKeyShipment', connector: 'LogisticsQueryKey' },
    { ...products, id: randomUUID(), name: 'FormAuthProducts', connector: 'CatalogFormAuth' },
    { id: randomUUID(), name: 'TypedInputs', connector: 'SampleErp', dataModel: 'Orders',
      inputs: ['Int', 'Long', 'Double', 'Decimal', 'Boolean', 'Date', 'DateTime', 'Guid'].map((type) => ({ name: `A${type}`, type })),
      request: { path: '/orders', query: { limit: '{AInt}' } }, resultPath: '$.orders[*]', fields: orderFields },
  );
  writeJson(path.join(dir, 'saved_queries.json'), queries);
  for (const q of queries.savedQueries) ids[q.name] = q.id;
}

let tmp;
before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-upstream-'));
  mock = await startMock({ tlsDir: tmp, credentials: creds });
  closedPort = await freePort();
  config = makeConfig({ edit: editConfig });
  gw = await Gateway.start({ config, env });
});
after(async () => {
  await gw?.stop();
  config?.remove();
  await mock?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function withClient(token, fn) {
  const { client, transport } = await httpClient(gw, { token });
  try {
    return await fn(client);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

function structured(result) {
  assert.notEqual(result.isError, true, `tool failed: ${JSON.stringify(result.content)}`);
  const parsed = JSON.parse(result.content[0].text);
  assert.deepEqual(result.structuredContent, parsed);
  return parsed;
}

function errorText(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result.structuredContent)}`);
  return result.content[0].text;
}

function inputs(values) {
  return Object.entries(values).map(([key, value]) => ({ key, value }));
}

async function execute(name, values = {}, { token = TOKENS.admin, properties } = {}) {
  return withClient(token, (client) => client.callTool({ name: 'execute_saved_query',
    arguments: { savedQueryId: ids[name], inputs: inputs(values), ...(properties ? { properties } : {}) } }));
}

function control(body) {
  mock.upstream.control(body);
}

// The order the mock serves for SO-<1000+n>, as the tool maps it.
function mapped(n) {
  const o = sampleOrder(n);
  return { orderNumber: o.number, status: o.status, amount: o.total.amount };
}

// ---- Listing, details and permissions ------------------------------------

describe('listing and details', () => {
  // Which queries a user may use, from the configuration alone.
  function expectedNames(user) {
    const conf = readJson(config.file('datagate.json'));
    const roles = conf.roles.filter((r) => conf.users.find((u) => u.name === user).roles.includes(r.name));
    const models = readJson(config.file('models.json')).models;
    const queries = readJson(config.file('saved_queries.json')).savedQueries;
    return queries.filter((q) => roles.some((r) => (r.savedQueries ?? []).some((s) => s === '*' || s === q.name || s.toLowerCase() === q.id))
      && roles.some((r) => (r.models ?? []).some((g) => g.model === '*' || g.model === q.dataModel
        || g.model === models.find((m) => m.name === q.dataModel)?.id))).map((q) => q.name);
  }

  for (const user of ['admin', 'sales', 'auditor']) {
    it(`get_saved_queries as ${user} lists exactly the queries the role grants`, async () => {
      await withClient(TOKENS[user], async (client) => {
        const r = structured(await client.callTool({ name: 'get_saved_queries', arguments: {} }));
        assert.deepEqual(r.savedQueries.map((q) => q.name), expectedNames(user));
        for (const q of r.savedQueries) {
          assert.match(q.savedQueryId, /^[0-9a-f-]{36}$/);
          assert.equal(typeof q.connector.name, 'string');
          assert.equal(typeof q.dataModel.dataModelId, 'string');
          assert.ok(Array.isArray(q.DeclaredInputs));
        }
      });
    });
  }

  it('gives connector, data model and DeclaredInputs of each query', async () => {
    await withClient(TOKENS.admin, async (client) => {
      const r = structured(await client.callTool({ name: 'get_saved_queries', arguments: {} }));
      const open = r.savedQueries.find((q) => q.name === 'OpenOrdersByCustomer');
      assert.equal(open.connector.name, 'SampleErp');
      assert.equal(open.dataModel.name, 'Orders');
      assert.deepEqual(open.DeclaredInputs.map((i) => [i.name, i.type, i.required, i.default]),
        [['CustomerName', 'String', true, null], ['Status', 'String', false, 'Open'], ['Since', 'Date', false, null], ['Limit', 'Int', false, '25']]);
    });
  });

  it('details list the mapped fields the caller may see', async () => {
    const details = (token) => withClient(token, async (client) => structured(await client.callTool({
      name: 'get_saved_query_details', arguments: { savedQueryId: ids.CustomerCredit } })));
    const admin = await details(TOKENS.admin);
    assert.deepEqual(admin.fields.map((f) => [f.name, f.type]),
      [['Name', 'String'], ['Email', 'String'], ['Region', 'String'], ['CreditLimit', 'Decimal']]);
    const sales = await details(TOKENS.sales);
    assert.deepEqual(sales.fields.map((f) => f.name), ['Name', 'Email', 'Region']);
    assert.equal(sales.requestType, 'REST');
  });

  it('results drop the fields the caller may not see', async () => {
    const admin = structured(await execute('CustomerCredit', { CustomerName: 'Acme' }));
    assert.deepEqual(admin.entities.map((e) => e.properties.creditLimit), [250000]);
    const sales = structured(await execute('CustomerCredit', { CustomerName: 'Acme' }, { token: TOKENS.sales }));
    assert.equal(sales.count, 1);
    assert.deepEqual(Object.keys(sales.entities[0].properties), ['name', 'email', 'region']);
    assert.equal(sales.entities[0].id, admin.entities[0].id);
    const text = errorText(await execute('CustomerCredit', { CustomerName: 'Acme' }, { token: TOKENS.sales, properties: ['CreditLimit'] }));
    assert.match(text, /^Invalid argument 'properties\[0\]': 'CreditLimit' is not a field of Saved Query 'CustomerCredit'/);
  });

  it('a query the caller may not use is reported as unknown', async () => {
    for (const [name, token] of [['RecentPayments', TOKENS.sales], ['LiveOrderStatus', TOKENS.auditor]]) {
      const text = errorText(await execute(name, { OrderNumber: 'SO-1001' }, { token }));
      assert.equal(text, `Invalid argument 'savedQueryId': no Saved Query with id '${ids[name]}'; call get_saved_queries for the valid ids.`);
    }
    const before = mock.upstream.log.length;
    await withClient(TOKENS.sales, async (client) => {
      const r = await client.callTool({ name: 'get_saved_query_details', arguments: { savedQueryId: ids.RecentPayments } });
      assert.match(errorText(r), /no Saved Query with id/);
    });
    assert.equal(mock.upstream.log.length, before, 'nothing reached the upstream');
  });

  it('properties selects fields plus id', async () => {
    const r = structured(await execute('LiveOrderStatus', { OrderNumber: 'SO-1004' }, { properties: ['status', 'id'] }));
    assert.deepEqual(r.entities, [{ id: r.entities[0].id, properties: { status: sampleOrder(4).status } }]);
  });
});

// ---- Authentication ----------------------------------------------------------

describe('connector authentication', () => {
  it('bearer token', async () => {
    const r = structured(await execute('LiveOrderStatus', { OrderNumber: 'SO-1003' }));
    assert.deepEqual(r.entities[0].properties.orderNumber, 'SO-1003');
    const [req] = requestsTo(mock, '/erp/orders/SO-1003');
    assert.equal(req.headers.authorization, `Bearer ${creds.erpToken}`);
    assert.match(req.headers.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
  });

  it('API key in a header and in the query', async () => {
    const h = structured(await execute('TrackShipment', { OrderNumber: 'SO-1005' }));
    assert.equal(h.entities[0].properties.status, 'Shipped');
    const [byHeader] = requestsTo(mock, '/logistics/shipments').filter((r) => r.query.orderNumber === 'SO-1005');
    assert.equal(byHeader.headers['x-api-key'], creds.logisticsKey);
    assert.equal(byHeader.query.api_key, undefined);
    const q = structured(await execute('QueryKeyShipment', { OrderNumber: 'SO-1006' }));
    assert.equal(q.count, 1);
    const [byQuery] = requestsTo(mock, '/logistics/shipments').filter((r) => r.query.orderNumber === 'SO-1006');
    assert.equal(byQuery.query.api_key, creds.logisticsKey);
    assert.equal(byQuery.headers['x-api-key'], undefined);
  });

  it('Basic credentials', async () => {
    const r = structured(await execute('RecentPayments', { OrderNumber: 'SO-1002' }));
    assert.deepEqual(r.entities.map((e) => e.properties.amount), [500, 250.75]);
    const req = requestsTo(mock, '/finance/payments').at(-1);
    assert.equal(req.headers.authorization, `Basic ${Buffer.from(`${creds.financeUser}:${creds.financePassword}`).toString('base64')}`);
  });

  it('OAuth 2.0 client credentials: one token for several calls, form or Basic client auth', async () => {
    control({ reset: true });
    for (let i = 0; i < 3; i++) {
      const r = structured(await execute('ProductPrices', { Category: 'Hardware' }));
      assert.deepEqual(r.entities.map((e) => e.properties.sKU), ['HW-100', 'HW-200']);
    }
    const tokens = requestsTo(mock, '/oauth/token');
    assert.equal(tokens.length, 1, 'the token was cached');
    assert.match(tokens[0].headers.authorization, /^Basic /);
    assert.equal(new URLSearchParams(tokens[0].body).get('scope'), 'catalog.read');
    const graphql = requestsTo(mock, '/catalog/graphql');
    assert.equal(graphql.length, 3);
    assert.deepEqual(JSON.parse(graphql[0].body).variables, { category: 'Hardware', active: true, first: 20 });
    structured(await execute('FormAuthProducts', { ActiveOnly: 'false' }));
    const form = new URLSearchParams(requestsTo(mock, '/oauth/token').at(-1).body);
    assert.equal(form.get('client_id'), creds.clientId);
    assert.equal(form.get('client_secret'), creds.clientSecret);
  });

  it('OAuth: a 401 to a cached token fetches a new one once', async () => {
    structured(await execute('ProductPrices', {}));
    control({ reset: true }); /* forgets the log and every token it issued */
    const r = structured(await execute('ProductPrices', { Category: 'Software' }));
    assert.deepEqual(r.entities.map((e) => e.properties.sKU), ['SW-300']);
    assert.deepEqual(mock.upstream.log.map((q) => q.path), ['/catalog/graphql', '/oauth/token', '/catalog/graphql']);
    control({ revokeTokens: true });
    mock.upstream.credentials = { ...creds, clientSecret: 'changed' };
    const text = errorText(await execute('ProductPrices', {}));
    assert.match(text, new RegExp(`^Saved Query 'ProductPrices' failed: upstream 'SampleCatalog' could not get an OAuth access token: upstream 'SampleCatalog' POST ${mock.base}/oauth/token answered 401`));
    assert.ok(!text.includes(creds.clientSecret), 'the secret stays out of the message');
    mock.upstream.credentials = creds;
  });

  it('OAuth: an expired token is renewed before use', async () => {
    control({ revokeTokens: true, tokenTtl: 1 });
    structured(await execute('ProductPrices', {})); /* gets a token that lives 1 s */
    mock.upstream.log.length = 0;
    await new Promise((r) => setTimeout(r, 1200));
    structured(await execute('ProductPrices', {}));
    assert.deepEqual(mock.upstream.log.map((q) => q.path), ['/oauth/token', '/catalog/graphql'],
      'a new token was fetched and nothing was sent with the expired one');
    control({ reset: true });
  });

  it('a credential missing from the environment is named', async () => {
    const text = errorText(await execute('NoSecretOrder', { OrderNumber: 'SO-1001' }));
    assert.equal(text, "Saved Query 'NoSecretOrder' failed: upstream 'ErpNoSecret' cannot authenticate: the environment variable DATAGATE_IT_UNSET_TOKEN (its bearer token) is not set in the gateway's environment");
  });
});

// ---- Upstream behaviour ----------------------------------------------------------

describe('upstream failures and retries', () => {
  it('retries a GET on 503 and 429, honouring Retry-After', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1010', responses: [{ status: 503, retryAfter: 0 }, { status: 429, retryAfter: 1 }] } });
    const r = structured(await execute('FastOrder', { OrderNumber: 'SO-1010' }));
    assert.deepEqual(r.entities[0].properties, mapped(10));
    const tries = requestsTo(mock, '/erp/orders/SO-1010');
    assert.equal(tries.length, 3);
    assert.ok(tries[2].at - tries[1].at >= 900, 'waited for Retry-After: 1');
  });

  it('does not retry a POST', async () => {
    control({ reset: true, script: { path: '/erp/orders/search', responses: [{ status: 503, retryAfter: 0 }] } });
    const text = errorText(await execute('FastSearch', { MinAmount: '10' }));
    assert.match(text, new RegExp(`^Saved Query 'FastSearch' failed: upstream 'ErpFast' POST ${mock.base}/erp/orders/search answered 503`));
    assert.equal(requestsTo(mock, '/erp/orders/search').length, 1);
    const body = JSON.parse(requestsTo(mock, '/erp/orders/search')[0].body);
    assert.deepEqual(body, { customer: null, minAmount: 10, statuses: ['Open', 'Shipped'] });
  });

  it('gives up after the last attempt and says so', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1011', responses: Array(3).fill({ status: 503, retryAfter: 0, json: { error: 'maintenance' } }) } });
    const text = errorText(await execute('FastOrder', { OrderNumber: 'SO-1011' }));
    assert.match(text, new RegExp(`upstream 'ErpFast' GET ${mock.base}/erp/orders/SO-1011 answered 503 Service Unavailable: .*maintenance`));
    assert.equal(requestsTo(mock, '/erp/orders/SO-1011').length, 3);
  });

  it('the circuit breaker fails calls fast once it opened', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1030', responses: [{ status: 500 }, { status: 500 }] } });
    for (let i = 0; i < 2; i++)
      assert.match(errorText(await execute('BreakerOrder', { OrderNumber: 'SO-1030' })), /answered 500/);
    const text = errorText(await execute('BreakerOrder', { OrderNumber: 'SO-1030' }));
    assert.match(text, /^Saved Query 'BreakerOrder' failed: upstream 'ErpBreaker' GET .*\/erp\/orders\/SO-1030 .*circuit breaker/);
    assert.equal(requestsTo(mock, '/erp/orders/SO-1030').length, 2, 'the third call never reached the upstream');
  });

  it('a slow upstream times out with the phase named', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1012', responses: [{ hang: true }] } });
    const text = errorText(await execute('OnceOrder', { OrderNumber: 'SO-1012' }));
    assert.match(text, /^Saved Query 'OnceOrder' failed: upstream 'ErpOnce' GET .*\/erp\/orders\/SO-1012.*time/i);
  });

  it('a reset connection is retried for a GET, and reported when it persists', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1013', responses: [{ reset: true }] } });
    assert.deepEqual(structured(await execute('FastOrder', { OrderNumber: 'SO-1013' })).entities[0].properties, mapped(13));
    control({ script: { path: '/erp/orders/SO-1014', responses: Array(6).fill({ reset: true }) } });
    const text = errorText(await execute('FastOrder', { OrderNumber: 'SO-1014' }));
    assert.match(text, new RegExp(`^Saved Query 'FastOrder' failed: upstream 'ErpFast' GET ${mock.base}/erp/orders/SO-1014 `));
    assert.match(text, /reset|closed|connection/i);
    assert.ok(requestsTo(mock, '/erp/orders/SO-1014').length >= 3, 'retried up to maxAttempts');
  });

  it('malformed JSON is an error naming the call', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1015', responses: [{ malformed: true }] } });
    const text = errorText(await execute('FastOrder', { OrderNumber: 'SO-1015' }));
    assert.match(text, new RegExp(`^Saved Query 'FastOrder' failed: upstream 'ErpFast' GET ${mock.base}/erp/orders/SO-1015 answered, but the response is not JSON \\(line 1`));
  });

  it('gzip and chunked bodies are decoded', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1016', responses: [{ gzip: true, chunked: true }] } });
    assert.deepEqual(structured(await execute('FastOrder', { OrderNumber: 'SO-1016' })).entities[0].properties, mapped(16));
    control({ script: { path: '/erp/orders/SO-1017', responses: [{ chunked: true }] } });
    assert.deepEqual(structured(await execute('FastOrder', { OrderNumber: 'SO-1017' })).entities[0].properties, mapped(17));
    control({ script: { path: '/erp/orders/SO-1018', responses: [{ gzip: true }] } });
    assert.deepEqual(structured(await execute('FastOrder', { OrderNumber: 'SO-1018' })).entities[0].properties, mapped(18));
  });

  it('redirects are followed, unless the connector forbids them', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1019', responses: [{ redirect: '/erp/orders/SO-1020' }] } });
    assert.deepEqual(structured(await execute('FastOrder', { OrderNumber: 'SO-1019' })).entities[0].properties, mapped(20));
    control({ script: { path: '/erp/orders/SO-1021', responses: [{ redirect: '/erp/orders/SO-1022' }] } });
    const text = errorText(await execute('NoRedirectOrder', { OrderNumber: 'SO-1021' }));
    assert.match(text, /upstream 'ErpNoRedirects' GET .*\/erp\/orders\/SO-1021 answered 302/);
    assert.equal(requestsTo(mock, '/erp/orders/SO-1022').length, 0);
  });

  it('HTTPS with the connector CA, refused without it', async () => {
    assert.deepEqual(structured(await execute('HttpsOrder', { OrderNumber: 'SO-1023' })).entities[0].properties, mapped(23));
    const text = errorText(await execute('UntrustedOrder', { OrderNumber: 'SO-1023' }));
    assert.match(text, /^Saved Query 'UntrustedOrder' failed: upstream 'ErpUntrusted' GET https:\/\/localhost:\d+\/erp\/orders\/SO-1023.*(TLS|certificate)/i);
  });

  it('a refused connection and a forbidden address are named', async () => {
    const refused = errorText(await execute('ClosedOrder', { OrderNumber: 'SO-1001' }));
    assert.match(refused, new RegExp(`^Saved Query 'ClosedOrder' failed: upstream 'ErpClosed' GET http://127.0.0.1:${closedPort}/erp/orders/SO-1001`));
    assert.match(refused, /refused|connect/i);
    const before = mock.upstream.log.length;
    const forbidden = errorText(await execute('PublicOnlyOrder', { OrderNumber: 'SO-1001' }));
    assert.match(forbidden, /^Saved Query 'PublicOnlyOrder' failed: upstream 'ErpPublicOnly'/);
    assert.equal(mock.upstream.log.length, before, 'the private address was not contacted');
  });

  it('a response over the connector cap is refused; large ones are mapped and truncated', async () => {
    const text = errorText(await execute('SmallOrders', { CustomerName: 'Acme', Limit: '50' }));
    assert.match(text, /^Saved Query 'SmallOrders' failed: upstream 'ErpSmall' GET .*\/erp\/orders/);
    const big = structured(await execute('OpenOrdersByCustomer', { CustomerName: 'o', Status: 'Open', Limit: '1500' }));
    assert.equal(big.count, 100);
    assert.equal(big.truncated, true);
    assert.ok(big.entities.every((e) => e.properties.status === 'Open'));
  });

  it('the gateway keeps serving while an upstream hangs, and a cancelled call ends', async () => {
    control({ reset: true, script: { path: '/erp/orders/SO-1024', responses: [{ hang: true }] } });
    await withClient(TOKENS.admin, async (client) => {
      const ac = new AbortController();
      const slow = client.callTool({ name: 'execute_saved_query', arguments: { savedQueryId: ids.LiveOrderStatus,
        inputs: inputs({ OrderNumber: 'SO-1024' }) } }, undefined, { signal: ac.signal });
      const quick = structured(await client.callTool({ name: 'execute_saved_query', arguments: {
        savedQueryId: ids.LiveOrderStatus, inputs: inputs({ OrderNumber: 'SO-1025' }) } }));
      assert.deepEqual(quick.entities[0].properties.orderNumber, 'SO-1025');
      ac.abort();
      await assert.rejects(slow);
    });
    const log = await gw.waitForLog((l) => l.event === 'tool_call' && l.tool === 'execute_saved_query' && l.outcome === 'canceled');
    assert.equal(log.outcome, 'canceled');
  });
});

// ---- Inputs ---------------------------------------------------------------------

describe('input validation', () => {
  const cases = [
    ['an unknown key', 'LiveOrderStatus', { Order: 'SO-1' },
      "Invalid argument 'inputs[0].key': 'Order' is not an input of Saved Query 'LiveOrderStatus'; declared inputs: OrderNumber (String, required)."],
    ['a missing required input', 'OpenOrdersByCustomer', { Limit: '5' },
      "Invalid argument 'inputs': the required input 'CustomerName' (String) is missing; add {\"key\": \"CustomerName\", \"value\": ...}. Declared inputs: CustomerName (String, required), Status (String, default Open), Since (Date), Limit (Int, default 25)."],
    ['an empty required input', 'LiveOrderStatus', { OrderNumber: '' },
      "Invalid argument 'inputs[0].value': input 'OrderNumber' is required and may not be empty."],
  ];
  for (const [what, name, values, want] of cases) {
    it(`refuses ${what}`, async () => {
      assert.equal(errorText(await execute(name, values)), want);
    });
  }

  const typed = [
    ['Int', '2147483648', 'a whole number from -2147483648 to 2147483647, such as 25'],
    ['Long', '1.5', 'a whole number from -9223372036854775808 to 9223372036854775807'],
    ['Double', 'abc', 'a number such as -12.5 or 3e2'],
    ['Decimal', '1e5', 'a decimal number such as 1450.25'],
    ['Boolean', 'yes', 'true or false'],
    ['Date', '2025-02-30', 'a date as YYYY-MM-DD, such as 2025-03-31'],
    ['DateTime', '2025-03-01 10:00', 'a date and time as YYYY-MM-DDTHH:MM:SS with an optional Z or +HH:MM offset'],
    ['Guid', '1234', 'a GUID such as 8a03cbc2-7f01-4d47-bdf0-0755336a3a70'],
  ];
  for (const [type, value, hint] of typed) {
    it(`refuses a value that is not a ${type}`, async () => {
      const text = errorText(await execute('TypedInputs', { [`A${type}`]: value }));
      assert.equal(text, `Invalid argument 'inputs[0].value': '${value}' is not a valid ${type} for input 'A${type}'; expected ${hint}.`);
    });
  }

  it('accepts a value of every type', async () => {
    const r = structured(await execute('TypedInputs', { AInt: '3', ALong: '-9000000000', ADouble: '2.5e3', ADecimal: '10.25',
      ABoolean: 'TRUE', ADate: '2024-02-29', ADateTime: '2025-03-01T10:00:00+01:00', AGuid: randomUUID().toUpperCase() }));
    assert.equal(r.count, 3);
  });

  it('refuses an input given twice and a malformed item', async () => {
    await withClient(TOKENS.admin, async (client) => {
      const dup = await client.callTool({ name: 'execute_saved_query', arguments: { savedQueryId: ids.LiveOrderStatus,
        inputs: [{ key: 'OrderNumber', value: 'SO-1' }, { key: 'orderNumber', value: 'SO-2' }] } });
      assert.equal(errorText(dup), "Invalid argument 'inputs[1].key': input 'OrderNumber' is given twice (also inputs[0]); give each input once.");
      const noValue = await client.callTool({ name: 'execute_saved_query', arguments: { savedQueryId: ids.LiveOrderStatus,
        inputs: [{ key: 'OrderNumber' }] } });
      assert.match(errorText(noValue), /inputs\[0\]/);
      assert.match(errorText(noValue), /value/);
      const badId = await client.callTool({ name: 'execute_saved_query', arguments: { savedQueryId: 'LiveOrderStatus' } });
      assert.match(errorText(badId), /savedQueryId/);
    });
  });
});
