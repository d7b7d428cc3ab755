// SPDX-License-Identifier: AGPL-3.0-or-later
// A PostgreSQL connection killed in the middle of a statement (runs when
// DG_TEST_DATABASE names a server; scripts/test does). A session of the
// test holds a lock on the Customers table, so that a query_entities and a
// submit_data_entry_form of the gateway really wait in the server; then
// every session of the gateway (application_name "datagate") is ended with
// pg_terminate_backend. Both calls fail saying that the connection to the
// PostgreSQL database was lost, the gateway keeps running, the next calls
// succeed on new connections, the records saved before are all there, and
// the killed submission's key runs again when retried (its transaction
// was rolled back, so nothing of it was stored).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { databaseArgs, Gateway, makeConfig, TEST_DATABASE } from './lib/gateway.mjs';
import { call, CUSTOMERS, ENV, errorText, structured, values } from './lib/forms.mjs';
import { gatewayBackends, holdLock, psql, until } from './lib/pg.mjs';

const skip = TEST_DATABASE === '' ? 'needs PostgreSQL: DG_TEST_DATABASE names no server (scripts/test sets it)' : false;

let config;
let gw;
let uri;

before(async () => {
  if (skip) return;
  config = makeConfig();
  gw = await Gateway.start({ config, env: ENV });
  uri = databaseArgs(config.dir)[1];
});
after(async () => {
  await gw?.stop();
  config?.remove();
});

function named(name) {
  return {
    dataModelId: CUSTOMERS,
    queryParameterGroups: [{ parameters: [{ propertyName: 'Name', operator: 'StartsWith', value: name }] }],
    paging: { pageNumber: 1, pageSize: 100 },
  };
}

describe('a PostgreSQL connection killed mid-statement', { skip }, () => {
  it('fails the calls on it with a clear error, and the next calls get new connections', async () => {
    const run = `Kept ${randomUUID()}`;
    const saved = [];
    for (let i = 0; i < 5; i++) {
      const r = structured(await call(gw, 'submit_data_entry_form', {
        dataModelId: CUSTOMERS, idempotencyKey: `${run}-${i}`, formValues: values({ Name: `${run} ${i}` }),
      }));
      saved.push(r.id);
    }

    const lock = await holdLock(uri, 'Customers');
    let released = false;
    try {
      const key = `${run}-killed`;
      const killedArgs = { dataModelId: CUSTOMERS, idempotencyKey: key, formValues: values({ Name: `${run} killed` }) };
      const query = call(gw, 'query_entities', named(run));
      const submit = call(gw, 'submit_data_entry_form', killedArgs);
      // Both statements wait on the lock inside the server.
      await until(() => gatewayBackends(uri).filter(([, state, wait]) => state === 'active' && wait === 'Lock').length === 2,
        'two statements of the gateway waiting on the lock');
      const killed = gatewayBackends(uri).map(([pid]) => pid);
      const ended = psql(uri, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'datagate' AND datname = current_database()`);
      assert.ok(ended.length >= 2 && ended.every(([ok]) => ok === 't'));
      await lock.release();
      released = true;

      for (const result of [await query, await submit]) {
        const text = errorText(result);
        assert.match(text, /connection to the PostgreSQL database was lost/);
        assert.match(text, /terminat/); // the server's own reason
      }
      assert.equal(gw.exit, null, 'the gateway still runs');

      // The next calls are served, on connections opened since.
      const found = structured(await call(gw, 'query_entities', named(run)));
      assert.deepEqual(found.entities.map((e) => e.id).sort(), [...saved].sort());
      const retried = structured(await call(gw, 'submit_data_entry_form', killedArgs));
      assert.equal(retried.replayed, false, 'the killed submission stored nothing, so its key runs now');
      const now = gatewayBackends(uri).map(([pid]) => pid);
      assert.ok(now.length > 0);
      assert.ok(now.every((pid) => !killed.includes(pid)), `no killed session serves: ${now} vs ${killed}`);
      const rows = psql(uri, `SELECT count(*) FROM "_dg_submissions" WHERE idempotency_key = '${key}'`);
      assert.equal(rows[0][0], '1');
    } finally {
      if (!released) await lock.release();
    }
  });
});
