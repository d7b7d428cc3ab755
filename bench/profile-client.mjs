// SPDX-License-Identifier: AGPL-3.0-or-later
// One keep-alive client for bench/profile: opens an MCP session over
// HTTP/1.1 (or a WebSocket), then sends N copies of one JSON-RPC message,
// one at a time on the same connection, and checks that every answer is a
// 200 (a text message) whose body is the first answer's. Prints the number
// of answers received.
//
// Usage: node bench/profile-client.mjs PORT N METHOD [http|ws]
//   METHOD: get_data_models | tools/list | ping, or another tool's name
//   called with the arguments in PROFILE_ARGUMENTS (JSON)
import crypto from "node:crypto";
import net from "node:net";

const [port, count, method] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
const transport = process.argv[5] ?? "http";
const token = process.env.DATAGATE_TOKEN_ADMIN ?? "dev-admin-token";
const bodies = {
  "get_data_models":
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_data_models","arguments":{}}}',
  "tools/list": '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
  "ping": '{"jsonrpc":"2.0","id":4,"method":"ping"}',
};
if (!(method in bodies) && process.env.PROFILE_ARGUMENTS) {
  bodies[method] = JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call",
    params: { name: method, arguments: JSON.parse(process.env.PROFILE_ARGUMENTS) } });
}
if (!(method in bodies)) throw new Error(`unknown method ${method}`);

function request(body, sid) {
  return (
    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
    "Accept: application/json, text/event-stream\r\n" +
    `Authorization: Bearer ${token}\r\nMCP-Protocol-Version: 2025-06-18\r\n` +
    (sid ? `Mcp-Session-Id: ${sid}\r\n` : "") +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

const sock = net.connect(port, "127.0.0.1");
sock.setNoDelay(true);
let pending = Buffer.alloc(0);
let waiter = null;
sock.on("data", (d) => {
  pending = Buffer.concat([pending, d]);
  if (waiter) waiter();
});
sock.on("error", (e) => {
  console.error(e.message);
  process.exit(1);
});

// The next whole response: { status, headers, body }.
function next() {
  return new Promise((resolve) => {
    const tryParse = () => {
      const end = pending.indexOf("\r\n\r\n");
      if (end < 0) return false;
      const head = pending.subarray(0, end).toString();
      const m = /content-length: *(\d+)/i.exec(head);
      const len = m ? Number(m[1]) : 0;
      if (pending.length < end + 4 + len) return false;
      const body = pending.subarray(end + 4, end + 4 + len).toString();
      pending = pending.subarray(end + 4 + len);
      waiter = null;
      resolve({ status: Number(head.split(" ")[1]), head, body });
      return true;
    };
    if (!tryParse()) waiter = tryParse;
  });
}

const init =
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",' +
  '"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}';
const initialized = '{"jsonrpc":"2.0","method":"notifications/initialized"}';

// A client's text frame: FIN, opcode 1, masked (RFC 6455 5.3).
function frame(text) {
  const payload = Buffer.from(text);
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x81, 0x80 | n]) : Buffer.from([0x81, 0x80 | 126, n >> 8, n & 255]);
  const mask = crypto.randomBytes(4);
  const body = Buffer.alloc(n);
  for (let i = 0; i < n; i++) body[i] = payload[i] ^ mask[i & 3];
  return Buffer.concat([head, mask, body]);
}

// The next whole server message (unmasked, unfragmented), as text.
function nextMessage() {
  return new Promise((resolve) => {
    const tryParse = () => {
      if (pending.length < 2) return false;
      let len = pending[1] & 127;
      let at = 2;
      if (len === 126) {
        if (pending.length < 4) return false;
        len = pending.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (pending.length < 10) return false;
        len = Number(pending.readBigUInt64BE(2));
        at = 10;
      }
      if (pending.length < at + len) return false;
      const op = pending[0] & 15;
      const text = pending.subarray(at, at + len).toString();
      pending = pending.subarray(at + len);
      if (op !== 1) return tryParse(); // pings and the like
      waiter = null;
      resolve(text);
      return true;
    };
    if (!tryParse()) waiter = tryParse;
  });
}

if (transport === "ws") {
  sock.write(
    "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
      `Sec-WebSocket-Protocol: mcp\r\nAuthorization: Bearer ${token}\r\n\r\n`,
  );
  const up = await next();
  if (up.status !== 101) throw new Error(`upgrade: ${up.status}`);
  sock.write(frame(init));
  if (!(await nextMessage()).includes('"result"')) throw new Error("initialize");
  sock.write(frame(initialized));
  const msg = frame(bodies[method]);
  let first = null;
  let n = 0;
  for (; n < count; n++) {
    sock.write(msg);
    const r = await nextMessage();
    if ((first !== null && r !== first) || r.includes('"isError":true') || r.includes('"error"'))
      throw new Error(`answer ${n}: ${r.slice(0, 200)}`);
    first ??= r;
  }
  sock.end();
  console.log(n);
  process.exit(0);
}

sock.write(request(init));
const r1 = await next();
const sid = /mcp-session-id: *(\S+)/i.exec(r1.head)?.[1];
if (r1.status !== 200 || !sid) throw new Error(`initialize: ${r1.status}`);
sock.write(request(initialized, sid));
if ((await next()).status !== 202) throw new Error("notifications/initialized");
const req = request(bodies[method], sid);
let first = null;
let n = 0;
for (; n < count; n++) {
  sock.write(req);
  const r = await next();
  if (r.status !== 200 || (first !== null && r.body !== first) || r.body.includes('"isError":true'))
    throw new Error(`answer ${n}: ${r.status} ${r.body.slice(0, 200)}`);
  first ??= r.body;
}
sock.end();
console.log(n);
