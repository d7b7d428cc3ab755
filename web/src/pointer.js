// SPDX-License-Identifier: AGPL-3.0-or-later
// JSON pointers (RFC 6901) into the configuration files: the loader names
// every problem by one, and the page addresses actions by them.

export function parse(ptr) {
  if (ptr === '' || ptr === '/') return [];
  return ptr.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export function join(base, ...keys) {
  return base + keys.map((k) => '/' + String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

export function get(doc, ptr) {
  let v = doc;
  for (const k of parse(ptr)) {
    if (v == null) return undefined;
    v = v[k];
  }
  return v;
}

// The parent container and the last key of ptr.
export function parent(ptr) {
  const i = ptr.lastIndexOf('/');
  return [ptr.slice(0, i), ptr.slice(i + 1)];
}

export function set(doc, ptr, value) {
  const [up, key] = parent(ptr);
  const container = get(doc, up);
  container[key] = value;
}

export function remove(doc, ptr) {
  const [up, key] = parent(ptr);
  const container = get(doc, up);
  if (Array.isArray(container)) container.splice(Number(key), 1);
  else delete container[key];
}
