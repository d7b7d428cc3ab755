// SPDX-License-Identifier: AGPL-3.0-or-later
// Raw sockets for the tests that need exact bytes on the wire: HTTP/1.1
// requests and responses parsed by hand, and WebSocket frames built and
// parsed by hand (masked or not, fragmented, invalid UTF-8, ...).
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';

const READ_TIMEOUT_MS = 15000;
const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

// A TCP connection that buffers what it receives and remembers how it
// ended: `end` (the peer's FIN), `error` (a reset, say) and `closed`.
export class RawConn {
  static connect(port, host = '127.0.0.1') {
    return new Promise((resolve, reject) => {
      const sock = net.connect({ port, host });
      sock.once('connect', () => resolve(new RawConn(sock)));
      sock.once('error', reject);
    });
  }

  constructor(sock) {
    this.sock = sock;
    this.buf = Buffer.alloc(0);
    this.ended = false;
    this.closed = false;
    this.error = null;
    this.waiters = [];
    sock.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake();
    });
    sock.on('end', () => {
      this.ended = true;
      this.wake();
    });
    sock.on('error', (err) => {
      this.error = err;
      this.wake();
    });
    sock.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  write(data) {
    return new Promise((resolve, reject) => this.sock.write(data, (err) => (err ? reject(err) : resolve())));
  }

  // Waits until parse(buffer) returns a value (consuming `used` bytes),
  // or fails when the connection ends first or the time runs out.
  until(parse, what, ms = READ_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      const check = () => {
        let r;
        try {
          r = parse(this.buf, this.ended || this.closed);
        } catch (err) {
          return done(err);
        }
        if (r) {
          this.buf = this.buf.subarray(r.used);
          return done(null, r.value);
        }
        if (this.ended || this.closed)
          return done(new Error(`connection ended while waiting for ${what} (${this.buf.length} bytes unread: ${JSON.stringify(this.buf.toString('latin1').slice(0, 200))})`));
      };
      const timer = setTimeout(() => done(new Error(`timed out waiting for ${what}`)), ms);
      const done = (err, value) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        err ? reject(err) : resolve(value);
      };
      this.waiters.push(check);
      check();
    });
  }

  readResponse(opts = {}) {
    return this.until((buf, ended) => parseResponse(buf, ended, opts), 'an HTTP response');
  }

  // Resolves once the server has closed the connection; `clean` tells
  // whether it ended with a FIN rather than a reset.
  waitClosed(ms = READ_TIMEOUT_MS) {
    return this.until(
      (buf, ended) => (this.closed || (ended && this.error === null) ? { used: 0, value: true } : null),
      'the connection to close',
      ms,
    ).then(() => ({ clean: this.ended && this.error === null, error: this.error }));
  }

  destroy() {
    this.sock.destroy();
  }
}

// ---- HTTP/1.1 ------------------------------------------------------------

export function request(method, path, { headers = {}, body = '', host = 'localhost' } = {}) {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${host}`];
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const names = Object.keys(headers).map((h) => h.toLowerCase());
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  if (b.length > 0 && !names.includes('content-length') && !names.includes('transfer-encoding'))
    lines.push(`Content-Length: ${b.length}`);
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n'), b]);
}

export function chunked(parts) {
  const out = parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`);
  return out.join('') + '0\r\n\r\n';
}

function parseChunked(buf, start) {
  const parts = [];
  let pos = start;
  for (;;) {
    const eol = buf.indexOf('\r\n', pos);
    if (eol < 0) return null;
    const size = parseInt(buf.subarray(pos, eol).toString('latin1').split(';')[0], 16);
    if (Number.isNaN(size)) throw new Error('bad chunk size in response');
    if (size === 0) {
      const end = buf.indexOf('\r\n\r\n', eol);
      if (end < 0 && buf.length < eol + 4) return null;
      return { body: Buffer.concat(parts), end: end < 0 ? eol + 4 : end + 4 };
    }
    if (buf.length < eol + 2 + size + 2) return null;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
}

// Parses one response at the start of buf; returns { used, value } or null
// when more bytes are needed. opts.head: the request was HEAD.
export function parseResponse(buf, ended, opts = {}) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.([01]) (\d{3}) ?(.*)$/.exec(lines[0]);
  if (!m) throw new Error(`bad status line: ${JSON.stringify(lines[0])}`);
  const headers = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const status = Number(m[2]);
  const start = end + 4;
  const res = { status, reason: m[3], headers, body: Buffer.alloc(0) };
  let used = start;
  if (status < 200 || status === 204 || status === 304 || opts.head) {
    used = start;
  } else if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
    const c = parseChunked(buf, start);
    if (!c) return null;
    res.body = c.body;
    used = c.end;
  } else if (headers['content-length'] !== undefined) {
    const len = Number(headers['content-length']);
    if (buf.length < start + len) return null;
    res.body = buf.subarray(start, start + len);
    used = start + len;
  } else {
    if (!ended) return null;
    res.body = buf.subarray(start);
    used = buf.length;
  }
  res.text = res.body.toString('utf8');
  return { used, value: res };
}

export function json(res) {
  try {
    return JSON.parse(res.text);
  } catch {
    throw new Error(`response ${res.status} is not JSON: ${JSON.stringify(res.text.slice(0, 300))}`);
  }
}

// ---- WebSocket -----------------------------------------------------------

export function wsAcceptFor(key) {
  return createHash('sha1').update(key + WS_GUID).digest('base64');
}

export function upgradeRequest(path, { key = randomBytes(16).toString('base64'), protocol = 'mcp', headers = {} } = {}) {
  const h = {
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Key': key,
    'Sec-WebSocket-Version': '13',
    ...headers,
  };
  if (protocol !== null) h['Sec-WebSocket-Protocol'] = protocol;
  return { bytes: request('GET', path, { headers: h }), key };
}

// One frame as a client sends it: masked unless mask is false.
export function frame(opcode, payload = Buffer.alloc(0), { fin = true, mask = true, rsv = 0 } = {}) {
  const data = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
  const len = data.length;
  const head = [((fin ? 0x80 : 0) | (rsv << 4) | opcode) & 0xff];
  const maskBit = mask ? 0x80 : 0;
  if (len < 126) head.push(maskBit | len);
  else if (len < 65536) head.push(maskBit | 126, len >> 8, len & 0xff);
  else {
    head.push(maskBit | 127, 0, 0, 0, 0);
    head.push((len >>> 24) & 0xff, (len >>> 16) & 0xff, (len >>> 8) & 0xff, len & 0xff);
  }
  if (!mask) return Buffer.concat([Buffer.from(head), data]);
  const key = randomBytes(4);
  const masked = Buffer.alloc(len);
  for (let i = 0; i < len; i++) masked[i] = data[i] ^ key[i & 3];
  return Buffer.concat([Buffer.from(head), key, masked]);
}

export function closePayload(code, reason = '') {
  const b = Buffer.alloc(2 + Buffer.byteLength(reason));
  b.writeUInt16BE(code, 0);
  b.write(reason, 2);
  return b;
}

// Parses one server frame at the start of buf (servers never mask).
export function parseFrame(buf) {
  if (buf.length < 2) return null;
  const fin = (buf[0] & 0x80) !== 0;
  const opcode = buf[0] & 0x0f;
  const masked = (buf[1] & 0x80) !== 0;
  let len = buf[1] & 0x7f;
  let pos = 2;
  if (len === 126) {
    if (buf.length < 4) return null;
    len = buf.readUInt16BE(2);
    pos = 4;
  } else if (len === 127) {
    if (buf.length < 10) return null;
    len = Number(buf.readBigUInt64BE(2));
    pos = 10;
  }
  if (masked) throw new Error('the server sent a masked frame');
  if (buf.length < pos + len) return null;
  const payload = buf.subarray(pos, pos + len);
  const value = { fin, opcode, payload };
  if (opcode === 8 && len >= 2) {
    value.code = payload.readUInt16BE(0);
    value.reason = payload.subarray(2).toString('utf8');
  }
  if (opcode === 1) value.text = payload.toString('utf8');
  return { used: pos + len, value };
}

// A WebSocket spoken by hand over a RawConn.
export class RawWs {
  static async open(port, path, opts = {}) {
    const conn = await RawConn.connect(port);
    const { bytes, key } = upgradeRequest(path, opts);
    await conn.write(bytes);
    const res = await conn.readResponse();
    if (res.status !== 101) throw new Error(`upgrade refused: ${res.status} ${res.text}`);
    if (res.headers['sec-websocket-accept'] !== wsAcceptFor(key)) throw new Error('bad Sec-WebSocket-Accept');
    return new RawWs(conn, res);
  }

  constructor(conn, res) {
    this.conn = conn;
    this.response = res;
  }

  send(opcode, payload, opts) {
    return this.conn.write(frame(opcode, payload, opts));
  }

  sendText(text) {
    return this.send(1, Buffer.from(text));
  }

  readFrame() {
    return this.conn.until((buf) => parseFrame(buf), 'a WebSocket frame');
  }

  // Reads frames until one with this opcode arrives (skipping pings).
  async readUntil(opcode) {
    for (;;) {
      const f = await this.readFrame();
      if (f.opcode === opcode) return f;
      if (f.opcode !== 9) throw new Error(`expected opcode ${opcode}, got ${f.opcode} ${f.text ?? ''}`);
    }
  }

  async rpc(msg) {
    await this.sendText(JSON.stringify(msg));
    const f = await this.readUntil(1);
    return JSON.parse(f.text);
  }
}
