// SPDX-License-Identifier: AGPL-3.0-or-later
// Helpers of the form and save tree tests: the sample configuration with
// its connectors pointed at the mock upstream, SDK calls of the form tools,
// the sample records read from conf/data, and a check that a card is a
// valid Adaptive Card 1.5 in the parts the gateway writes.
import assert from 'node:assert/strict';
import path from 'node:path';

import { CONF_DIR, httpClient, readJson, TOKENS, writeJson } from './gateway.mjs';

export const ORDERS = '8a03cbc2-7f01-4d47-bdf0-0755336a3a70';
export const ORDER_LINES = 'e405b7c6-358c-4a55-a021-0999f4a91a40';
export const CUSTOMERS = 'cb94c4ab-8c1d-4fae-b582-9746427cad35';

// Credentials the mock and the gateway share for the sample connectors.
export const CREDS = {
  erpToken: 'it-erp-token', logisticsKey: 'it-key', clientId: 'it-client', clientSecret: 'it-secret',
  financeUser: 'finance', financePassword: 'it-pw',
};
export const ENV = {
  DATAGATE_SAMPLE_ERP_TOKEN: CREDS.erpToken,
  DATAGATE_SAMPLE_LOGISTICS_KEY: CREDS.logisticsKey,
  DATAGATE_SAMPLE_CLIENT_ID: CREDS.clientId,
  DATAGATE_SAMPLE_CLIENT_SECRET: CREDS.clientSecret,
  DATAGATE_SAMPLE_FINANCE_USER: CREDS.financeUser,
  DATAGATE_SAMPLE_FINANCE_PASSWORD: CREDS.financePassword,
};

// An edit for makeConfig: the sample connectors call the mock at base.
export function pointAt(base, more) {
  return (dir) => {
    const file = path.join(dir, 'connectors.json');
    const conns = readJson(file);
    for (const c of conns.connectors) {
      c.baseUrl = c.baseUrl.replace('http://127.0.0.1:8091', base);
      if (c.auth.tokenUrl) c.auth.tokenUrl = c.auth.tokenUrl.replace('http://127.0.0.1:8091', base);
    }
    writeJson(file, conns);
    more?.(dir);
  };
}

// The sample records of a model, from conf/data.
export function sampleData(model) {
  return readJson(path.join(CONF_DIR, 'data', `${model}.json`)).entities;
}

export async function withClient(gw, token, fn) {
  const { client, transport } = await httpClient(gw, { token });
  try {
    return await fn(client);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

export async function call(gw, name, args, token = TOKENS.admin) {
  return withClient(gw, token, (client) => client.callTool({ name, arguments: args }, undefined, { timeout: 60000 }));
}

export function structured(result) {
  assert.notEqual(result.isError, true, `tool failed: ${JSON.stringify(result.content)}`);
  const parsed = JSON.parse(result.content[0].text);
  assert.deepEqual(result.structuredContent, parsed);
  return parsed;
}

// A replay is the first answer byte for byte, but for its marker.
export function assertReplayOf(again, first) {
  const a = structured(again);
  const f = structured(first);
  assert.equal(f.replayed, false);
  assert.equal(a.replayed, true);
  const marker = '"replayed":true';
  assert.equal(again.content[0].text.split(marker).length, 2, 'one replay marker');
  assert.equal(again.content[0].text.replace(marker, '"replayed":false'), first.content[0].text);
  assert.deepEqual({ ...again.structuredContent, replayed: false }, first.structuredContent);
}

export function errorText(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result.structuredContent)}`);
  return result.content[0].text;
}

export function values(obj) {
  return Object.entries(obj).map(([key, value]) => ({ key, value: String(value) }));
}

export async function entity(gw, modelId, id) {
  const r = structured(await call(gw, 'get_entities_by_ids', { dataModelId: modelId, entityIds: [id] }));
  return r.entities[0]?.properties;
}

// ---- Adaptive Cards 1.5 ----------------------------------------------------
// The element types and properties of the schema that the gateway uses,
// with the types the schema gives them; anything else is an error.

const common = { type: 'string', id: 'string', label: 'string', isRequired: 'boolean', errorMessage: 'string', isVisible: 'boolean' };
const INPUTS = {
  'Input.Text': { ...common, value: 'string', placeholder: 'string', regex: 'string', isMultiline: 'boolean', maxLength: 'number' },
  'Input.Number': { ...common, value: 'number', min: 'number', max: 'number', placeholder: 'string' },
  'Input.Date': { ...common, value: 'string' },
  'Input.Toggle': { ...common, title: 'string', value: 'string', valueOn: 'string', valueOff: 'string' },
  'Input.ChoiceSet': { ...common, value: 'string', choices: 'array', style: 'string', isMultiSelect: 'boolean' },
};
const TEXT_BLOCK = { type: 'string', text: 'string', size: 'string', weight: 'string', style: 'string', wrap: 'boolean', isSubtle: 'boolean' };
const ENUMS = {
  size: ['Default', 'Small', 'Medium', 'Large', 'ExtraLarge'],
  weight: ['Default', 'Lighter', 'Bolder'],
};

function checkProps(el, allowed, where) {
  for (const [k, v] of Object.entries(el)) {
    assert.ok(k in allowed, `${where}: ${el.type} has no property ${k} in Adaptive Cards 1.5`);
    const want = allowed[k];
    assert.ok(want === 'array' ? Array.isArray(v) : typeof v === want, `${where}.${k} must be a ${want}`);
    if (ENUMS[k]) assert.ok(ENUMS[k].includes(v), `${where}.${k}: ${v}`);
  }
}

function checkElement(el, where, ids) {
  if (el.type === 'TextBlock') {
    checkProps(el, TEXT_BLOCK, where);
    assert.equal(typeof el.text, 'string');
    if (el.style !== undefined) assert.ok(['default', 'heading'].includes(el.style), `${where}.style`);
    return;
  }
  if (el.type === 'Container') {
    checkProps(el, { type: 'string', items: 'array', style: 'string', separator: 'boolean' }, where);
    if (el.style !== undefined) assert.ok(['default', 'emphasis', 'good', 'attention', 'warning', 'accent'].includes(el.style), `${where}.style`);
    el.items.forEach((item, i) => checkElement(item, `${where}.items[${i}]`, ids));
    return;
  }
  const allowed = INPUTS[el.type];
  assert.ok(allowed, `${where}: unknown element type ${el.type}`);
  checkProps(el, allowed, where);
  assert.ok(el.id && !ids.has(el.id), `${where}: input ids are required and unique`);
  ids.add(el.id);
  if (el.type === 'Input.Toggle') assert.equal(typeof el.title, 'string', `${where}: Input.Toggle needs a title`);
  if (el.type === 'Input.ChoiceSet') {
    assert.ok(['compact', 'expanded', 'filtered'].includes(el.style ?? 'compact'), `${where}.style`);
    for (const c of el.choices) assert.deepEqual(Object.keys(c).sort(), ['title', 'value'], `${where}: Input.Choice is {title, value}`);
    for (const c of el.choices) assert.ok(typeof c.title === 'string' && typeof c.value === 'string');
  }
  if (el.type === 'Input.Date' && el.value !== undefined) assert.match(el.value, /^\d{4}-\d{2}-\d{2}$/);
  if (el.regex !== undefined) new RegExp(el.regex); // eslint-disable-line no-new
}

// Checks card and returns its inputs by id.
export function checkCard(card) {
  assert.equal(card.type, 'AdaptiveCard');
  assert.equal(card.version, '1.5');
  assert.equal(card.$schema, 'http://adaptivecards.io/schemas/adaptive-card.json');
  assert.deepEqual(Object.keys(card).sort(), ['$schema', 'actions', 'body', 'type', 'version']);
  const ids = new Set();
  card.body.forEach((el, i) => checkElement(el, `body[${i}]`, ids));
  assert.equal(card.actions.length, 1);
  const submit = card.actions[0];
  assert.equal(submit.type, 'Action.Submit');
  assert.equal(typeof submit.title, 'string');
  assert.equal(typeof submit.data, 'object');
  const inputs = new Map();
  const walk = (els) => els.forEach((el) => (el.type === 'Container' ? walk(el.items) : el.id && inputs.set(el.id, el)));
  walk(card.body);
  return inputs;
}

