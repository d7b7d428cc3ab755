// SPDX-License-Identifier: AGPL-3.0-or-later
// Reading the configuration files as the page shows them.
import * as P from './pointer.js';

export function models(files) {
  return files['models.json']?.models || [];
}

export function modelByName(files, name) {
  return models(files).find((m) => m.name === name || m.id === name);
}

// The lists a Get Session Values extraction may target: Inbound references.
export function inboundLists(model) {
  return (model?.properties || []).filter((p) => p.reference?.direction === 'Inbound');
}

export function listModel(files, model, listName) {
  const p = (model?.properties || []).find((x) => x.name === listName);
  return p?.reference?.target ? modelByName(files, p.reference.target) : undefined;
}

export const isGsv = (a) => a?.type === 'GetSessionValues';

// The extraction kind follows its toggles, as the editor shows it.
export function kind(x) {
  if (x.useMultipleLists) return 'multiple';
  if (x.mapToChildren) return 'collection';
  return 'basic';
}

// The tree of an endpoint in execution order: root, pre-child actions
// (each inner save followed by its own Get Session Values actions), the
// Child Saves separator, post-child actions.
export function steps(endpoint, base) {
  const root = endpoint.save;
  const rootPath = P.join(base, 'save');
  const pre = [], post = [];
  (root?.actions || []).forEach((a, i) => {
    const path = P.join(rootPath, 'actions', i);
    const inner = (a.actions || []).map((b, j) => ({ action: b, path: P.join(path, 'actions', j), depth: 2 }));
    (a.afterChildConfigs ? post : pre).push({ action: a, path, depth: 1 }, ...inner);
  });
  return { root: root ? { action: root, path: rootPath, depth: 0 } : null, pre, post };
}

export function operations(a) {
  const ops = a.operations || ['Create', 'Update'];
  return ops;
}

// The session values offered to the action at path: every place the
// endpoint runs (on its own, as a child) from the gateway's own rules.
export function sessionValues(scopes, endpointName, path) {
  const scope = scopes?.[endpointName];
  const out = [];
  for (const place of scope?.places || []) {
    const step = place.steps.find((s) => s.path === path);
    for (const v of step?.sessionValues || []) {
      if (!out.some((o) => o.insert === v.insert))
        out.push({ ...v, place: place.parent ? `as a child of ${place.parent} (${place.list})` : 'on its own' });
    }
  }
  return out;
}
