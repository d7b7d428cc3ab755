// SPDX-License-Identifier: AGPL-3.0-or-later
// The mock upstream of tests/upstream/ for integration tests: a test CA and
// server certificate made with openssl, the upstream started on HTTP and
// HTTPS in this process, and helpers to script it and read its request log.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { startUpstream } from '../../upstream/server.mjs';

export { defaultCredentials, sampleOrder } from '../../upstream/server.mjs';

// Writes ca.pem, cert.pem and key.pem into dir: a CA, and a certificate
// for 127.0.0.1 and localhost that it signed.
export function makeTestCa(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const run = (args) => execFileSync('openssl', args, { stdio: 'pipe', cwd: dir });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  run(['req', '-x509', ...ec, '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2',
    '-subj', '/CN=datagate test CA', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  run(['req', ...ec, '-keyout', 'key.pem', '-out', 'server.csr', '-subj', '/CN=localhost']);
  fs.writeFileSync(path.join(dir, 'ext.cnf'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  run(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial',
    '-out', 'cert.pem', '-days', '2', '-extfile', 'ext.cnf']);
  return { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') };
}

// Starts the mock upstream; with tlsDir also on HTTPS with a fresh test CA.
export async function startMock({ tlsDir, credentials } = {}) {
  const pki = tlsDir ? makeTestCa(tlsDir) : null;
  const tls = pki ? { cert: fs.readFileSync(pki.cert), key: fs.readFileSync(pki.key) } : undefined;
  const started = await startUpstream({ tls, credentials });
  return { ...started, pki, base: `http://127.0.0.1:${started.port}`, tlsBase: pki ? `https://127.0.0.1:${started.tlsPort}` : null };
}

// Requests the mock saw for path (and method), in order.
export function requestsTo(mock, pathname, method) {
  return mock.upstream.log.filter((r) => r.path === pathname && (!method || r.method === method));
}
