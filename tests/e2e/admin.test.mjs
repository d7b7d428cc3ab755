// SPDX-License-Identifier: AGPL-3.0-or-later
// The admin page in a real browser (Debian's chromium, headless, driven by
// playwright-core): sign in, the On Save tree of the sample order edit with
// its Child Saves separator, a Get Session Values action with a Multiple
// Lists extraction added and saved, its value offered by a child action's
// property picker, an invalid change refused beside its field, and the
// Test panel's dry run.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { Gateway, SOURCE_DIR, TOKENS, makeConfig, readJson, runBinary } from '../integration/lib/gateway.mjs';

const { chromium } = await import(
  pathToFileURL(path.join(SOURCE_DIR, 'web/node_modules/playwright-core/index.mjs')).href
);

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe('admin page', () => {
  let conf, gw, browser, page, profile;
  const pageErrors = [];
  before(async () => {
    conf = makeConfig({ server: { adminWebDir: path.join(SOURCE_DIR, 'web/dist') } });
    gw = await Gateway.start({ config: conf });
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'datagate-e2e-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 860 },
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(15000);
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // Nothing may come from anywhere but the gateway.
    await page.route('**/*', (route) =>
      route.request().url().startsWith(gw.origin) ? route.continue() : route.abort(),
    );
  });
  after(async () => {
    await browser?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
    await gw?.stop();
    conf?.remove();
    assert.deepEqual(pageErrors, []);
  });

  const card = (title) => page.locator('li.action').filter({ has: page.locator('.title', { hasText: title }) });
  const menu = async (title, item) => {
    await card(title).getByRole('button', { name: /^Actions of / }).click();
    await card(title).getByRole('menuitem', { name: item }).click();
  };
  const editor = () => page.locator('.dialog.editor');

  test('sign in with a bearer token', async () => {
    await page.goto(`${gw.origin}/admin`);
    await page.getByLabel('Bearer token').fill(TOKENS.sales);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'administration' }).waitFor();
    await page.getByLabel('Bearer token').fill(TOKENS.admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'On Save' }).waitFor();
  });

  test('behind a proxy that adds the Authorization header the page does not ask', async () => {
    const other = await browser.newPage();
    await other.route('**/*', (route) =>
      route.request().url().startsWith(gw.origin) ? route.continue() : route.abort(),
    );
    await other.setExtraHTTPHeaders({ Authorization: `Bearer ${TOKENS.admin}` });
    await other.goto(`${gw.origin}/admin`);
    await other.getByRole('heading', { name: 'On Save' }).waitFor();
    assert.equal(await other.getByLabel('Bearer token').count(), 0);
    await other.close();
  });

  test('the order edit tree in execution order with the Child Saves separator', async () => {
    await page.getByRole('button', { name: 'OrderEdit', exact: true }).click();
    const items = await page.locator('ol.tree > li').evaluateAll((els) =>
      els.map((e) => (e.classList.contains('separator') ? '--' : e.querySelector('.title')?.textContent ?? 'child')),
    );
    assert.deepEqual(items, ['Begin Order Edit', 'Extract Edit Session', '--', 'child', 'Save Line Changes']);
    await page.getByRole('separator', { name: 'Child Saves' }).waitFor();
    assert.match(await page.locator('.child-card').textContent(), /OrderLines.*OrderLineEdit/);
    assert.deepEqual(await card('Begin Order Edit').locator('.chip').allTextContents(), ['Update']);
    const shot = process.env.DG_ADMIN_SCREENSHOT;
    if (shot) await page.screenshot({ path: shot });
  });

  test('the child picker does not offer a value nobody sets yet', async () => {
    await page.getByRole('button', { name: 'OrderLineEdit', exact: true }).click();
    await menu('Set Line Quantity', 'Edit');
    await editor().getByRole('button', { name: 'Insert a property into URL Path' }).click();
    const group = editor().getByRole('group', { name: 'Session Values' });
    await group.getByRole('button', { name: /\{SESSION:LineItemId\}/ }).waitFor();
    assert.equal(await group.getByRole('button', { name: /CalculatedLineItemId/ }).count(), 0);
    await editor().getByRole('button', { name: 'Close the list' }).click();
    await editor().getByRole('button', { name: 'Close', exact: true }).click();
    await editor().waitFor({ state: 'detached' });
  });

  test('add a Get Session Values action with a Multiple Lists extraction and save it', async () => {
    const file = conf.file('endpoints.json');
    const before = fs.readFileSync(file, 'utf8');
    await page.getByRole('button', { name: 'OrderEdit', exact: true }).click();
    await menu('Begin Order Edit', 'Add Action');
    const choose = page.getByRole('dialog', { name: 'Choose API Call Action' });
    await choose.getByRole('button', { name: 'Save Action' }).waitFor();
    await choose.getByRole('button', { name: 'Get Session Values Action' }).click();
    const ed = editor();
    await ed.getByLabel('Title', { exact: true }).fill('Extract Line Pairs');
    await ed.getByRole('button', { name: 'Add Extraction' }).click();
    await ed.getByRole('switch', { name: 'Use Multiple Lists' }).check();
    await ed.getByLabel('Target List').selectOption('OrderLines');
    await ed.getByLabel('Model Property', { exact: true }).selectOption('CalculatedLineItemId');
    await ed.getByLabel('Connector Property', { exact: true }).fill('calculated.id');
    await ed.getByLabel('Model Match Property').selectOption('SKU');
    await ed.getByLabel('Connector Match Property').fill('original.sku');
    await ed.getByLabel('Prefix', { exact: true }).fill('original');
    await ed.getByLabel('Path', { exact: true }).fill('calculatedOrder.originalLines[*]');
    await ed.getByRole('button', { name: 'Add List' }).click();
    await ed.getByLabel('Prefix', { exact: true }).nth(1).fill('calculated');
    await ed.getByLabel('Path', { exact: true }).nth(1).fill('calculatedOrder.lineItems[*]');
    // Map to Children's own field is not shown for Multiple Lists.
    assert.equal(await ed.getByLabel('Connector List Property').count(), 0);
    await ed.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Saved and reloaded' }).waitFor();
    await ed.waitFor({ state: 'detached' });

    const items = await page.locator('ol.tree > li .title').allTextContents();
    assert.deepEqual(items.slice(0, 3), ['Begin Order Edit', 'Extract Line Pairs', 'Extract Edit Session']);
    assert.notEqual(fs.readFileSync(file, 'utf8'), before);
    assert.equal(fs.readFileSync(file + '.prev', 'utf8'), before);
    const added = readJson(file).endpoints[0].save.actions[0];
    assert.deepEqual(added, {
      type: 'GetSessionValues',
      title: 'Extract Line Pairs',
      extractions: [
        {
          modelProperty: 'CalculatedLineItemId',
          connectorProperty: 'calculated.id',
          useMultipleLists: true,
          connectorLists: [
            { prefix: 'original', path: 'calculatedOrder.originalLines[*]' },
            { prefix: 'calculated', path: 'calculatedOrder.lineItems[*]' },
          ],
          targetList: 'OrderLines',
          modelMatchProperty: 'SKU',
          connectorMatchProperty: 'original.sku',
        },
      ],
    });
    const check = await runBinary(['--check-config', conf.dir]);
    assert.equal(check.code, 0, check.stdout + check.stderr);
  });

  test("the new value is in a child action's picker under Session Values", async () => {
    await page.getByRole('button', { name: 'OrderLineEdit', exact: true }).click();
    await menu('Set Line Quantity', 'Edit');
    const ed = editor();
    const url = ed.getByLabel('URL Path', { exact: true });
    await url.focus();
    await url.press('End');
    await ed.getByRole('button', { name: 'Insert a property into URL Path' }).click();
    const group = ed.getByRole('group', { name: 'Session Values' });
    await group.getByRole('button', { name: /\{SESSION:CalculatedLineItemId\}/ }).click();
    assert.match(await url.inputValue(), /\{SESSION:CalculatedLineItemId\}$/);
    await ed.getByRole('button', { name: 'Close', exact: true }).click();
    await ed.waitFor({ state: 'detached' });
  });

  test('an invalid change shows the error beside the field and writes nothing', async () => {
    const file = conf.file('endpoints.json');
    const before = fs.readFileSync(file, 'utf8');
    await page.getByRole('button', { name: 'OrderEdit', exact: true }).click();
    await menu('Save Line Changes', 'Edit');
    const ed = editor();
    await ed.getByLabel('URL Path', { exact: true }).fill('/orders/{SESSION:LineItemId}/commit.json');
    await ed.getByRole('button', { name: 'Save', exact: true }).click();
    const field = ed.locator('.field', { has: page.getByLabel('URL Path', { exact: true }) });
    await field.locator('.field-errors').filter({ hasText: '{SESSION:LineItemId}' }).waitFor();
    assert.equal(await ed.getByLabel('URL Path', { exact: true }).getAttribute('aria-invalid'), 'true');
    assert.equal(fs.readFileSync(file, 'utf8'), before);
    await ed.getByRole('button', { name: 'Reset' }).click();
    assert.match(await ed.getByLabel('URL Path', { exact: true }).inputValue(), /\{CalculatedOrderId\}/);
    await ed.getByRole('button', { name: 'Close', exact: true }).click();
  });

  test('filters, reordering within a phase and deleting are saved to the file', async () => {
    const file = conf.file('endpoints.json');
    await page.getByRole('button', { name: 'OrderEdit', exact: true }).click();
    await menu('Save Line Changes', 'Filters');
    let ed = editor();
    await ed.getByRole('button', { name: 'Add Condition' }).click();
    await ed.getByLabel('Property', { exact: true }).selectOption('Status');
    await ed.getByLabel('Operator', { exact: true }).selectOption('!=');
    await ed.getByLabel('Value', { exact: true }).fill('Cancelled');
    await ed.getByRole('button', { name: 'Save', exact: true }).click();
    await ed.waitFor({ state: 'detached' });
    assert.deepEqual(readJson(file).endpoints[0].save.actions[2].filter, {
      match: 'All',
      conditions: [{ property: 'Status', operator: '!=', value: 'Cancelled' }],
    });
    assert.match(await card('Save Line Changes').locator('.chip.filter').textContent(), /Status != Cancelled/);

    // Post-child actions do not move into the pre-child phase.
    await menu('Extract Line Pairs', 'Move Down');
    await page.getByRole('status').filter({ hasText: "Moved 'Extract Line Pairs' down" }).waitFor();
    const titles = () => readJson(file).endpoints[0].save.actions.map((a) => a.title);
    assert.deepEqual(titles(), ['Extract Edit Session', 'Extract Line Pairs', 'Save Line Changes']);
    await menu('Extract Line Pairs', 'Move Down');
    await page.getByRole('alert').filter({ hasText: 'nothing to move' }).waitFor();
    assert.deepEqual(titles(), ['Extract Edit Session', 'Extract Line Pairs', 'Save Line Changes']);
    await menu('Extract Line Pairs', 'Move Up');
    await page.getByRole('status').filter({ hasText: "Moved 'Extract Line Pairs' up" }).waitFor();
    assert.deepEqual(titles(), ['Extract Line Pairs', 'Extract Edit Session', 'Save Line Changes']);

    page.once('dialog', (d) => d.accept());
    await menu('Extract Line Pairs', 'Delete');
    await page.getByRole('status').filter({ hasText: "Deleted 'Extract Line Pairs'" }).waitFor();
    assert.deepEqual(titles(), ['Extract Edit Session', 'Save Line Changes']);
    // Deleting the action that sets a value a child uses is refused, with the reason.
    page.once('dialog', (d) => d.accept());
    await menu('Extract Edit Session', 'Delete');
    const refused = page.getByRole('alert').filter({ hasText: 'nothing was written' });
    await refused.waitFor();
    assert.match(await refused.textContent(), /\{SESSION:LineItemId\}/);
    assert.deepEqual(titles(), ['Extract Edit Session', 'Save Line Changes']);
    await card('Extract Edit Session').waitFor();
  });

  test('a Save Action added after a post-child action stays post-child; a mapping takes a picked value', async () => {
    const file = conf.file('endpoints.json');
    await page.getByRole('button', { name: 'OrderEdit', exact: true }).click();
    await menu('Save Line Changes', 'Add Action');
    await page.getByRole('dialog', { name: 'Choose API Call Action' }).getByRole('button', { name: 'Save Action' }).click();
    const ed = editor();
    await ed.getByLabel('Title', { exact: true }).fill('Notify Warehouse');
    await ed.getByLabel('URL Path', { exact: true }).fill('/notify');
    assert.equal(await ed.getByRole('switch', { name: 'After Child Configs?' }).isChecked(), true);
    await ed.getByRole('button', { name: 'Add Mapping' }).click();
    await ed.getByLabel('Connector Property', { exact: true }).fill('edit.id');
    await ed.getByRole('button', { name: 'Insert a property into Value of mapping 1' }).click();
    await ed.getByRole('group', { name: 'Session Values' }).getByRole('button', { name: /\{SESSION:CalculatedOrderId\}/ }).click();
    await ed.getByRole('button', { name: 'Save', exact: true }).click();
    await ed.waitFor({ state: 'detached' });
    const added = readJson(file).endpoints[0].save.actions.at(-1);
    assert.deepEqual(added, {
      type: 'EndpointSave',
      title: 'Notify Warehouse',
      request: { method: 'POST', path: '/notify', mappings: [{ connectorProperty: 'edit.id', value: '{SESSION:CalculatedOrderId}' }] },
      afterChildConfigs: true,
    });
    const items = await page.locator('ol.tree > li').evaluateAll((els) =>
      els.map((e) => (e.classList.contains('separator') ? '--' : e.querySelector('.title')?.textContent ?? 'child')),
    );
    assert.deepEqual(items.slice(-3), ['child', 'Save Line Changes', 'Notify Warehouse']);
  });

  test('a save after someone else saved is refused; Reload shows their change', async () => {
    const file = conf.file('endpoints.json');
    await page.getByRole('button', { name: 'OrderEdit', exact: true }).click();
    await menu('Notify Warehouse', 'Edit');
    // Another administrator saves first, through the API.
    const headers = { Authorization: `Bearer ${TOKENS.admin}`, 'Content-Type': 'application/json' };
    const cur = await fetch(`${gw.origin}/admin/api/config`, { headers });
    const theirs = readJson(file);
    theirs.endpoints[0].description = 'changed by someone else';
    const put = await fetch(`${gw.origin}/admin/api/config`, {
      method: 'PUT',
      headers: { ...headers, 'If-Match': cur.headers.get('etag') },
      body: JSON.stringify({ files: { 'endpoints.json': theirs } }),
    });
    assert.equal(put.status, 200);
    const ed = editor();
    await ed.getByLabel('Title', { exact: true }).fill('Notify The Warehouse');
    await ed.getByRole('button', { name: 'Save', exact: true }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'changed since you loaded it' });
    await alert.waitFor();
    assert.deepEqual(readJson(file), theirs);
    await alert.getByRole('button', { name: 'Reload' }).click();
    await editor().waitFor({ state: 'detached' });
    await page.getByText('changed by someone else').waitFor();
    assert.equal(await card('Notify Warehouse').count(), 1);
  });

  test('models, Saved Queries and connectors are listed', async () => {
    await page.getByRole('button', { name: 'Data Models' }).click();
    await page.locator('details summary').filter({ has: page.locator('strong', { hasText: /^Orders$/ }) }).click();
    const row = page.getByRole('row').filter({ hasText: 'OrderLines' }).first();
    assert.match(await row.textContent(), /Reference.*Inbound OrderLines/);
    assert.match(await page.getByRole('row').filter({ hasText: 'OrderNumber' }).first().textContent(), /Order number/);
    await page.getByRole('button', { name: 'Saved Queries' }).click();
    await page.getByRole('cell', { name: 'LiveOrderStatus' }).waitFor();
    await page.getByRole('button', { name: 'Connectors' }).click();
    const erp = await page.getByRole('row').filter({ hasText: 'SampleErp' }).textContent();
    assert.match(erp, /bearer/);
    assert.doesNotMatch(await page.locator('main').textContent(), /DATAGATE_SAMPLE/);
    await page.getByRole('button', { name: 'Endpoints' }).click();
  });

  test('the menu and the editor work from the keyboard', async () => {
    await page.getByRole('button', { name: 'OrderEdit', exact: true }).click();
    await card('Save Line Changes').getByRole('button', { name: /^Actions of / }).focus();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Edit');
    await page.keyboard.press('Enter');
    const title = editor().getByLabel('Title', { exact: true });
    await title.waitFor();
    assert.equal(await title.evaluate((el) => el === document.activeElement), true);
    await page.keyboard.press('Escape');
    await editor().waitFor({ state: 'detached' });
  });

  test('the Test panel runs the tree dry and shows the trace', async () => {
    await page.getByRole('button', { name: 'OrderEdit', exact: true }).click();
    await page.getByRole('tab', { name: 'Tests' }).click();
    const panel = page.locator('section.test-panel');
    assert.equal(await panel.getByRole('switch', { name: /Dry Run/ }).isChecked(), true);
    const values = JSON.parse(await panel.getByLabel('Record Values (JSON)').inputValue());
    values.OrderNumber = 'SO-42';
    await panel.getByLabel('Record Values (JSON)').fill(JSON.stringify(values));
    await panel
      .getByLabel('Sample Answers (JSON array, one per call in order)')
      .fill(JSON.stringify([{ calculatedOrder: { id: 'c-7', lineItems: [] } }]));
    await panel.getByRole('button', { name: 'Run Dry' }).click();
    await panel.getByRole('status').filter({ hasText: 'Dry run: succeeded' }).waitFor();
    const requests = await panel.locator('.requests > li > code').allTextContents();
    assert.equal(requests.length, 3);
    assert.match(requests[0], /^POST http:\/\/127\.0\.0\.1:8091\/erp\/orders\/SO-42\/edits\/begin\.json$/);
    assert.match(requests[1], /\/edits\/c-7\/commit\.json$/);
    assert.match(requests[2], /\/erp\/notify$/);
    assert.deepEqual(JSON.parse(await panel.locator('.requests > li').nth(2).locator('pre').textContent()), {
      edit: { id: 'c-7' },
    });
    const trace = await panel.getByRole('table').textContent();
    assert.match(trace, /Extract Edit Session.*Child Saves: OrderLines.*Save Line Changes/);
    assert.match(trace, /CalculatedOrderId.*c-7/);
    await page.getByRole('tab', { name: 'Data Source' }).click();
  });
});
