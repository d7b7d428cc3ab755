// SPDX-License-Identifier: AGPL-3.0-or-later
// Values expanded into an upstream URL path stay in their segment: a form
// value or a Saved Query input of "..", ".", "../x" or "" is refused before
// any call, so it can never reach another endpoint of the connector with
// its credentials. The mock upstream records every request it gets.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Gateway, makeConfig, readJson } from './lib/gateway.mjs';
import { startMock } from './lib/upstream.mjs';
import { call, CREDS, ENV, errorText, ORDERS, pointAt, sampleData, structured, values } from './lib/forms.mjs';

let mock;
let config;
let gw;
let liveOrderStatus;

before(async () => {
  mock = await startMock({ credentials: CREDS });
  config = makeConfig({ edit: pointAt(mock.base) });
  gw = await Gateway.start({ config, env: ENV });
  liveOrderStatus = readJson(config.file('saved_queries.json')).savedQueries.find((q) => q.name === 'LiveOrderStatus').id;
});
after(async () => {
  await gw?.stop();
  config?.remove();
  await mock?.close();
});

function liveStatus(orderNumber) {
  return call(gw, 'execute_saved_query', { savedQueryId: liveOrderStatus, inputs: [{ key: 'OrderNumber', value: orderNumber }] });
}

describe('path values', () => {
  it('a save action never sends a form value of ".." into its path', async () => {
    const order = sampleData('Orders').find((o) => o.OrderNumber === 'SO-1003');
    for (const bad of ['..', '.']) {
      mock.upstream.control({ reset: true });
      const r = structured(await call(gw, 'submit_data_entry_form', { dataModelId: ORDERS, id: order.id,
        formValues: values({ OrderNumber: bad, Status: 'Open' }) }));
      assert.equal(mock.upstream.log.length, 0, `nothing reached the upstream: ${JSON.stringify(mock.upstream.log.map((q) => q.path))}`);
      const begin = r.actions[0];
      assert.equal(begin.status, 'failed', JSON.stringify(r.actions[0]));
      assert.match(JSON.stringify(begin), /OrderNumber/);
      assert.match(JSON.stringify(begin), /must not be empty, '\.' or '\.\.'/);
    }
  });

  it('a Saved Query never sends an input that climbs out of its segment', async () => {
    for (const bad of ['../x', '..', '.', 'x/../../y', '..\\x']) {
      mock.upstream.control({ reset: true });
      const text = errorText(await liveStatus(bad));
      assert.match(text, /OrderNumber/, text);
      assert.equal(mock.upstream.log.length, 0, `${bad}: ${JSON.stringify(mock.upstream.log.map((q) => q.path))}`);
    }
  });

  it('an ordinary value with a slash is encoded into one segment', async () => {
    mock.upstream.control({ reset: true });
    await liveStatus('SO-1001/x');
    assert.deepEqual(mock.upstream.log.map((q) => q.rawPath ?? q.path), ['/erp/orders/SO-1001%2Fx']);
  });
});
