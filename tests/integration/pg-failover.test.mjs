// SPDX-License-Identifier: AGPL-3.0-or-later
// A PostgreSQL failover under a submission workload (the PostgreSQL pass of
// scripts/test: DG_TEST_DATABASE set; it needs the server binaries of
// PG_BIN, default /usr/lib/postgresql/15/bin). scripts/pg-test-server
// start-pair makes a primary and a synchronous streaming standby of its
// own; two gateways run on the libpq multi-host URI with
// target_session_attrs=read-write. Clients submit Customers records, each
// with its idempotency key, and a save tree (one POST to the mock upstream
// naming the key) runs for each create; a client retries a failed call
// with the same key, as a real one would. Midway the primary is stopped at
// once (-m immediate) and the standby promoted. Afterwards, on the new
// primary: every acknowledged submission exists exactly once (its record
// and its submission row), no key's tree ran twice, and both gateways,
// never restarted, serve calls again.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';

import { Gateway, makeConfig, readJson, SOURCE_DIR, TEST_DATABASE, writeJson } from './lib/gateway.mjs';
import { requestsTo, startMock } from './lib/upstream.mjs';
import { call, CREDS, CUSTOMERS, ENV, pointAt, structured, values } from './lib/forms.mjs';
import { psql } from './lib/pg.mjs';

const run = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const SCRIPT = path.join(SOURCE_DIR, 'scripts/pg-test-server');

const CLIENTS = 4;
const FAIL_OVER_AFTER = 12; // acknowledged submissions before the failover
const AFTER = 12; // and after it, by the promoted standby
const PER_CLIENT_MAX = 500;
const MAX_ATTEMPTS = 400; // of one submission, 50 ms apart

function skipReason() {
  if (TEST_DATABASE === '') return 'runs in the PostgreSQL pass only: DG_TEST_DATABASE names no server (scripts/test sets it)';
  for (const tool of ['initdb', 'pg_ctl', 'pg_basebackup', 'psql']) {
    if (!fs.existsSync(path.join(PG_BIN, tool))) return `needs the PostgreSQL server binaries: ${path.join(PG_BIN, tool)} is missing (set PG_BIN)`;
  }
  return false;
}
const skip = skipReason();

// A create of Customers runs a save tree of one action: POST /erp/echo/{Name}.
function registerCustomers(dir) {
  const file = path.join(dir, 'endpoints.json');
  const doc = readJson(file);
  doc.endpoints.push({
    id: '2d7e0b54-8a3f-4c61-9e0d-5f1b7c3a9eff',
    name: 'CustomerRegister',
    description: 'Registers a new customer with the ERP.',
    dataModel: 'Customers',
    connector: 'SampleErp',
    save: {
      type: 'EndpointSave', title: 'Register Customer', operations: ['Create'],
      request: { method: 'POST', path: '/echo/{Name}', body: { name: '{Name}' } },
    },
  });
  writeJson(file, doc);
}

let mock;
let dir;
let config;
let standbyUri;
const gws = [];

before(async () => {
  if (skip) return;
  mock = await startMock({ credentials: CREDS });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-failover-'));
  const { stdout } = await runScript('start-pair');
  const uri = stdout.trim();
  const ports = [...uri.matchAll(/127\.0\.0\.1:(\d+)/g)].map((m) => m[1]);
  standbyUri = `postgresql://postgres@127.0.0.1:${ports[1]}/postgres`;
  config = makeConfig({ edit: pointAt(mock.base, registerCustomers) });
  for (let i = 0; i < 2; i++) gws.push(await Gateway.start({ config, env: ENV, args: ['--database', uri] }));
});
after(async () => {
  for (const gw of gws) await gw.stop();
  config?.remove();
  await mock?.close();
  if (dir) {
    await runScript('stop');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// One submission, sent again with the same key after any failure (a tool
// error or a transport one) until it is acknowledged.
async function submitUntilAcknowledged(key, n, stats) {
  const args = { dataModelId: CUSTOMERS, system: 'Copilot', idempotencyKey: key, formValues: values({ Name: key }) };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    let result;
    try {
      result = await call(gws[(n + attempt) % 2], 'submit_data_entry_form', args);
    } catch {
      result = null;
    }
    if (result && result.isError !== true) return structured(result);
    stats.failed++;
    await sleep(50);
  }
  assert.fail(`${key} was never acknowledged`);
}

describe('a PostgreSQL primary failing over to its synchronous standby', { skip }, () => {
  it('loses and duplicates no acknowledged submission, and the gateways reconnect by themselves', async (t) => {
    const tag = randomUUID().slice(0, 8);
    const acks = new Map();
    const stats = { failed: 0, before: 0, after: 0 };
    let phase = 'before';
    let wanted;
    const reached = new Promise((resolve) => (wanted = resolve));
    const client = async (c) => {
      for (let i = 0; phase !== 'after' || stats.after < AFTER; i++) {
        assert.ok(i < PER_CLIENT_MAX, 'the workload ends');
        const key = `fo-${tag}-${c}-${i}`;
        const ack = await submitUntilAcknowledged(key, c + i, stats);
        acks.set(key, ack);
        if (phase !== 'during') stats[phase]++;
        if (acks.size === FAIL_OVER_AFTER) wanted();
      }
    };
    const clients = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    await Promise.race([reached, clients]); // clients ends first only when one failed
    phase = 'during';
    await runScript('promote');
    phase = 'after';
    await clients;

    assert.ok(stats.before >= FAIL_OVER_AFTER, 'submissions acknowledged by the first primary');
    assert.ok(stats.after >= AFTER, 'submissions acknowledged by the promoted standby');
    // The promoted standby is the primary now.
    assert.deepEqual(psql(standbyUri, 'SELECT pg_is_in_recovery()'), [['f']]);
    const rows = new Map(psql(standbyUri, `SELECT s.idempotency_key, count(DISTINCT s.id), count(c.id), min(c.id)
      FROM "_dg_submissions" s LEFT JOIN "Customers" c ON c."Name" = s.idempotency_key
      WHERE s.idempotency_key LIKE 'fo-${tag}-%' GROUP BY 1`).map(([k, ...r]) => [k, r]));
    const records = new Map(psql(standbyUri, `SELECT "Name", count(*) FROM "Customers"
      WHERE "Name" LIKE 'fo-${tag}-%' GROUP BY 1`));
    for (const [key, ack] of acks) {
      assert.deepEqual(rows.get(key), ['1', '1', ack.id], `${key}: one submission row and one record`);
      assert.equal(records.get(key), '1', `${key}: one record`);
      const trees = requestsTo(mock, `/erp/echo/${key}`, 'POST').length;
      assert.ok(trees <= 1, `${key}: the save tree ran ${trees} times`);
      if (ack.status === 'succeeded') assert.equal(trees, 1, `${key}: succeeded with its tree run once`);
    }
    // Neither gateway was restarted, and each serves again once its next
    // connection attempt comes (a gateway whose last attempt found the
    // standby still read-only waits its back-off before the next one).
    for (const gw of gws) {
      assert.equal(gw.exit, null);
      const key = `fo-${tag}-last-${gw.pid}`;
      const r = structured(await callWhenReachable(gw, 'submit_data_entry_form', {
        dataModelId: CUSTOMERS, idempotencyKey: key, formValues: values({ Name: key }),
      }));
      assert.equal(r.replayed, false);
      assert.equal(r.status, 'succeeded');
    }
    const statuses = {};
    for (const ack of acks.values()) {
      const what = `${ack.status}${ack.replayed ? ' (replayed)' : ''}`;
      statuses[what] = (statuses[what] ?? 0) + 1;
    }
    t.diagnostic(`${stats.before} acknowledged before the failover, ${stats.after} after; ${stats.failed} calls retried; ${JSON.stringify(statuses)}`);
  });
});

// The call's result, called again while the gateway says the database
// cannot be reached, for up to RECONNECT_MS: the pool's back-off between
// attempts is at most a few seconds.
const RECONNECT_MS = 15000;
async function callWhenReachable(gw, name, args) {
  const end = Date.now() + RECONNECT_MS;
  for (;;) {
    const r = await call(gw, name, args);
    const text = r.isError === true ? (r.content?.[0]?.text ?? '') : '';
    if (!text.includes('cannot be reached') || Date.now() > end) return r;
    await sleep(100);
  }
}

function runScript(cmd) {
  return run('bash', [SCRIPT, cmd, path.join(dir, 'pg')], { env: { ...process.env, PG_BIN } });
}
