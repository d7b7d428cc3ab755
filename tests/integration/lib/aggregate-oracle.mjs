// SPDX-License-Identifier: AGPL-3.0-or-later
// An independent evaluation of aggregate_entities over entities held in
// memory, written from the rules of docs/query.md and docs/tools.md rather
// than from the gateway's SQL: filter groups (values, nulls, negative
// operators, property comparisons, Outbound and Inbound reference
// filters), group keys (own, Outbound, Inbound with distinct values and the
// null group), every function, and joinFilter clauses. The tests compare
// the gateway's answers with it.
import fs from 'node:fs';
import path from 'node:path';

import { readJson } from './gateway.mjs';

const NEGATIVE = { NotEqualTo: 'EqualTo', NotStartsWith: 'StartsWith', NotEndsWith: 'EndsWith' };
const NUMERIC = new Set(['Int', 'Long', 'Double', 'Decimal']);

// Every model's entities from a configuration directory's data/ files,
// keyed by model name, with values normalised as the store keeps them.
export function loadData(confDir) {
  const { models } = readJson(path.join(confDir, 'models.json'));
  const data = {};
  for (const m of models) data[m.name] = [];
  const dir = path.join(confDir, 'data');
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const doc = readJson(path.join(dir, file));
    const model = models.find((m) => m.name === doc.model || m.id === doc.model);
    data[model.name].push(...doc.entities.map((e) => normalise(model, e)));
  }
  return { models, data };
}

function normalise(model, entity) {
  const out = { id: entity.id.toLowerCase() };
  for (const p of model.properties) {
    const key = Object.keys(entity).find((k) => k.toLowerCase() === p.name.toLowerCase());
    let v = key === undefined ? null : entity[key];
    if (v !== null && p.dataType === 'DateTime') v = new Date(v).toISOString();
    if (v !== null && (p.dataType === 'Guid' || p.dataType === 'Reference')) v = v.toLowerCase();
    out[p.name] = v;
  }
  return out;
}

export class Oracle {
  constructor({ models, data }) {
    this.models = new Map(models.map((m) => [m.name, m]));
    this.data = data;
    this.byId = new Map(models.map((m) => [m.name, new Map(data[m.name].map((e) => [e.id, e]))]));
  }

  // The property definition called name (any case); 'id' gives a Guid.
  prop(model, name) {
    if (name.toLowerCase() === 'id') return { name: 'id', dataType: 'Guid' };
    const m = this.models.get(model);
    return m.properties.find((p) => p.name === name) ?? m.properties.find((p) => p.name.toLowerCase() === name.toLowerCase());
  }

  // ---- Filters ------------------------------------------------------------

  static compare(op, a, b, type) {
    if (type === 'String') {
      a = String(a).toLowerCase();
      b = String(b).toLowerCase();
    }
    switch (op) {
      case 'EqualTo': return a === b;
      case 'GreaterThan': return a > b;
      case 'GreaterThanEqualTo': return a >= b;
      case 'LessThan': return a < b;
      case 'LessThanEqualTo': return a <= b;
      case 'Contains': return a.includes(b);
      case 'StartsWith': return a.startsWith(b);
      case 'EndsWith': return a.endsWith(b);
      default: throw new Error(`operator ${op}`);
    }
  }

  // A negative operator holds exactly where its positive one does not;
  // other comparisons with a null are false.
  static test(op, a, b, type) {
    const positive = NEGATIVE[op];
    if (positive) return !(a !== null && b !== null && Oracle.compare(positive, a, b, type));
    return a !== null && b !== null && Oracle.compare(op, a, b, type);
  }

  static typed(prop, value) {
    if (value === null) return null;
    if (NUMERIC.has(prop.dataType)) return Number(value);
    if (prop.dataType === 'Boolean') return String(value).toLowerCase() === 'true';
    if (prop.dataType === 'Guid' || prop.dataType === 'Reference') return String(value).toLowerCase();
    if (prop.dataType === 'DateTime') return new Date(value).toISOString();
    return String(value);
  }

  value(entity, prop) {
    return prop.name === 'id' ? entity.id : entity[prop.name];
  }

  predicate(model, entity, param) {
    const prop = this.prop(model, param.propertyName);
    const a = this.value(entity, prop);
    if (param.comparisonPropertyName !== undefined)
      return Oracle.test(param.operator, a, this.value(entity, this.prop(model, param.comparisonPropertyName)), prop.dataType);
    const isNull = param.value === null || param.valueType === 'null' ||
      (prop.dataType !== 'String' && String(param.value).toLowerCase() === 'null');
    if (isNull) return param.operator === 'EqualTo' ? a === null : a !== null;
    return Oracle.test(param.operator, a, Oracle.typed(prop, param.value), prop.dataType);
  }

  // The related entities of entity through reference property ref.
  related(model, entity, ref) {
    const r = ref.reference;
    if (r.direction === 'Inbound') return this.data[r.target].filter((x) => x[r.inverseProperty] === entity.id);
    const rel = entity[ref.name] === null ? undefined : this.byId.get(r.target).get(entity[ref.name]);
    return rel ? [rel] : [];
  }

  param(model, entity, param) {
    if (param.reference === undefined) return this.predicate(model, entity, param);
    const ref = this.prop(model, param.reference);
    return this.related(model, entity, ref).some((rel) => this.predicate(ref.reference.target, rel, param));
  }

  matches(model, entity, groups = []) {
    return groups.every((g) => {
      const params = g.parameters ?? [];
      if (params.length === 0) return true;
      const results = params.map((p) => this.param(model, entity, p));
      return g.andOrOperator === 'Or' ? results.some(Boolean) : results.every(Boolean);
    });
  }

  // ---- joinFilter -----------------------------------------------------------

  joined(model, entity, jf) {
    if (jf.reference !== undefined) return this.related(model, entity, this.prop(model, jf.reference))[0];
    const target = [...this.models.values()].find((m) => m.name.toLowerCase() === jf.entity.toLowerCase() ||
      m.entityType.toLowerCase() === jf.entity.toLowerCase());
    const key = this.value(entity, this.prop(model, jf.on.localProperty));
    return key === null ? undefined : this.byId.get(target.name).get(key);
  }

  // Comparisons are typed off the base property: a Date reads a DateTime
  // as its UTC date, a DateTime reads a Date as midnight UTC.
  static asLocal(local, foreign, value) {
    if (value === null || local.dataType === foreign.dataType) return value;
    if (local.dataType === 'Date' && foreign.dataType === 'DateTime') return value.slice(0, 10);
    if (local.dataType === 'DateTime' && foreign.dataType === 'Date') return `${value}T00:00:00.000Z`;
    return value;
  }

  holds(model, entity, jf) {
    const rel = this.joined(model, entity, jf);
    if (!rel) return false;
    const c = jf.condition;
    const local = this.prop(model, c.localProperty);
    const a = this.value(entity, local);
    if (c.foreignProperty !== undefined) {
      const target = jf.reference !== undefined ? this.prop(model, jf.reference).reference.target : this.joinedModel(jf);
      const foreign = this.prop(target, c.foreignProperty);
      return Oracle.test(c.operator, a, Oracle.asLocal(local, foreign, this.value(rel, foreign)), local.dataType);
    }
    if (c.value === null) return c.operator === 'EqualTo' ? a === null : a !== null;
    return Oracle.test(c.operator, a, Oracle.typed(local, c.value), local.dataType);
  }

  joinedModel(jf) {
    return [...this.models.values()].find((m) => m.name.toLowerCase() === jf.entity.toLowerCase() ||
      m.entityType.toLowerCase() === jf.entity.toLowerCase()).name;
  }

  // ---- Functions ------------------------------------------------------------

  static measure(fn, rows, values, type) {
    const present = values.filter((v) => v !== null);
    const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
    switch (fn) {
      case 'Count': return rows.length;
      case 'Sum': return present.reduce((s, v) => s + v, 0);
      case 'Average': return present.length ? present.reduce((s, v) => s + v, 0) / present.length : null;
      case 'Min': return present.length ? [...present].sort(cmp)[0] : null;
      case 'Max': return present.length ? [...present].sort(cmp).at(-1) : null;
      case 'DistinctCount':
        return new Set(present.map((v) => (type === 'String' ? v.toLowerCase() : v))).size;
      default: throw new Error(`function ${fn}`);
    }
  }

  static key(clause) {
    if (clause.alias !== undefined) return clause.alias[0].toLowerCase() + clause.alias.slice(1);
    const name = clause.propertyName === undefined ? clause.function : `${clause.function}_${clause.propertyName}`;
    return name[0].toLowerCase() + name.slice(1);
  }

  aggregates(model, rows, aggregations) {
    const out = {};
    for (const clause of aggregations) {
      const kept = clause.joinFilter ? rows.filter((e) => this.holds(model, e, clause.joinFilter)) : rows;
      const prop = clause.propertyName === undefined ? null : this.prop(model, clause.propertyName);
      const values = prop ? kept.map((e) => this.value(e, prop)) : [];
      out[Oracle.key(clause)] = Oracle.measure(clause.function, kept, values, prop?.dataType);
    }
    return out;
  }

  // ---- Group keys -------------------------------------------------------------

  // The key tuples of one entity: own keys give one value each; the keys
  // on one reference give the distinct tuples of its related entities
  // (nulls when there is none: the null group); the parts combine.
  tuples(model, entity, groupBy) {
    const parts = [];
    groupBy.forEach((k, i) => {
      const ref = k.reference === undefined ? null : this.prop(model, k.reference);
      const part = ref && parts.find((p) => p.ref && p.ref.name === ref.name);
      if (part) part.idx.push(i);
      else parts.push({ ref, idx: [i] });
    });
    let combos = [new Array(groupBy.length).fill(null)];
    for (const part of parts) {
      const options = this.options(model, entity, groupBy, part);
      combos = combos.flatMap((c) => options.map((o) => {
        const next = [...c];
        part.idx.forEach((j, x) => (next[j] = o[x]));
        return next;
      }));
    }
    return combos;
  }

  options(model, entity, groupBy, { ref, idx }) {
    if (!ref) return [[this.value(entity, this.prop(model, groupBy[idx[0]].propertyName))]];
    const target = ref.reference.target;
    const props = idx.map((j) => this.prop(target, groupBy[j].propertyName));
    const rels = this.related(model, entity, ref);
    if (rels.length === 0) return [props.map(() => null)];
    const distinct = new Map();
    for (const r of rels) {
      const o = props.map((p) => this.value(r, p));
      distinct.set(JSON.stringify(o.map(foldCase)), o);
    }
    return [...distinct.values()];
  }

  static label(model, k, oracle) {
    if (k.reference === undefined) {
      const name = oracle.prop(model, k.propertyName).name;
      return { name, key: name[0].toLowerCase() + name.slice(1) };
    }
    const ref = oracle.prop(model, k.reference);
    const prop = oracle.prop(ref.reference.target, k.propertyName);
    return { name: `${ref.name}.${prop.name}`, key: `${ref.name[0].toLowerCase()}${ref.name.slice(1)}.${prop.name}` };
  }

  // The whole answer, rows in no particular order.
  aggregate(model, args) {
    const matched = this.data[model].filter((e) => this.matches(model, e, args.queryParameterGroups));
    const groupBy = args.groupBy ?? [];
    const labels = groupBy.map((k) => Oracle.label(model, k, this));
    if (groupBy.length === 0)
      return { matchedCount: matched.length, groupByProperties: [], rows: [{ groupKey: {}, aggregates: this.aggregates(model, matched, args.aggregations) }] };
    const groups = new Map();
    for (const e of matched) {
      for (const t of this.tuples(model, e, groupBy)) {
        const id = JSON.stringify(t.map(foldCase));
        if (!groups.has(id)) groups.set(id, { values: t, rows: [] });
        groups.get(id).rows.push(e);
      }
    }
    const rows = [...groups.values()].map((g) => ({
      groupKey: Object.fromEntries(labels.map((l, i) => [l.key, g.values[i]])),
      aggregates: this.aggregates(model, g.rows, args.aggregations),
    }));
    return { matchedCount: matched.length, groupByProperties: labels.map((l) => l.name), rows };
  }
}

function foldCase(v) {
  return typeof v === 'string' ? v.toLowerCase() : v;
}

// Whether two aggregate values agree: numbers within a relative 1e-9
// (sums of decimals are added in another order), everything else exactly.
export function sameValue(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  if (typeof a === 'string' && typeof b === 'string') return a.toLowerCase() === b.toLowerCase();
  return a === b;
}

// Asserts (through the given assert) that the gateway's answer equals the
// oracle's: the same matched count and labels, and the same rows, found
// by their group key.
export function assertSameAnswer(assert, got, want, what) {
  assert.equal(got.matchedCount, want.matchedCount, `${what}: matchedCount`);
  assert.deepEqual(got.groupByProperties, want.groupByProperties, `${what}: groupByProperties`);
  assert.equal(got.rows.length, want.rows.length, `${what}: number of rows\n got ${JSON.stringify(got.rows)}\nwant ${JSON.stringify(want.rows)}`);
  const index = new Map(want.rows.map((r) => [JSON.stringify(Object.values(r.groupKey).map(foldCase)), r]));
  for (const row of got.rows) {
    const id = JSON.stringify(Object.values(row.groupKey).map(foldCase));
    const w = index.get(id);
    assert.ok(w, `${what}: unexpected group ${id}; want groups ${[...index.keys()].join(' ')}`);
    assert.deepEqual(Object.keys(row.aggregates), Object.keys(w.aggregates), `${what}: aggregate keys`);
    for (const [k, v] of Object.entries(w.aggregates))
      assert.ok(sameValue(row.aggregates[k], v), `${what}: group ${id} ${k}: got ${row.aggregates[k]}, want ${v}`);
  }
}
