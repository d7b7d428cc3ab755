// SPDX-License-Identifier: AGPL-3.0-or-later
// submit_data_entry_form asking the user to confirm through the client
// (elicitation/create), with the official SDK client: a client that
// accepts, declines, cancels or unticks the box, the question's content
// (record, changes, endpoint), nothing stored or sent unless confirmed,
// clients that cannot be asked (no capability, protocol 2025-03-26), the
// WebSocket transport, and server.submitConfirmation always and never.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { Gateway, httpClient, makeConfig, readJson, TOKENS, writeJson, wsClient } from './lib/gateway.mjs';
import { CREDS, CUSTOMERS, ENV, entity, ORDER_LINES, ORDERS, pointAt, sampleData, structured, values } from './lib/forms.mjs';
import { startMock } from './lib/upstream.mjs';

const ELICIT = { elicitation: {} };
let mock;
const gateways = {};
const configs = [];

// A gateway whose server.submitConfirmation is mode (undefined: the default).
async function gatewayWith(mode) {
  const config = makeConfig({
    edit: pointAt(mock.base, (dir) => {
      if (mode === undefined) return;
      const file = `${dir}/datagate.json`;
      const conf = readJson(file);
      conf.server.submitConfirmation = mode;
      writeJson(file, conf);
    }),
  });
  configs.push(config);
  return Gateway.start({ config, env: ENV });
}

before(async () => {
  mock = await startMock({ credentials: CREDS });
  gateways.default = await gatewayWith(undefined);
  gateways.always = await gatewayWith('always');
  gateways.never = await gatewayWith('never');
});
after(async () => {
  for (const gw of Object.values(gateways)) await gw?.stop();
  for (const c of configs) c.remove();
  await mock?.close();
});

// Connects a client (HTTP unless ws), answers every question with answer
// (a function of the request, or null for a client without the
// capability), runs fn and returns the questions asked.
async function asking(gw, answer, fn, { ws = false, version } = {}) {
  const opts = { token: TOKENS.admin, version, capabilities: answer ? ELICIT : undefined };
  const { client } = ws ? await wsClient(gw, opts) : await httpClient(gw, opts);
  const asked = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return answer(req.params);
    });
  }
  try {
    await fn(client);
  } finally {
    await client.close();
  }
  return asked;
}

const submit = (client, args) => client.callTool({ name: 'submit_data_entry_form', arguments: args }, undefined, { timeout: 60000 });
const newCustomer = (name) => ({ dataModelId: CUSTOMERS, system: 'Claude', formValues: values({ Name: name, Region: 'EMEA' }) });

async function customerNamed(gw, name) {
  const { client } = await httpClient(gw);
  try {
    const r = await client.callTool({ name: 'query_entities', arguments: { dataModelId: CUSTOMERS, countOnly: true,
      queryParameterGroups: [{ parameters: [{ operator: 'EqualTo', propertyName: 'Name', value: name }] }] } });
    return structured(r).count;
  } finally {
    await client.close();
  }
}

describe('submit_data_entry_form asks the user when the client can be asked', () => {
  it('accepted: the record is stored and the result says it was confirmed; the question shows record, changes and endpoint', async () => {
    const name = `Confirmed ${randomUUID()}`;
    let result;
    const asked = await asking(gateways.default, () => ({ action: 'accept', content: { confirm: true } }), async (client) => {
      result = structured(await submit(client, newCustomer(name)));
    });
    assert.equal(asked.length, 1);
    assert.match(asked[0].message, /^Create a new Customers record \(submitted by Claude\)\./);
    assert.ok(asked[0].message.includes(`- Name: ${name}\n`), asked[0].message);
    assert.ok(asked[0].message.includes('- Region: EMEA\n'), asked[0].message);
    assert.match(asked[0].message, /no save actions run and no external system is called/);
    assert.equal(asked[0].requestedSchema.properties.confirm.type, 'boolean');
    assert.deepEqual(asked[0].requestedSchema.required, ['confirm']);
    assert.equal(result.status, 'succeeded');
    assert.equal(result.confirmed, true);
    assert.equal((await entity(gateways.default, CUSTOMERS, result.id)).name, name);
  });

  for (const [how, answer, status] of [
    ['declined', { action: 'decline' }, 'declined'],
    ['cancelled', { action: 'cancel' }, 'cancelled'],
    ['accepted with the box unticked', { action: 'accept', content: { confirm: false } }, 'declined'],
    ['answered with an error by the client', new Error('no way to ask the user here'), 'cancelled'],
  ]) {
    it(`${how}: nothing is stored and the result says so`, async () => {
      const name = `Not stored ${randomUUID()}`;
      let result;
      const reply = () => {
        if (answer instanceof Error) throw answer;
        return answer;
      };
      const asked = await asking(gateways.default, reply, async (client) => {
        const r = await submit(client, newCustomer(name));
        assert.notEqual(r.isError, true, JSON.stringify(r.content));
        result = structured(r);
      });
      assert.equal(asked.length, 1);
      assert.equal(result.status, status);
      assert.equal(result.confirmed, false);
      assert.equal(result.dataModelId, CUSTOMERS);
      assert.ok(!('submissionId' in result));
      assert.match(result.message, /nothing was stored or sent/);
      assert.equal(await customerNamed(gateways.default, name), 0);
    });
  }

  it('declined: an order edit names its endpoint and sends nothing upstream', async () => {
    const order = sampleData('Orders').find((o) => o.OrderNumber === 'SO-1002');
    mock.upstream.control({ reset: true });
    let result;
    const asked = await asking(gateways.default, () => ({ action: 'decline' }), async (client) => {
      result = structured(await submit(client, { dataModelId: ORDERS, id: order.id, formValues: values({ Status: 'Open' }) }));
    });
    assert.match(asked[0].message, new RegExp(`^Change the Orders record ${order.id}\\.`));
    assert.ok(asked[0].message.includes('- Status: Open\n'));
    assert.match(asked[0].message, /Save actions of endpoint 'OrderEdit' run against SampleErp \(http:\/\/127\.0\.0\.1:\d+\/erp\)/);
    assert.match(asked[0].message, /Begin Order Edit/);
    assert.equal(result.status, 'declined');
    assert.equal(result.id, order.id);
    assert.deepEqual(mock.upstream.log.filter((q) => q.path.startsWith('/erp/orders/')), []);
    assert.equal((await entity(gateways.default, ORDERS, order.id)).status, order.Status);
  });

  it('declined: the line changes of a childLists call are shown, and nothing is stored or sent', async () => {
    const order = sampleData('Orders').find((o) => o.OrderNumber === 'SO-1019');
    const lines = sampleData('OrderLines').filter((l) => l.Order === order.id);
    mock.upstream.control({ reset: true });
    let result;
    const asked = await asking(gateways.default, () => ({ action: 'decline' }), async (client) => {
      result = structured(await submit(client, { dataModelId: ORDERS, id: order.id, formValues: values({ Status: 'Open' }), childLists: [{
        list: 'OrderLines',
        changes: [
          { id: lines[0].id, formValues: values({ Quantity: lines[0].Quantity + 1 }) },
          { formValues: values({ SKU: 'D-450', Quantity: 2 }) },
          { id: lines[1].id, op: 'remove' },
        ],
      }] }));
    });
    assert.ok(asked[0].message.includes('- OrderLines: 1 line(s) added, 1 changed, 1 removed\n'), asked[0].message);
    assert.equal(result.status, 'declined');
    assert.deepEqual(mock.upstream.log.filter((q) => q.path.startsWith('/erp/orders/')), []);
    assert.equal((await entity(gateways.default, ORDER_LINES, lines[1].id)).quantity, lines[1].Quantity);
  });

  it('over WebSocket too', async () => {
    const name = `Over ws ${randomUUID()}`;
    const asked = await asking(gateways.default, () => ({ action: 'decline' }), async (client) => {
      assert.equal(structured(await submit(client, newCustomer(name))).status, 'declined');
    }, { ws: true });
    assert.equal(asked.length, 1);
    assert.equal(await customerNamed(gateways.default, name), 0);
  });
});

describe('a call canceled while the user decides', () => {
  it('stores nothing, and the late answer is ignored', async () => {
    // Over WebSocket the cancellation reaches the gateway before the answer.
    const name = `Canceled ${randomUUID()}`;
    const controller = new AbortController();
    const asked = await asking(gateways.default, async () => {
      controller.abort();
      await new Promise((resolve) => setImmediate(resolve));
      return { action: 'accept', content: { confirm: true } };
    }, async (client) => {
      await assert.rejects(client.callTool({ name: 'submit_data_entry_form', arguments: newCustomer(name) }, undefined,
        { signal: controller.signal }));
      // A later call on the same connection runs after both messages were read.
      await client.ping();
    }, { ws: true });
    assert.equal(asked.length, 1);
    assert.equal(await customerNamed(gateways.default, name), 0);
  });
});

describe('clients that cannot be asked', () => {
  it('without the capability, or at protocol 2025-03-26, the submission goes ahead as before', async () => {
    for (const [answer, version] of [[null, undefined], [() => ({ action: 'decline' }), '2025-03-26']]) {
      const name = `Unasked ${randomUUID()}`;
      const asked = await asking(gateways.default, answer, async (client) => {
        // 2025-03-26 has no structuredContent: the text holds the result.
        const reply = await submit(client, newCustomer(name));
        assert.notEqual(reply.isError, true, JSON.stringify(reply.content));
        const r = JSON.parse(reply.content[0].text);
        assert.equal(r.status, 'succeeded');
        assert.ok(!('confirmed' in r));
      }, { version });
      assert.equal(asked.length, 0);
      assert.equal(await customerNamed(gateways.default, name), 1);
    }
  });

  it('submitConfirmation always refuses them, storing nothing', async () => {
    const name = `Refused ${randomUUID()}`;
    await asking(gateways.always, null, async (client) => {
      const r = await submit(client, newCustomer(name));
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, /submitConfirmation is always.*Nothing was stored or sent\./s);
    });
    assert.equal(await customerNamed(gateways.always, name), 0);
    const asked = await asking(gateways.always, () => ({ action: 'accept', content: { confirm: true } }), async (client) => {
      assert.equal(structured(await submit(client, newCustomer(name))).confirmed, true);
    });
    assert.equal(asked.length, 1);
  });

  it('submitConfirmation never does not ask', async () => {
    const name = `Never asked ${randomUUID()}`;
    const asked = await asking(gateways.never, () => ({ action: 'decline' }), async (client) => {
      assert.equal(structured(await submit(client, newCustomer(name))).status, 'succeeded');
    });
    assert.equal(asked.length, 0);
    assert.equal(await customerNamed(gateways.never, name), 1);
  });
});
