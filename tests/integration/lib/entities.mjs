// SPDX-License-Identifier: AGPL-3.0-or-later
// An independent, straightforward evaluation of the entity tools over the
// rows of a configuration's data/ files, written from docs/query.md and not
// from the gateway's code: the integration tests compute their expectations
// with it instead of trusting the gateway's answers.
//
// Semantics, as the documentation gives them:
//   - String comparisons fold ASCII letters only and then compare UTF-8
//     bytes (SQLite's NOCASE collation and LIKE); other text (dates, GUIDs)
//     compares byte by byte, numbers numerically, false before true;
//   - a comparison with a null is false, and the negative operators
//     (NotEqualTo, NotStartsWith, NotEndsWith) are true exactly where their
//     positive operator is not;
//   - groups combine with And, parameters with their group's andOrOperator;
//   - nulls sort first ascending and last descending, ties by id in the
//     same direction.
import fs from 'node:fs';
import path from 'node:path';

import { expectedView, readJson } from './gateway.mjs';

export const EXPAND_MAX = 100;

export function camel(name) {
  return name[0].toLowerCase() + name.slice(1);
}

export function foldAscii(s) {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

export function compareBytes(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

const NUMERIC = new Set(['Int', 'Long', 'Double', 'Decimal']);

export function isInbound(prop) {
  return prop.dataType === 'Reference' && prop.reference?.direction === 'Inbound';
}

// A value as the store keeps it: DateTime in UTC with milliseconds, GUIDs
// in lower case.
export function normalise(type, value) {
  if (value === undefined || value === null) return null;
  if (type === 'DateTime') return new Date(value).toISOString();
  if (type === 'Guid' || type === 'Reference') return value.toLowerCase();
  return value;
}

// Orders two non-null values of the given types.
export function compareValues(typeA, a, typeB, b) {
  if (NUMERIC.has(typeA) || NUMERIC.has(typeB)) return a < b ? -1 : a > b ? 1 : 0;
  if (typeA === 'Boolean') return Number(a) - Number(b);
  if (typeA === 'String') return compareBytes(foldAscii(a), foldAscii(b));
  return compareBytes(a, b);
}

// The rows of a configuration directory's models and data files.
export class EntityData {
  constructor(confDir) {
    this.dir = confDir;
    this.models = readJson(path.join(confDir, 'models.json')).models;
    this.rows = new Map(this.models.map((m) => [m.name, []]));
    const dataDir = path.join(confDir, 'data');
    for (const file of fs.readdirSync(dataDir).filter((f) => f.endsWith('.json')).sort()) {
      const doc = readJson(path.join(dataDir, file));
      const model = this.model(doc.model);
      for (const e of doc.entities) this.rows.get(model.name).push(this.row(model, e));
    }
  }

  model(name) {
    const m = this.models.find((x) => x.name.toLowerCase() === name.toLowerCase() || x.id === name);
    if (!m) throw new Error(`no model ${name}`);
    return m;
  }

  prop(model, name) {
    if (name.toLowerCase() === 'id') return { name: 'id', dataType: 'Guid', id: true };
    const p = model.properties.find((x) => x.name === name) ??
      model.properties.find((x) => x.name.toLowerCase() === name.toLowerCase());
    if (!p) throw new Error(`${model.name} has no property ${name}`);
    return p;
  }

  // A data file entity as {id, values: {Name: value|null}} over every stored property.
  row(model, e) {
    const values = {};
    const byLower = new Map(Object.entries(e).map(([k, v]) => [k.toLowerCase(), v]));
    for (const p of model.properties) {
      if (!isInbound(p)) values[p.name] = normalise(p.dataType, byLower.get(p.name.toLowerCase()));
    }
    return { id: e.id.toLowerCase(), values };
  }

  of(modelName) {
    return this.rows.get(this.model(modelName).name);
  }

  byId(modelName, id) {
    return this.of(modelName).find((r) => r.id === id) ?? null;
  }

  // The stored properties a user sees, in configuration order.
  visible(modelName, user) {
    const m = this.model(modelName);
    const v = expectedView(this.dir, user).view.get(m.id.toLowerCase());
    if (!v) return null;
    return v.properties.filter((p) => !isInbound(p));
  }
}

function valueOf(row, prop) {
  return prop.id ? row.id : row.values[prop.name];
}

// ---- Filters ------------------------------------------------------------------

function textTest(op, v, x) {
  const a = foldAscii(v);
  const b = foldAscii(x);
  if (op === 'Contains') return a.includes(b);
  if (op === 'StartsWith' || op === 'NotStartsWith') return a.startsWith(b);
  return a.endsWith(b);
}

const ORDER_TESTS = {
  EqualTo: (c) => c === 0,
  NotEqualTo: (c) => c === 0,
  GreaterThan: (c) => c > 0,
  GreaterThanEqualTo: (c) => c >= 0,
  LessThan: (c) => c < 0,
  LessThanEqualTo: (c) => c <= 0,
};

const NEGATIVE = new Set(['NotEqualTo', 'NotStartsWith', 'NotEndsWith']);

// The positive form of op applied to v (left) and x (right), both typed.
function positive(op, typeA, v, typeB, x) {
  if (v === null || x === null) return false;
  if (ORDER_TESTS[op]) return ORDER_TESTS[op](compareValues(typeA, v, typeB, x));
  return textTest(op, v, x);
}

function typedValue(prop, p) {
  const raw = p.value;
  if (raw === null || (typeof raw === 'string' && raw.toLowerCase() === 'null' &&
      (p.valueType === 'null' || prop.dataType !== 'String'))) return null;
  if (NUMERIC.has(prop.dataType)) return Number(raw);
  if (prop.dataType === 'Boolean') return String(raw).toLowerCase() === 'true';
  return normalise(prop.dataType, String(raw));
}

// One parameter tested on one row of model.
function testRow(data, model, row, p) {
  const prop = data.prop(model, p.propertyName);
  const v = valueOf(row, prop);
  if (p.comparisonPropertyName !== undefined) {
    const other = data.prop(model, p.comparisonPropertyName);
    const result = positive(p.operator, prop.dataType, v, other.dataType, valueOf(row, other));
    return NEGATIVE.has(p.operator) ? !result : result;
  }
  const x = typedValue(prop, p);
  if (x === null) return p.operator === 'EqualTo' ? v === null : v !== null;
  const result = positive(p.operator, prop.dataType, v, prop.dataType, x);
  return NEGATIVE.has(p.operator) ? !result : result;
}

function testParam(data, model, row, p) {
  if (p.reference === undefined) return testRow(data, model, row, p);
  const ref = data.prop(model, p.reference);
  const target = data.model(ref.reference.target);
  if (!isInbound(ref)) {
    const related = row.values[ref.name] === null ? null : data.byId(target.name, row.values[ref.name]);
    return related !== null && testRow(data, target, related, p);
  }
  const inverse = data.prop(target, ref.reference.inverseProperty);
  return data.of(target.name).some((c) => c.values[inverse.name] === row.id && testRow(data, target, c, p));
}

export function matches(data, model, row, groups = []) {
  return groups.every((g) => {
    const params = g.parameters ?? [];
    if (params.length === 0) return true;
    const test = (p) => testParam(data, model, row, p);
    return g.andOrOperator === 'Or' ? params.some(test) : params.every(test);
  });
}

// ---- Order, pages, shapes ---------------------------------------------------------

export function sortRows(data, model, rows, sort) {
  const prop = sort ? data.prop(model, sort.propertyName) : null;
  const dir = sort?.sortOrder === 'Descending' ? -1 : 1;
  const key = (a, b) => {
    if (prop && !prop.id) {
      const x = valueOf(a, prop);
      const y = valueOf(b, prop);
      if (x === null || y === null) {
        if (x !== y) return x === null ? -1 : 1;
      } else {
        const c = compareValues(prop.dataType, x, prop.dataType, y);
        if (c !== 0) return c;
      }
    }
    return compareBytes(a.id, b.id);
  };
  return [...rows].sort((a, b) => dir * key(a, b));
}

function selected(data, model, names, user) {
  const visible = data.visible(model.name, user);
  if (names === undefined) return visible;
  const picked = [];
  for (const n of names) {
    if (n.toLowerCase() === 'id') continue;
    const p = data.prop(model, n);
    if (!picked.includes(p)) picked.push(p);
  }
  return picked;
}

function flat(props, row) {
  const out = {};
  for (const p of props) out[camel(p.name)] = row.values[p.name];
  return out;
}

function expandInto(data, model, row, entity, expand, user) {
  const expanded = {};
  const truncated = [];
  for (const e of expand) {
    const ref = data.prop(model, e.reference);
    const target = data.model(ref.reference.target);
    const props = selected(data, target, e.properties, user);
    const key = camel(ref.name);
    if (!isInbound(ref)) {
      const related = row.values[ref.name] === null ? null : data.byId(target.name, row.values[ref.name]);
      expanded[key] = related === null ? null : { ...flat(props, related), id: related.id };
      continue;
    }
    const inverse = ref.reference.inverseProperty;
    const children = sortRows(data, target, data.of(target.name).filter((c) => c.values[inverse] === row.id));
    expanded[key] = children.slice(0, EXPAND_MAX).map((c) => ({ ...flat(props, c), id: c.id }));
    if (children.length > EXPAND_MAX) truncated.push(key);
  }
  entity.properties.expanded = expanded;
  if (truncated.length > 0) entity.properties.expandedTruncated = truncated;
}

export function entityOf(data, model, row, { properties, expand, user = 'admin' } = {}) {
  const entity = { id: row.id, properties: flat(selected(data, model, properties, user), row) };
  if (expand !== undefined && expand.length > 0) expandInto(data, model, row, entity, expand, user);
  return entity;
}

// What query_entities answers for args (already valid for user).
export function expectQuery(data, args, user = 'admin') {
  const model = data.model(args.dataModelId);
  const rows = data.of(model.name).filter((r) => matches(data, model, r, args.queryParameterGroups));
  if (args.countOnly) return { count: rows.length };
  const pageNumber = args.paging?.pageNumber ?? 1;
  const pageSize = args.paging?.pageSize ?? 25;
  const sorted = sortRows(data, model, rows, args.sortCondition);
  const start = (pageNumber - 1) * pageSize;
  const page = sorted.slice(start, start + pageSize);
  const hasMore = sorted.length > start + pageSize;
  return {
    entities: page.map((r) => entityOf(data, model, r, { ...args, user })),
    pageNumber,
    pageSize,
    hasMore,
    nextPage: hasMore ? pageNumber + 1 : null,
  };
}

// What get_entities_by_ids answers: the ids in the order given, once each.
export function expectFetch(data, args, user = 'admin') {
  const model = data.model(args.dataModelId);
  const seen = new Set();
  const entities = [];
  for (const raw of args.entityIds) {
    const id = raw.toLowerCase();
    const row = data.byId(model.name, id);
    if (seen.has(id) || row === null) continue;
    seen.add(id);
    entities.push(entityOf(data, model, row, { ...args, user }));
  }
  return { entities };
}
