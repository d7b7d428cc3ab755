// SPDX-License-Identifier: AGPL-3.0-or-later
// MCP over standard input and output (`datagate --stdio`): the SDK's
// StdioClientTransport, and the process driven by hand to check that
// stdout carries nothing but MCP messages and that EOF ends it cleanly.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BINARY, CONF_DIR, expectedView, gatewayEnv, makeConfig, readJson, SOURCE_DIR, stdioClient } from './lib/gateway.mjs';

let config;
before(() => {
  config = makeConfig();
});
after(() => {
  config.remove();
});

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } } };

// Runs `datagate --stdio`, writes `lines` and closes stdin; resolves with
// the exit and everything written.
function runStdio(lines, args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(BINARY, ['--stdio', '--config', config.dir, ...args], { env: gatewayEnv(), stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`--stdio did not exit after EOF; stderr: ${stderr}`));
    }, 20000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l)) + '\n').join(''));
  });
}

// Every line of stdout is one JSON-RPC 2.0 message.
function messages(stdout) {
  assert.ok(stdout.endsWith('\n'), 'output ends with a newline');
  return stdout
    .slice(0, -1)
    .split('\n')
    .map((line) => {
      const m = JSON.parse(line);
      assert.equal(m.jsonrpc, '2.0', line);
      return m;
    });
}

describe('the SDK client over stdio', () => {
  it('initializes, lists tools and calls them as server.stdioUser', async () => {
    const { client, transport } = await stdioClient({ config: config.dir });
    try {
      assert.ok(transport.pid > 0);
      assert.equal(client.getServerVersion().name, 'datagate');
      const { tools } = await client.listTools();
      assert.ok(tools.every((t) => t.inputSchema && t.outputSchema));
      const r = await client.callTool({ name: 'get_data_models', arguments: {} });
      assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
      const user = readJson(config.file('datagate.json')).server.stdioUser;
      const { view } = expectedView(config.dir, user);
      assert.deepEqual(
        r.structuredContent.dataModels.map((m) => m.dataModelId.toLowerCase()).sort(),
        [...view.keys()].sort(),
      );
      const bad = await client.callTool({ name: 'get_data_model_properties', arguments: { dataModelId: 'x' } });
      assert.equal(bad.isError, true);
      assert.match(bad.content[0].text, /dataModelId/);
      await client.ping();
    } finally {
      await client.close();
    }
  });
});

describe('the stdio process', () => {
  it('writes only MCP messages to stdout and exits 0 at EOF', async () => {
    const r = await runStdio(
      [
        INIT,
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_data_models', arguments: {} } },
        { jsonrpc: '2.0', id: 4, method: 'ping' },
      ],
      ['--log-level', 'debug'],
    );
    assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null }, r.stderr);
    const out = messages(r.stdout);
    assert.deepEqual(out.map((m) => m.id), [1, 2, 3, 4], 'one answer per request, in order');
    assert.equal(out[0].result.protocolVersion, '2025-06-18');
    assert.ok(out[1].result.tools.length >= 2);
    assert.ok(out[2].result.structuredContent.dataModels.length > 0);
    // The logs went to stderr, as JSON lines.
    const logs = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    assert.ok(logs.some((l) => l.event === 'tool_call' && l.transport === 'stdio' && l.outcome === 'ok'));
    assert.ok(logs.some((l) => l.event === 'stopped'));
  });

  it('answers bad lines with JSON-RPC errors and keeps going', async () => {
    const r = await runStdio([INIT, '{broken', '[]', { jsonrpc: '2.0', id: 9, method: 'nope' }, { jsonrpc: '2.0', id: 10, method: 'ping' }]);
    assert.equal(r.code, 0, r.stderr);
    const out = messages(r.stdout);
    assert.equal(out.length, 5);
    assert.equal(out[1].error.code, -32700);
    assert.equal(out[2].error.code, -32600);
    assert.equal(out[3].error.code, -32601);
    assert.deepEqual(out[4], { jsonrpc: '2.0', id: 10, result: {} });
  });

  it('exits 0 on EOF with no input at all', async () => {
    const r = await runStdio([]);
    assert.deepEqual({ code: r.code, signal: r.signal, stdout: r.stdout }, { code: 0, signal: null, stdout: '' }, r.stderr);
  });
});

// The Claude Desktop example of README.md, run as written: its command,
// arguments and environment, with the paths it asks the reader to replace.
describe('the README example for Claude Desktop', () => {
  it('names every variable the sample uses, starts, answers, and writes its database where it says', async () => {
    const readme = fs.readFileSync(path.join(SOURCE_DIR, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('**Claude Desktop**'));
    const block = /```json\n([\s\S]*?)\n```/.exec(section)[1];
    const server = JSON.parse(block).mcpServers.datagate;
    // Every variable conf/ names, but the JWT secret of the disabled OAuth
    // and the PostgreSQL password (the example runs on SQLite).
    const named = new Set();
    for (const f of fs.readdirSync(CONF_DIR).filter((n) => n.endsWith('.json')))
      for (const m of fs.readFileSync(path.join(CONF_DIR, f), 'utf8').matchAll(/"\w*Env"\s*:\s*"(\w+)"/g)) named.add(m[1]);
    assert.ok(named.has('DATAGATE_SAMPLE_ERP_TOKEN') && named.has('DATAGATE_TOKEN_ADMIN'));
    named.delete('DATAGATE_JWT_SECRET');
    named.delete('PGPASSWORD');
    assert.deepEqual(Object.keys(server.env).sort(), [...named].sort());

    const data = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-readme-'));
    const cfg = makeConfig();
    const before = fs.readdirSync(cfg.dir).sort();
    const replace = (a) => a.replace('/path/to/datagate/conf', cfg.dir).replace('/path/to/data', path.join(data, 'new'));
    assert.equal(server.command, '/path/to/datagate/build/debug/datagate');
    const transport = new StdioClientTransport({ command: BINARY, args: server.args.map(replace),
      env: { PATH: process.env.PATH, ...server.env }, stderr: 'pipe' });
    const client = new Client({ name: 'readme', version: '1.0.0' });
    try {
      await client.connect(transport);
      const r = await client.callTool({ name: 'get_data_models', arguments: {} });
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      assert.ok(r.structuredContent.dataModels.length > 0);
    } finally {
      await client.close();
    }
    try {
      assert.ok(fs.existsSync(path.join(data, 'new', 'datagate.db')), 'the database is in the data directory');
      assert.deepEqual(fs.readdirSync(cfg.dir).sort(), before, 'nothing is written into the configuration directory');
    } finally {
      cfg.remove();
      fs.rmSync(data, { recursive: true, force: true });
    }
  });
});
