// SPDX-License-Identifier: AGPL-3.0-or-later
// A model the caller may not read is answered as if it did not exist: a
// role that may write Orders but not read Customers learns neither the
// name of Customers nor which Customer ids exist through the forms. The
// sample roles, plus one such role.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Gateway, makeConfig, readJson, TOKENS, writeJson } from './lib/gateway.mjs';
import { call, CUSTOMERS, ENV, errorText, ORDERS, sampleData, structured, values } from './lib/forms.mjs';

const CLERK = `it-clerk-${randomUUID()}`;

// The clerk may create and modify Orders, and read nothing else.
function addClerk(dir) {
  const file = path.join(dir, 'datagate.json');
  const conf = readJson(file);
  conf.roles.push({ name: 'clerk', models: [{ model: 'Orders', write: true }], savedQueries: [] });
  conf.users.push({ name: 'clerk', roles: ['clerk'], tokenEnv: 'DATAGATE_TOKEN_CLERK' });
  writeJson(file, conf);
}

let config;
let gw;
before(async () => {
  config = makeConfig({ edit: addClerk });
  gw = await Gateway.start({ config, env: { ...ENV, DATAGATE_TOKEN_CLERK: CLERK } });
});
after(async () => {
  await gw?.stop();
  config?.remove();
});

const existing = sampleData('Customers')[0].id;
const missing = '00000000-0000-4000-8000-0000000000aa';

function createOrder(customer, token) {
  return call(gw, 'submit_data_entry_form', { dataModelId: ORDERS,
    formValues: values({ OrderNumber: `SO-${randomUUID().slice(0, 8)}`, Customer: customer }) }, token);
}

describe('a model hidden from the caller', () => {
  it('is not named, and its ids are not told apart, when a form refers to it', async () => {
    const answers = [];
    for (const customer of [existing, missing]) {
      const r = await createOrder(customer, CLERK);
      const text = JSON.stringify(r);
      assert.doesNotMatch(text, /Customers/, text);
      assert.doesNotMatch(text, new RegExp(CUSTOMERS), text);
      const s = structured(r);
      answers.push([s.status, s.created]);
    }
    assert.deepEqual(answers[0], answers[1], 'the same answer for an existing and a missing id');
  });

  it('shows no target model in the form of a caller who cannot read it', async () => {
    const f = structured(await call(gw, 'get_data_entry_form', { dataModelId: ORDERS, format: 'Json' }, CLERK));
    const customer = f.fields.find((x) => x.key === 'Customer');
    assert.equal(customer.lookup.targetDataModelId ?? null, null);
    assert.doesNotMatch(JSON.stringify(f), new RegExp(CUSTOMERS));
  });

  it('is still checked for a caller who can read it (sales)', async () => {
    const text = errorText(await createOrder(missing, TOKENS.sales));
    assert.match(text, /there is no Customers entity with id '00000000-0000-4000-8000-0000000000aa'/);
    assert.equal(structured(await createOrder(existing, TOKENS.sales)).created, true);
  });
});
