// SPDX-License-Identifier: AGPL-3.0-or-later
// PostgreSQL from the tests' side, through psql: statements on a server
// the gateways use, a transaction held open (a lock the gateways' statements
// wait on), and the gateways' sessions, which carry application_name
// "datagate".
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

// Runs sql on uri; the rows, each an array of its columns as text.
export function psql(uri, sql) {
  const r = spawnSync('psql', [uri, '-qAtX', '-F', '\t', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
  assert.equal(r.status, 0, `psql: ${sql}: ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => l !== '').map((l) => l.split('\t'));
}

// Polls fn (every 50 ms) until it returns a truthy value, at most tries
// times; fails with what when it never does.
export async function until(fn, what, tries = 400) {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await sleep(50);
  }
  assert.fail(`never happened: ${what}`);
}

// Opens a transaction on uri that holds an ACCESS EXCLUSIVE lock on table
// until release(): every statement of another session that reads or
// writes the table waits for it.
export async function holdLock(uri, table) {
  const child = spawn('psql', [uri, '-qAtX', '-v', 'ON_ERROR_STOP=1'], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('close', resolve));
  child.stdin.write(`BEGIN;\nLOCK TABLE "${table}" IN ACCESS EXCLUSIVE MODE;\n`);
  await until(() => {
    assert.equal(child.exitCode, null, `psql holding the lock exited: ${stderr}`);
    return psql(uri, `SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
      WHERE c.relname = '${table}' AND l.mode = 'AccessExclusiveLock' AND l.granted`).length > 0;
  }, `the lock on ${table}`);
  return {
    async release() {
      child.stdin.end('ROLLBACK;\n');
      await exited;
    },
  };
}

// The server processes of the gateways on uri's database: [pid, state,
// wait_event_type] of each.
export function gatewayBackends(uri) {
  return psql(uri, `SELECT pid, coalesce(state, ''), coalesce(wait_event_type, '')
    FROM pg_stat_activity WHERE application_name = 'datagate' AND datname = current_database()`);
}

