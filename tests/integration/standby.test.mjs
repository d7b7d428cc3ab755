// SPDX-License-Identifier: AGPL-3.0-or-later
// Reads from a hot standby (server.readDatabase, --read-database): a real
// streaming standby of the PostgreSQL test server (scripts/pg-test-server
// standby-start). While the standby keeps up, the read tools are served
// there: with its replay paused, a record another gateway wrote to the
// primary is not seen, and its pg_stat_activity names the gateway. A
// gateway's own write is read back at once (from the primary). When the
// standby stops, reads fall back to the primary. PostgreSQL pass only.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';

import { databaseArgs, Gateway, makeConfig, SOURCE_DIR, TEST_DATABASE } from './lib/gateway.mjs';
import { call, CUSTOMERS, ENV, structured, values } from './lib/forms.mjs';

const SCRIPT = path.join(SOURCE_DIR, 'scripts/pg-test-server');
const POLLS = 100; // attempts to see the reader use the standby
const POLL_MS = 200;

const skip = TEST_DATABASE === ''
  ? 'needs PostgreSQL: runs in the PostgreSQL pass of scripts/test (DG_TEST_DATABASE)'
  : false;

function psql(uri, sql) {
  const r = spawnSync('psql', [uri, '-qAtc', sql]);
  assert.equal(r.status, 0, `${sql}: ${r.stderr}`);
  return String(r.stdout).trim();
}

async function countNamed(gw, name) {
  const r = structured(await call(gw, 'query_entities', {
    dataModelId: CUSTOMERS,
    countOnly: true,
    queryParameterGroups: [{ parameters: [{ propertyName: 'Name', operator: 'EqualTo', value: name }] }],
  }));
  return r.count;
}

async function create(gw, name) {
  const r = structured(await call(gw, 'submit_data_entry_form', {
    dataModelId: CUSTOMERS, formValues: values({ Name: name }),
  }));
  assert.ok(r.id, `created ${name}`);
}

describe('reads from a hot standby', { skip }, () => {
  let standbyDir;
  let primary; // the test database's URI on the primary
  let standby; // the same database on the standby
  let config;
  let reader; // reads from the standby
  let writer; // on the primary only

  before(async () => {
    config = makeConfig({ server: { readMaxLagMs: 3600000 } });
    primary = databaseArgs(config.dir)[1];
    standbyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-standby-'));
    const started = spawnSync(SCRIPT, ['standby-start', standbyDir, TEST_DATABASE]);
    assert.equal(started.status, 0, `standby-start: ${started.stderr}`);
    const url = new URL(String(started.stdout).trim());
    const db = new URL(primary);
    db.host = url.host;
    standby = db.toString();
    reader = await Gateway.start({ config, env: ENV, args: ['--database', primary, '--read-database', standby] });
    writer = await Gateway.start({ config, env: ENV, args: ['--database', primary] });
  });

  after(async () => {
    await reader?.stop();
    await writer?.stop();
    if (standbyDir) spawnSync(SCRIPT, ['stop', standbyDir]);
    config?.remove();
  });

  const paused = () => psql(standby, 'SELECT pg_wal_replay_pause()');
  const resumed = () => psql(standby, 'SELECT pg_wal_replay_resume()');

  // Pauses the standby's replay and writes a record through the other
  // gateway: when the reader does not see it, its reads come from the
  // standby (the primary has it). Until the reader has found the standby
  // fresh, the replay is resumed and the check made again.
  async function untilServedByStandby() {
    for (let i = 0; i < POLLS; i++) {
      paused();
      const name = `Unreplayed ${randomUUID()}`;
      await create(writer, name);
      assert.equal(await countNamed(writer, name), 1);
      if ((await countNamed(reader, name)) === 0) return name;
      resumed();
      await sleep(POLL_MS);
    }
    assert.fail('the reader never read from the standby');
  }

  it('serve the read tools from the standby while it keeps up', async () => {
    const name = await untilServedByStandby();
    // The record the reader did not see is on the primary, and the reader
    // holds sessions on the standby's copy of the database.
    const db = new URL(standby).pathname.slice(1);
    const sessions = psql(standby,
      `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'datagate' AND datname = '${db}'`);
    assert.ok(Number(sessions) >= 1, 'the gateway is connected to the standby');
    assert.equal(await countNamed(writer, name), 1);
  });

  it('read a gateway\'s own write back at once, from the primary', async () => {
    const name = `Own ${randomUUID()}`;
    await create(reader, name);
    assert.equal(await countNamed(reader, name), 1);
    resumed();
  });

  it('fall back to the primary when the standby stops', async () => {
    const name = await untilServedByStandby();
    const stopped = spawnSync(SCRIPT, ['stop', standbyDir]);
    assert.equal(stopped.status, 0, `stop: ${stopped.stderr}`);
    standbyDir = null;
    assert.equal(await countNamed(reader, name), 1);
    assert.equal(await countNamed(reader, name), 1);
  });
});
