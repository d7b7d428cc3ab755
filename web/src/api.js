// SPDX-License-Identifier: AGPL-3.0-or-later
// The JSON API under /admin/api/ (docs/admin.md). The bearer token is sent
// in the Authorization header only; it is kept in the tab's sessionStorage.

const KEY = 'datagate-admin-token';

export function token() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

async function call(method, path, body, headers = {}) {
  const h = { Accept: 'application/json', ...headers };
  const t = token();
  if (t) h.Authorization = 'Bearer ' + t;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const res = await fetch('/admin/api/' + path, {
    method,
    headers: h,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = { error: `the gateway answered ${res.status} without JSON` };
  }
  return { status: res.status, data, etag: res.headers.get('ETag') };
}

export const info = () => call('GET', 'info');
export const config = () => call('GET', 'config');
export const check = (files) => call('POST', 'check', { files });
export const save = (files, version) => call('PUT', 'config', { files }, { 'If-Match': `"${version}"` });
export const test = (body) => call('POST', 'test', body);
