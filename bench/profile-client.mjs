// SPDX-License-Identifier: AGPL-3.0-or-later
// One keep-alive client for bench/profile: opens an MCP session over
// HTTP/1.1, then sends N copies of one JSON-RPC message, one at a time on
// the same connection, and checks that every answer is a 200 whose body is
// the first answer's. Prints the number of answers received.
//
// Usage: node bench/profile-client.mjs PORT N METHOD
//   METHOD: get_data_models | tools/list | ping, or another tool's name
//   called with the arguments in PROFILE_ARGUMENTS (JSON)
import net from "node:net";

const [port, count, method] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
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
sock.write(request(init));
const r1 = await next();
const sid = /mcp-session-id: *(\S+)/i.exec(r1.head)?.[1];
if (r1.status !== 200 || !sid) throw new Error(`initialize: ${r1.status}`);
sock.write(request('{"jsonrpc":"2.0","method":"notifications/initialized"}', sid));
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
