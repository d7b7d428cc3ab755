// SPDX-License-Identifier: AGPL-3.0-or-later
// Data entry forms through the official MCP client: get_data_entry_form
// as a JSON field list and as an Adaptive Card 1.5 (fields, inputs,
// choices, lookups, defaults, prefilling from initialValues and from a
// record), submit_data_entry_form creating and modifying records without
// a save tree, idempotency keys, the tools' annotations and description,
// and every validation error with nothing written.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { Gateway, makeConfig, readJson, TOKENS, CONF_DIR } from './lib/gateway.mjs';
import { startMock } from './lib/upstream.mjs';
import {
  assertReplayOf, call, checkCard, CREDS, CUSTOMERS, entity, ENV, errorText, ORDER_LINES, ORDERS, pointAt, sampleData,
  structured, values, withClient,
} from './lib/forms.mjs';

let mock;
let config;
let gw;

before(async () => {
  mock = await startMock({ credentials: CREDS });
  config = makeConfig({ edit: pointAt(mock.base) });
  gw = await Gateway.start({ config, env: ENV });
});
after(async () => {
  await gw?.stop();
  config?.remove();
  await mock?.close();
});

const models = readJson(`${CONF_DIR}/models.json`).models;

// The fields a form shows, from models.json alone: stored, not read-only,
// not hidden, in form sequence.
function expectedFields(name) {
  const m = models.find((x) => x.name === name);
  return m.properties
    .map((p, i) => ({ p, i, seq: p.form?.sequence ?? (i + 1) * 10 }))
    .filter(({ p }) => !p.readOnly && !p.form?.hidden && p.reference?.direction !== 'Inbound')
    .sort((a, b) => a.seq - b.seq || a.i - b.i)
    .map(({ p }) => p);
}

// The choices of a reference to model: its records by first keyword property.
function expectedChoices(model, label) {
  return sampleData(model)
    .map((e) => ({ title: e[label], value: e.id }))
    .sort((a, b) => (a.title.toLowerCase() < b.title.toLowerCase() ? -1 : a.title.toLowerCase() > b.title.toLowerCase() ? 1 : 0));
}

function form(args, token) {
  return call(gw, 'get_data_entry_form', args, token);
}

function submit(args, token) {
  return call(gw, 'submit_data_entry_form', args, token);
}

describe('the tools', () => {
  it('tools/list annotates submit_data_entry_form destructive and tells the assistant to confirm', async () => {
    await withClient(gw, TOKENS.admin, async (client) => {
      const { tools } = await client.listTools();
      const s = tools.find((t) => t.name === 'submit_data_entry_form');
      const g = tools.find((t) => t.name === 'get_data_entry_form');
      assert.equal(s.annotations.destructiveHint, true);
      assert.equal(s.annotations.readOnlyHint, false);
      assert.match(s.description, /DESTRUCTIVE/);
      assert.match(s.description, /ask them to confirm/);
      assert.deepEqual(s.inputSchema.properties.system.enum, ['Corbi', 'ChatGPT', 'Claude', 'Copilot']);
      assert.deepEqual(s.inputSchema.required, ['dataModelId', 'formValues']);
      assert.equal(g.annotations.readOnlyHint, true);
      assert.equal(g.annotations.destructiveHint, false);
      assert.deepEqual(g.inputSchema.properties.format.enum, ['AdaptiveCard', 'Json']);
    });
  });
});

describe('get_data_entry_form', () => {
  it('Json: a field per editable property, in form order, with types, choices, lookups and defaults', async () => {
    const r = structured(await form({ dataModelId: ORDERS, format: 'Json' }));
    const want = expectedFields('Orders');
    assert.equal(r.format, 'Json');
    assert.equal(r.name, 'Orders');
    assert.deepEqual(r.fields.map((f) => f.key), want.map((p) => p.name));
    for (const [i, p] of want.entries()) {
      const f = r.fields[i];
      assert.equal(f.label, p.form?.label ?? p.name);
      assert.equal(f.type, p.dataType);
      assert.equal(f.required, Boolean(p.required));
      assert.equal(f.value, p.form?.defaultValue ?? null);
    }
    const field = (k) => r.fields.find((f) => f.key === k);
    assert.deepEqual(field('Status').choices.map((c) => c.value), ['Draft', 'Open', 'Shipped', 'Cancelled']);
    assert.deepEqual(field('Customer').choices, expectedChoices('Customers', 'Name'));
    assert.equal(field('SalesRep').choices, undefined);
    assert.equal(field('SalesRep').lookup.targetEntityType, 'User');
    assert.deepEqual(r.formValues, [{ key: 'Status', value: 'Draft' }]);
    assert.match(r.instructions, /submit_data_entry_form/);
  });

  it('AdaptiveCard: a valid Adaptive Card 1.5 with the right input for each field', async () => {
    const r = structured(await form({ dataModelId: ORDER_LINES, format: 'AdaptiveCard',
      initialValues: values({ Quantity: '4', SKU: 'X-1' }) }));
    const inputs = checkCard(r.card);
    const want = expectedFields('OrderLines');
    assert.deepEqual([...inputs.keys()], want.map((p) => p.name));
    assert.equal(inputs.get('Order').type, 'Input.ChoiceSet');
    assert.equal(inputs.get('Order').style, 'filtered');
    assert.deepEqual(inputs.get('Order').choices, expectedChoices('Orders', 'OrderNumber'));
    assert.equal(inputs.get('Order').isRequired, true);
    assert.equal(inputs.get('Quantity').type, 'Input.Number');
    assert.equal(inputs.get('Quantity').value, 4);
    assert.equal(inputs.get('UnitPrice').type, 'Input.Number');
    assert.equal(inputs.get('SKU').type, 'Input.Text');
    assert.equal(inputs.get('SKU').value, 'X-1');
    assert.deepEqual(r.card.actions[0].data, { tool: 'submit_data_entry_form', dataModelId: ORDER_LINES });
    const c = structured(await form({ dataModelId: CUSTOMERS, format: 'AdaptiveCard' }));
    const ci = checkCard(c.card);
    assert.equal(ci.get('Region').type, 'Input.ChoiceSet');
    assert.equal(ci.get('RenewalDate').type, 'Input.Date');
    assert.equal(ci.has('CreatedAt'), false);
    const p = structured(await form({ dataModelId: '1aca09b3-19ad-404d-adbd-f69a9319a687', format: 'AdaptiveCard' }));
    const toggle = checkCard(p.card).get('Active');
    assert.equal(toggle.type, 'Input.Toggle');
    assert.equal(toggle.value, 'true');
    assert.equal(toggle.valueOn, 'true');
  });

  it('with an id: the record\'s values, initialValues on top, and its last submission', async () => {
    const order = sampleData('Orders').find((o) => o.OrderNumber === 'SO-1003');
    const r = structured(await form({ dataModelId: ORDERS, format: 'Json', id: order.id.toUpperCase(),
      initialValues: values({ Status: 'Open' }) }));
    assert.equal(r.id, order.id);
    const field = (k) => r.fields.find((f) => f.key === k).value;
    assert.equal(field('OrderNumber'), order.OrderNumber);
    assert.equal(field('Customer'), order.Customer);
    assert.equal(field('OrderDate'), order.OrderDate);
    assert.equal(field('Amount'), String(order.Amount));
    assert.equal(field('Status'), 'Open');
    assert.equal(r.lastSubmission, null);
    const text = errorText(await form({ dataModelId: ORDERS, format: 'Json', id: randomUUID() }));
    assert.match(text, /^Invalid argument 'id': there is no Orders entity with id '[0-9a-f-]{36}'; leave id out for a new record\.$/);
  });

  it('refuses initialValues that are not fields or not of their type, and models the caller cannot write', async () => {
    let text = errorText(await form({ dataModelId: ORDERS, format: 'Json', initialValues: values({ Stat: 'Open' }) }));
    assert.match(text, /^Invalid argument 'initialValues\[0\]\.key': 'Stat' is not a field of this form; the fields of the Orders form are: OrderNumber, Customer, SalesRep, OrderDate, DueDate, Status, Amount, Quantity, WarehouseId\.$/);
    text = errorText(await form({ dataModelId: ORDERS, format: 'Json', initialValues: values({ Amount: 'lots' }) }));
    assert.equal(text, 'Invalid argument \'initialValues[0].value\': got "lots"; Amount is Decimal, so allowed: a number such as 12.5, or null.');
    text = errorText(await form({ dataModelId: ORDERS, format: 'Json' }, TOKENS.auditor));
    assert.match(text, /^Invalid argument 'dataModelId': you may read Orders records but not create or modify them/);
    text = errorText(await form({ dataModelId: ORDERS, format: 'Html' }));
    assert.match(text, /format/);
  });
});

describe('submit_data_entry_form', () => {
  it('creates a record without a save tree and records who submitted it', async () => {
    const name = `Newco ${randomUUID()}`;
    const r = structured(await submit({ dataModelId: CUSTOMERS, system: 'Claude',
      formValues: values({ Name: name, Region: 'EMEA', CreditLimit: '2500.50', RenewalDate: '2026-01-31' }) }));
    assert.equal(r.created, true);
    assert.equal(r.status, 'succeeded');
    assert.equal(r.replayed, false);
    assert.equal(r.endpoint, null);
    assert.equal(r.system, 'Claude');
    const e = await entity(gw, CUSTOMERS, r.id);
    assert.deepEqual({ name: e.name, region: e.region, creditLimit: e.creditLimit, renewalDate: e.renewalDate },
      { name, region: 'EMEA', creditLimit: 2500.5, renewalDate: '2026-01-31' });
    const f = structured(await form({ dataModelId: CUSTOMERS, format: 'Json', id: r.id }));
    assert.equal(f.lastSubmission.submissionId, r.submissionId);
    assert.equal(f.lastSubmission.system, 'Claude');
    assert.equal(f.lastSubmission.operation, 'Create');
    assert.equal(f.lastSubmission.status, 'succeeded');
    // Modifying changes only the given fields; "" clears one.
    const u = structured(await submit({ dataModelId: CUSTOMERS, id: r.id, system: 'Copilot',
      formValues: values({ Region: 'APAC', CreditLimit: '' }) }));
    assert.equal(u.created, false);
    const e2 = await entity(gw, CUSTOMERS, r.id);
    assert.equal(e2.name, name);
    assert.equal(e2.region, 'APAC');
    assert.equal(e2.creditLimit, null);
  });

  it('a replay of a create without a save tree is the first answer, marked as a replay', async () => {
    const key = `k-${randomUUID()}`;
    const args = { dataModelId: CUSTOMERS, system: 'Copilot', idempotencyKey: key, formValues: values({ Name: `Replay ${key}` }) };
    const first = await submit(args);
    const again = await submit(args);
    assertReplayOf(again, first);
    assert.equal(structured(again).system, 'Copilot');
    assert.equal(structured(again).endpoint, null);
  });

  it('a repeated idempotency key returns the first outcome; the key for another request is refused', async () => {
    const key = `k-${randomUUID()}`;
    const args = { dataModelId: CUSTOMERS, system: 'ChatGPT', idempotencyKey: key, formValues: values({ Name: `Idem ${key}` }) };
    const first = structured(await submit(args));
    const again = structured(await submit(args));
    assert.equal(again.replayed, true);
    assert.equal(again.id, first.id);
    assert.equal(again.submissionId, first.submissionId);
    assert.equal(again.status, 'succeeded');
    const found = structured(await call(gw, 'query_entities', { dataModelId: CUSTOMERS,
      queryParameterGroups: [{ parameters: [{ propertyName: 'Name', operator: 'EqualTo', value: `Idem ${key}`, valueType: 'string' }] }] }));
    assert.equal(found.entities.length, 1);
    const text = errorText(await submit({ ...args, formValues: values({ Name: 'Other' }) }));
    assert.match(text, new RegExp(`^Invalid argument 'idempotencyKey': '${key}' was already used for a different submission \\(Create of Customers ${first.id} at `));
  });

  describe('validation errors: nothing is written', () => {
    const order = sampleData('Orders').find((o) => o.OrderNumber === 'SO-1004');
    const cases = [
      ['an unknown key', { dataModelId: ORDERS, id: order.id, formValues: values({ Colour: 'red' }) },
        /^Invalid argument 'formValues\[0\]\.key': 'Colour' is not a field of this form; the fields of the Orders form are: OrderNumber, Customer, SalesRep, OrderDate, DueDate, Status, Amount, Quantity, WarehouseId\.$/],
      ['a read-only key', { dataModelId: ORDERS, id: order.id, formValues: values({ Status: 'Open', CalculatedOrderId: 'x' }) },
        /^Invalid argument 'formValues\[1\]\.key': 'CalculatedOrderId' is read-only \(the gateway and its save actions set it\); the fields of the Orders form are: /],
      ['an Inbound reference', { dataModelId: ORDERS, id: order.id, formValues: values({ OrderLines: 'x' }) },
        /^Invalid argument 'formValues\[0\]\.key': 'OrderLines' is a list of related records \(an Inbound reference\) and holds no value of its own; /],
      ['a key given twice', { dataModelId: ORDERS, id: order.id, formValues: [...values({ Status: 'Open' }), ...values({ status: 'Draft' })] },
        /^Invalid argument 'formValues\[1\]\.key': 'Status' is given twice \(also formValues\[0\]\); give each field once\.$/],
      ['a value of the wrong type', { dataModelId: ORDERS, id: order.id, formValues: values({ Status: 'Open', Quantity: '2.5' }) },
        /^Invalid argument 'formValues\[1\]\.value': got "2\.5"; Quantity is Int, so allowed: a whole number from -2147483648 to 2147483647, or null\.$/],
      ['a date that is no date', { dataModelId: ORDERS, id: order.id, formValues: values({ DueDate: '2024-02-30' }) },
        /^Invalid argument 'formValues\[0\]\.value': got "2024-02-30"; DueDate is Date, so allowed: a date written YYYY-MM-DD/],
      ['a missing required value', { dataModelId: ORDER_LINES, formValues: values({ SKU: 'X-9' }) },
        /^Invalid argument 'formValues': a new OrderLines record needs a value for every required field; missing: Order\.$/],
      ['a required value cleared', { dataModelId: ORDERS, id: order.id, formValues: values({ OrderNumber: '' }) },
        /^Invalid argument 'formValues\[0\]\.value': 'OrderNumber' is required and cannot be cleared; give a value\.$/],
      ['a reference to an entity that does not exist', { dataModelId: ORDERS, id: order.id,
        formValues: values({ Status: 'Open', Customer: '00000000-0000-4000-8000-0000000000aa' }) },
        /^Invalid argument 'formValues\[1\]\.value': there is no Customers entity with id '00000000-0000-4000-8000-0000000000aa'; find the entity with lookup_by_keyword or query_entities and give its id\.$/],
      ['a record that does not exist', { dataModelId: ORDERS, id: '00000000-0000-4000-8000-0000000000bb', formValues: values({ Status: 'Open' }) },
        /^Invalid argument 'id': there is no Orders entity with id '00000000-0000-4000-8000-0000000000bb'; leave id out to create a record\.$/],
      ['an unknown system', { dataModelId: ORDERS, id: order.id, system: 'Gemini', formValues: values({ Status: 'Open' }) },
        /system/],
    ];
    for (const [what, args, want] of cases) {
      it(`refuses ${what}`, async () => {
        const text = errorText(await submit(args));
        assert.match(text, want);
        const e = await entity(gw, ORDERS, order.id);
        assert.equal(e.status, order.Status);
        assert.equal(e.quantity ?? null, order.Quantity ?? null);
        const f = structured(await form({ dataModelId: ORDERS, format: 'Json', id: order.id }));
        assert.equal(f.lastSubmission, null);
      });
    }

    it('refuses a model the caller may only read', async () => {
      const text = errorText(await submit({ dataModelId: ORDERS, id: order.id, formValues: values({ Status: 'Open' }) }, TOKENS.auditor));
      assert.match(text, /^Invalid argument 'dataModelId': you may read Orders records but not create or modify them/);
    });
  });
});
