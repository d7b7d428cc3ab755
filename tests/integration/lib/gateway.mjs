// SPDX-License-Identifier: AGPL-3.0-or-later
// Starts the real datagate binary for a test and stops it again, asserting
// a clean exit. Also builds configuration copies with overrides and the MCP
// SDK clients over each transport.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { WsClientTransport } from './ws-transport.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

export const SOURCE_DIR = process.env.DG_SOURCE_DIR ?? path.resolve(here, '../../..');
export const BINARY = process.env.DG_BINARY ?? path.join(SOURCE_DIR, 'build/debug/datagate');
export const CONF_DIR = path.join(SOURCE_DIR, 'conf');

// Fresh tokens per run, so that nothing passes by accident with a token
// that some other environment happens to hold.
const suffix = randomBytes(8).toString('hex');
export const TOKENS = {
  admin: `it-admin-${suffix}`,
  sales: `it-sales-${suffix}`,
  auditor: `it-auditor-${suffix}`,
};

// How long a gateway may take to start or stop; generous because the
// sanitizer build is several times slower.
const START_TIMEOUT_MS = 20000;
const STOP_TIMEOUT_MS = 20000;

// Log events that always mean a bug in the gateway.
const BUG_EVENTS = new Set(['handles_left_open', 'tool_call_ended_twice', 'illegal_state']);

// DG_TEST_DATABASE: the URI of a PostgreSQL server (scripts/pg-test-server)
// to run the gateways on instead of SQLite files. Each configuration
// directory gets a database of its own there, created on first use, so
// that a gateway started again on the same directory finds its data.
export const TEST_DATABASE = process.env.DG_TEST_DATABASE ?? '';

export function databaseArgs(dir, args = []) {
  if (TEST_DATABASE === '' || args.includes('--database')) return [];
  const name = `dg_${createHash('sha1').update(path.resolve(dir)).digest('hex').slice(0, 20)}`;
  const found = spawnSync('psql', [TEST_DATABASE, '-qAtc', `SELECT 1 FROM pg_database WHERE datname = '${name}'`]);
  if (String(found.stdout).trim() !== '1') {
    const made = spawnSync('psql', [TEST_DATABASE, '-qc', `CREATE DATABASE ${name}`]);
    assert.equal(made.status, 0, `CREATE DATABASE ${name}: ${made.stderr}`);
  }
  const uri = new URL(TEST_DATABASE);
  uri.pathname = `/${name}`;
  return ['--database', uri.toString()];
}

export function gatewayEnv(extra = {}) {
  return {
    ...process.env,
    DATAGATE_TOKEN_ADMIN: TOKENS.admin,
    DATAGATE_TOKEN_SALES: TOKENS.sales,
    DATAGATE_TOKEN_AUDITOR: TOKENS.auditor,
    ...extra,
  };
}

export function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

export function writeJson(file, value) {
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + '\n');
}

// A temporary copy of conf/ with server settings overridden; edit(dir) may
// change anything else. Tests never write into the source tree, and tests
// running at the same time never share files.
export function makeConfig({ server = {}, edit } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-it-'));
  fs.cpSync(CONF_DIR, dir, { recursive: true });
  const file = path.join(dir, 'datagate.json');
  const conf = readJson(file);
  conf.server = { ...conf.server, ...server };
  writeJson(file, conf);
  if (edit) edit(dir);
  return {
    dir,
    file: (name) => path.join(dir, name),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

function waitFor(emitter, event, ms, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
    emitter.once(event, (...args) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

// Runs the binary to completion (for --version, --check-config, ...).
export function runBinary(args, { env, input, timeoutMs = START_TIMEOUT_MS } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(BINARY, args, { env: env ?? gatewayEnv(), stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`datagate ${args.join(' ')} did not exit; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    // A process that exits without reading its input closes the pipe.
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? '');
  });
}

// One running gateway: its process, its port and its parsed log lines.
export class Gateway {
  constructor(child, config) {
    this.child = child;
    this.config = config;
    this.stderr = '';
    this.logs = [];
    this.exit = null;
    this.waiters = [];
    this.pending = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => this.onStderr(chunk));
    child.on('exit', (code, signal) => {
      this.exit = { code, signal };
      this.notify();
    });
  }

  // Starts datagate on config (default: a fresh copy of conf/) and waits
  // for `listening` lines, one per serving process.
  static async start({ config, args = [], env = {}, listening = 1 } = {}) {
    const owned = config === undefined;
    const conf = owned ? makeConfig() : config;
    const dir = typeof conf === 'string' ? conf : conf.dir;
    const db = databaseArgs(dir, args);
    const child = spawn(BINARY, ['--config', dir, '--listen', '127.0.0.1:0', ...db, ...args], {
      env: gatewayEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const gw = new Gateway(child, { dir, owned: owned ? conf : null });
    let lines;
    try {
      lines = await gw.waitForLogs((l) => l.event === 'listening', listening, START_TIMEOUT_MS);
      gw.port = lines[0].port;
      gw.pids = lines.map((l) => l.pid);
      assert.ok(lines.every((l) => l.port === gw.port), 'every worker listens on one port');
    } catch (err) {
      child.kill('SIGKILL');
      owned && conf.remove();
      throw new Error(`${err.message}\nstderr:\n${gw.stderr}`);
    }
    gw.tls = lines[0].url.startsWith('https:');
    gw.origin = `${gw.tls ? 'https' : 'http'}://127.0.0.1:${gw.port}`;
    gw.url = `${gw.origin}/mcp`;
    gw.wsUrl = `${gw.tls ? 'wss' : 'ws'}://127.0.0.1:${gw.port}/mcp`;
    return gw;
  }

  get pid() {
    return this.child.pid;
  }

  onStderr(chunk) {
    this.stderr += chunk;
    this.pending += chunk;
    let nl = this.pending.indexOf('\n');
    while (nl >= 0) {
      const line = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      if (line.startsWith('{')) {
        try {
          this.logs.push(JSON.parse(line));
        } catch {
          // Not a log line (a sanitizer report, say): kept in this.stderr.
        }
      }
      nl = this.pending.indexOf('\n');
    }
    this.notify();
  }

  notify() {
    for (const w of [...this.waiters]) w();
  }

  // Resolves with the first `count` log lines matching pred, waiting for
  // them; rejects when the process exits first or the time runs out.
  waitForLogs(pred, count = 1, ms = START_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.logs.filter(pred);
        if (found.length >= count) return done(null, found.slice(0, count));
        if (this.exit) return done(new Error(`datagate exited (${JSON.stringify(this.exit)})`));
      };
      const timer = setTimeout(() => done(new Error('timed out waiting for a log line')), ms);
      const done = (err, value) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        err ? reject(new Error(`${err.message}\nstderr:\n${this.stderr}`)) : resolve(value);
      };
      this.waiters.push(check);
      check();
    });
  }

  async waitForLog(pred, ms) {
    return (await this.waitForLogs(pred, 1, ms))[0];
  }

  signal(name) {
    process.kill(this.child.pid, name);
  }

  // Resolves with { code, signal } once the process has exited.
  async waitExit(ms = STOP_TIMEOUT_MS) {
    if (!this.exit) await waitFor(this.child, 'exit', ms, 'datagate to exit');
    return this.exit;
  }

  // SIGTERM, then asserts a clean exit (status 0, no bug events logged).
  async stop() {
    if (!this.exit) this.signal('SIGTERM');
    let exit;
    try {
      exit = await this.waitExit();
    } catch (err) {
      this.child.kill('SIGKILL');
      throw new Error(`${err.message}\nstderr:\n${this.stderr}`);
    } finally {
      this.config.owned?.remove();
    }
    assert.deepEqual(exit, { code: 0, signal: null }, `datagate exited uncleanly; stderr:\n${this.stderr}`);
    this.assertNoBugEvents();
  }

  assertNoBugEvents() {
    const bad = this.logs.filter((l) => BUG_EVENTS.has(l.event));
    assert.deepEqual(bad, [], 'log lines that mean a bug');
  }

  // Kills without checks (cleanup after a failed test).
  kill() {
    if (!this.exit) this.child.kill('SIGKILL');
    this.config.owned?.remove();
  }
}

// ---- MCP SDK clients ----------------------------------------------------

// Makes the client's initialize ask for `version` instead of the SDK's
// newest, so that every protocol version can be driven by the real client.
export function pinVersion(transport, version) {
  if (version === undefined) return transport;
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    if (msg.method === 'initialize') msg = { ...msg, params: { ...msg.params, protocolVersion: version } };
    return send(msg, opts);
  };
  return transport;
}

// capabilities: what the client declares (elicitation, for example); its
// request handlers are set by the caller after connecting.
async function connect(transport, { version, name = 'datagate-it', capabilities } = {}) {
  const client = new Client({ name, version: '1.0.0' }, capabilities ? { capabilities } : undefined);
  await client.connect(pinVersion(transport, version));
  return client;
}

export function authHeaders(token = TOKENS.admin) {
  return { Authorization: `Bearer ${token}` };
}

export async function httpClient(gw, { token = TOKENS.admin, headers = {}, ...opts } = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(gw.url), {
    requestInit: { headers: { ...authHeaders(token), ...headers } },
  });
  const client = await connect(transport, opts);
  return { client, transport };
}

export async function wsClient(gw, { token = TOKENS.admin, wsOptions = {}, ...opts } = {}) {
  const transport = new WsClientTransport(gw.wsUrl, { headers: authHeaders(token), options: wsOptions });
  const client = await connect(transport, opts);
  return { client, transport };
}

export async function stdioClient({ config, env = {}, ...opts } = {}) {
  const transport = new StdioClientTransport({
    command: BINARY,
    args: ['--stdio', '--config', config],
    env: gatewayEnv(env),
    stderr: 'pipe',
  });
  const client = await connect(transport, opts);
  return { client, transport };
}

// ---- Expectations computed from the configuration -----------------------

// The models a user of conf/ may read and, per model, the properties it
// sees, following the grant rules of docs/configuration.md.
export function expectedView(confDir, userName) {
  const conf = readJson(path.join(confDir, 'datagate.json'));
  const { models } = readJson(path.join(confDir, 'models.json'));
  const user = conf.users.find((u) => u.name === userName);
  const roles = conf.roles.filter((r) => user.roles.includes(r.name));
  const view = new Map();
  for (const m of models) {
    const visible = new Set();
    let granted = false;
    for (const role of roles) {
      for (const g of role.models ?? []) {
        const lower = g.model.toLowerCase();
        if (g.model !== '*' && lower !== m.name.toLowerCase() && lower !== m.id.toLowerCase()) continue;
        granted = true;
        const deny = new Set((g.deny ?? []).map((p) => p.toLowerCase()));
        const shown = g.properties === undefined || g.properties === '*' ? null : new Set(g.properties.map((p) => p.toLowerCase()));
        for (const p of m.properties) {
          const name = p.name.toLowerCase();
          if ((shown === null || shown.has(name)) && !deny.has(name)) visible.add(p.name);
        }
      }
    }
    if (granted) view.set(m.id.toLowerCase(), { model: m, properties: m.properties.filter((p) => visible.has(p.name)) });
  }
  return { models, view };
}
