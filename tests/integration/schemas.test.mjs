// SPDX-License-Identifier: AGPL-3.0-or-later
// Every tool's inputSchema, as tools/list gives it to the official SDK
// client, must be accepted by function-calling front ends that take only a
// restricted JSON Schema subset: one type per field (no type arrays, no
// "null" type, no nullable), no combinators or references, every array with
// its items and every object with its properties, enum values of the
// field's own type, and only the keywords such front ends know.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Gateway, httpClient } from './lib/gateway.mjs';

const TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean']);
const COMMON = ['type', 'description', 'title', 'default', 'enum', 'format'];
const KEYWORDS = {
  object: [...COMMON, 'properties', 'required', 'additionalProperties'],
  array: [...COMMON, 'items', 'minItems', 'maxItems'],
  string: [...COMMON, 'minLength', 'maxLength', 'pattern'],
  number: [...COMMON, 'minimum', 'maximum'],
  integer: [...COMMON, 'minimum', 'maximum'],
  boolean: COMMON,
};

function valueOfType(value, type) {
  if (type === 'integer') return Number.isInteger(value);
  if (type === 'array') return Array.isArray(value);
  if (type === 'object') return value !== null && typeof value === 'object' && !Array.isArray(value);
  return typeof value === type;
}

// The problems of schema at path; [] when it is inside the subset.
export function restrictedProblems(schema, path = '') {
  const where = path || '(root)';
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return [`${where}: not a schema object`];
  const type = schema.type;
  if (typeof type !== 'string' || !TYPES.has(type)) return [`${where}: type ${JSON.stringify(type)} is not one single type`];
  const problems = [];
  for (const key of Object.keys(schema)) {
    if (!KEYWORDS[type].includes(key)) problems.push(`${where}: keyword '${key}' is outside the subset for ${type}`);
  }
  for (const v of schema.enum ?? []) {
    if (!valueOfType(v, type)) problems.push(`${where}: enum value ${JSON.stringify(v)} is not of type ${type}`);
  }
  if ('default' in schema && !valueOfType(schema.default, type)) problems.push(`${where}: default is not of type ${type}`);
  if (type === 'object') {
    const props = schema.properties;
    if (props === null || typeof props !== 'object') return [...problems, `${where}: an object without properties`];
    if ('additionalProperties' in schema && typeof schema.additionalProperties !== 'boolean') problems.push(`${where}: additionalProperties is not a boolean`);
    for (const r of schema.required ?? []) {
      if (!(r in props)) problems.push(`${where}: required '${r}' is not among the properties`);
    }
    for (const [k, v] of Object.entries(props)) problems.push(...restrictedProblems(v, `${path}${path ? '.' : ''}${k}`));
  }
  if (type === 'array') {
    if (!('items' in schema)) problems.push(`${where}: an array without items`);
    else problems.push(...restrictedProblems(schema.items, `${path}[]`));
  }
  return problems;
}

let gw;
let client;
let tools;
before(async () => {
  gw = await Gateway.start();
  ({ client } = await httpClient(gw));
  tools = (await client.listTools()).tools;
});
after(async () => {
  await client.close();
  await gw.stop();
});

describe('input schemas in the restricted subset', () => {
  it('the checker refuses what single-type front ends refuse', () => {
    const ok = { type: 'object', properties: { a: { type: 'string', enum: ['x'] } }, required: ['a'] };
    assert.deepEqual(restrictedProblems(ok), []);
    const bad = [
      { type: ['string', 'null'] },
      { type: 'object', properties: { v: { type: ['string', 'number'] } } },
      { type: 'object', properties: { v: { anyOf: [{ type: 'string' }, { type: 'null' }] } } },
      { type: 'object', properties: { v: { type: 'string', nullable: true } } },
      { type: 'object', properties: { v: {} } },
      { type: 'object', properties: { v: { type: 'null' } } },
      { type: 'object', properties: { v: { type: 'array' } } },
      { type: 'object', properties: { v: { type: 'string', enum: ['a', null] } } },
      { type: 'object', properties: {}, required: ['gone'] },
      { type: 'object' },
    ];
    for (const schema of bad) assert.notDeepEqual(restrictedProblems(schema), [], JSON.stringify(schema));
  });

  it('every tool is listed with an object schema', () => {
    assert.ok(tools.length >= 12);
    for (const tool of tools) assert.equal(tool.inputSchema.type, 'object', tool.name);
  });

  it('every tool\'s inputSchema is inside the subset', () => {
    const problems = tools.flatMap((t) => restrictedProblems(t.inputSchema).map((p) => `${t.name}: ${p}`));
    assert.deepEqual(problems, []);
  });
});

describe('filter values written as the listed schema asks', () => {
  async function structured(name, args) {
    const r = await client.callTool({ name, arguments: args });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    return r.structuredContent;
  }
  it('a number, a boolean and null as text mean what the JSON values mean', async () => {
    const models = (await structured('get_data_models', {})).dataModels;
    const id = models.find((m) => m.name === 'Orders').dataModelId;
    const count = async (parameter) =>
      (await structured('query_entities', { dataModelId: id, countOnly: true, queryParameterGroups: [{ parameters: [parameter] }] })).count;
    const all = (await structured('query_entities', { dataModelId: id, countOnly: true })).count;
    const cases = [
      [{ operator: 'GreaterThan', propertyName: 'Amount', value: '1000', valueType: 'number' }, { operator: 'GreaterThan', propertyName: 'Amount', value: 1000 }],
      [{ operator: 'EqualTo', propertyName: 'DueDate', value: 'null', valueType: 'null' }, { operator: 'EqualTo', propertyName: 'DueDate', value: null }],
    ];
    for (const [asText, asJson] of cases) {
      const n = await count(asText);
      assert.ok(n > 0 && n < all, `${JSON.stringify(asText)} selects some orders`);
      assert.equal(await count(asJson), n, JSON.stringify(asJson));
    }
    const agg = (value) => structured('aggregate_entities', {
      dataModelId: id,
      aggregations: [{ function: 'Count', alias: 'big', joinFilter: { reference: 'Customer', condition: { localProperty: 'Amount', operator: 'GreaterThan', value } } }],
    });
    assert.deepEqual(await agg('1000'), await agg(1000));
  });
});
