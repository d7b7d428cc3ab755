// SPDX-License-Identifier: AGPL-3.0-or-later
// An MCP client transport over WebSocket with the `ws` package: subprotocol
// `mcp`, one JSON-RPC message per text frame. It implements the SDK's
// Transport interface (start, send, close, onmessage, onclose, onerror), so
// the SDK's own Client drives the gateway over it. The SDK ships no
// WebSocket transport that can send an Authorization header.
import WebSocket from 'ws';

export class WsClientTransport {
  constructor(url, { headers = {}, protocols = ['mcp'], options = {} } = {}) {
    this.url = url;
    this.headers = headers;
    this.protocols = protocols;
    this.options = options; // more options of the ws package (ca, ...)
    this.socket = null;
    this.closeCode = null;
  }

  start() {
    if (this.socket) throw new Error('WsClientTransport already started');
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url, this.protocols, { ...this.options, headers: this.headers });
      this.socket = ws;
      let open = false;
      ws.on('open', () => {
        open = true;
        if (ws.protocol !== 'mcp') {
          reject(new Error(`server chose subprotocol '${ws.protocol}', not 'mcp'`));
          ws.terminate();
          return;
        }
        resolve();
      });
      ws.on('unexpected-response', (_req, res) => {
        reject(new Error(`WebSocket upgrade refused with HTTP ${res.statusCode}`));
        res.resume();
        ws.terminate();
      });
      ws.on('error', (err) => {
        if (!open) reject(err);
        this.onerror?.(err);
      });
      ws.on('message', (data, isBinary) => this.receive(data, isBinary));
      ws.on('close', (code) => {
        this.closeCode = code;
        this.onclose?.();
      });
    });
  }

  receive(data, isBinary) {
    if (isBinary) {
      this.onerror?.(new Error('the server sent a binary frame'));
      return;
    }
    let msg;
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch (err) {
      this.onerror?.(err);
      return;
    }
    this.onmessage?.(msg);
  }

  send(message) {
    return new Promise((resolve, reject) => {
      if (!this.socket || this.socket.readyState !== WebSocket.OPEN) {
        reject(new Error('Not connected'));
        return;
      }
      this.socket.send(JSON.stringify(message), { binary: false }, (err) => (err ? reject(err) : resolve()));
    });
  }

  // Resolves once the close handshake has finished (or the socket is gone).
  close() {
    const ws = this.socket;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      ws.once('close', () => resolve());
      if (ws.readyState === WebSocket.OPEN) ws.close(1000, 'client done');
      else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    });
  }
}
