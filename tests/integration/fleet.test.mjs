// SPDX-License-Identifier: AGPL-3.0-or-later
// Two gateway processes on one database, as a fleet behind a load balancer
// runs them: the configuration's SQLite file, or one PostgreSQL database
// when DG_TEST_DATABASE names a server (scripts/test runs both). The same
// idempotency key sent 100 times at once across both creates one record
// and answers every other call with the first outcome; what one gateway
// writes the other reads.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { Gateway, makeConfig } from './lib/gateway.mjs';
import { call, CUSTOMERS, entity, ENV, structured, values } from './lib/forms.mjs';

const SENDS = 100;

let config;
let gws = [];

before(async () => {
  config = makeConfig();
  gws.push(await Gateway.start({ config, env: ENV }));
  gws.push(await Gateway.start({ config, env: ENV }));
});
after(async () => {
  for (const gw of gws) await gw.stop();
  gws = [];
  config?.remove();
});

async function countNamed(gw, name) {
  const r = structured(await call(gw, 'query_entities', {
    dataModelId: CUSTOMERS,
    countOnly: true,
    queryParameterGroups: [{ parameters: [{ propertyName: 'Name', operator: 'EqualTo', value: name }] }],
  }));
  return r.count;
}

describe('two gateways on one database', () => {
  it('run the same idempotency key once, whichever gateway each call reaches', async () => {
    const key = `fleet-${randomUUID()}`;
    const name = `Fleet ${key}`;
    const args = { dataModelId: CUSTOMERS, system: 'Copilot', idempotencyKey: key, formValues: values({ Name: name }) };
    const results = await Promise.all(
      Array.from({ length: SENDS }, (_, i) => call(gws[i % 2], 'submit_data_entry_form', args)),
    );
    const answers = results.map(structured);
    assert.equal(answers.filter((a) => a.replayed === false).length, 1);
    assert.equal(answers.filter((a) => a.replayed === true).length, SENDS - 1);
    assert.equal(new Set(answers.map((a) => a.id)).size, 1);
    assert.equal(new Set(answers.map((a) => a.submissionId)).size, 1);
    for (const gw of gws) assert.equal(await countNamed(gw, name), 1);
  });

  it('read through one gateway what the other wrote', async () => {
    const name = `Written ${randomUUID()}`;
    const created = structured(await call(gws[0], 'submit_data_entry_form', {
      dataModelId: CUSTOMERS, formValues: values({ Name: name, Region: 'APAC' }),
    }));
    const seen = await entity(gws[1], CUSTOMERS, created.id);
    assert.equal(seen.name, name);
    assert.equal(seen.region, 'APAC');
  });
});
