// SPDX-License-Identifier: AGPL-3.0-or-later
// The Node.js side of bench/extract:
//
//   node bench/extract.mjs docs DIR PDF_MB DOCX_TEXT_MB
//       writes DIR/large.pdf (about PDF_MB megabytes) and DIR/large.docx
//       (about DOCX_TEXT_MB megabytes of text), made deterministically by
//       tests/upstream/documents.mjs: the same bytes on every run.
//   node bench/extract.mjs serve DIR
//       serves every file of DIR at /files/bench/<name> with the mock
//       upstream of tests/upstream/ and prints {"port": N}.
//   node bench/extract.mjs stream MCP_URL FILE_URL ROUNDS PID CLK_TCK
//       calls get_file_text on FILE_URL (a new query string each call, so
//       that nothing comes from the cache) ROUNDS times with a progress token
//       over SSE and ROUNDS times without, alternating, while sampling the
//       resident memory of process PID and its children and the CPU time
//       of PID with the children it has reaped (/proc/PID/stat); prints
//       one JSON line per call.
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

import { largeDocx, largePdf } from '../tests/upstream/documents.mjs';
import { startUpstream } from '../tests/upstream/server.mjs';

const MB = 1000 * 1000;

function docs(dir, pdfMb, docxMb) {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'large.pdf'), largePdf(Number(pdfMb) * MB));
  fs.writeFileSync(path.join(dir, 'large.docx'), largeDocx(Number(docxMb) * MB));
}

async function serve(dir) {
  const up = await startUpstream({ port: 0 });
  const types = { '.pdf': 'application/pdf',
    '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' };
  for (const name of fs.readdirSync(dir)) {
    const type = types[path.extname(name)];
    if (type) up.upstream.addFile(`/files/bench/${name}`, fs.readFileSync(path.join(dir, name)), type);
  }
  console.log(JSON.stringify({ port: up.port }));
  const stop = () => up.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// ---- A small MCP client over Streamable HTTP -------------------------------------

const headers = (sid) => ({
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  Authorization: `Bearer ${process.env.DATAGATE_TOKEN_ADMIN}`,
  'MCP-Protocol-Version': '2025-06-18',
  ...(sid ? { 'Mcp-Session-Id': sid } : {}),
});

async function session(url) {
  const res = await fetch(url, { method: 'POST', headers: headers(), body: JSON.stringify({
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) });
  const sid = res.headers.get('mcp-session-id');
  await res.text();
  await (await fetch(url, { method: 'POST', headers: headers(sid),
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  return sid;
}

function statusKb(pid, key) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  } catch {
    return 0; // the process ended meanwhile
  }
}

// The gateway's children: the extractor processes that parse documents.
function children(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).flatMap((t) =>
      fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
  } catch {
    return [];
  }
}

// Resident memory in KiB of pid and its extractor processes now, the
// gateway's own peak so far (VmHWM) and the largest peak of an extractor
// process still running.
function memory(pid) {
  const kids = children(pid).filter(isWorker);
  const rss = kids.reduce((sum, c) => sum + statusKb(c, 'VmRSS'), statusKb(pid, 'VmRSS'));
  return { rss, hwm: statusKb(pid, 'VmHWM'), childHwm: Math.max(0, ...kids.map((c) => statusKb(c, 'VmHWM'))) };
}

// A child that is an extractor process already: until it has started the
// program, it still shows the gateway's memory (libuv starts it with vfork).
function isWorker(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--extract-worker');
  } catch {
    return false;
  }
}

// CPU seconds of pid and of the children it has reaped: utime, stime,
// cutime and cstime of /proc/<pid>/stat (fields 14 to 17), in clock ticks.
function cpuSeconds(pid, ticks) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) / ticks;
}

// One call; with a token, the time of the first progress event too.
async function call(url, sid, fileUrl, id, stream, pid, ticks) {
  const params = { name: 'get_file_text', arguments: { url: fileUrl } };
  if (stream) params._meta = { progressToken: id };
  const before = memory(pid).rss;
  const cpuBefore = cpuSeconds(pid, ticks);
  let peak = before;
  let extractorPeak = 0;
  const sampler = setInterval(() => {
    const m = memory(pid);
    peak = Math.max(peak, m.rss);
    extractorPeak = Math.max(extractorPeak, m.childHwm);
  }, 10);
  const t0 = performance.now();
  let first = null;
  let chunks = 0;
  let result = null;
  const res = await fetch(url, { method: 'POST', headers: headers(sid),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }) });
  const type = res.headers.get('content-type') || '';
  if (type.startsWith('text/event-stream')) {
    const decoder = new TextDecoder();
    let buf = '';
    for await (const part of res.body) {
      buf += decoder.decode(part, { stream: true });
      let end = buf.indexOf('\n\n');
      while (end >= 0) {
        const data = buf.slice(0, end).split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('');
        buf = buf.slice(end + 2);
        const msg = data ? JSON.parse(data) : {};
        if (msg.method === 'notifications/progress') {
          first ??= performance.now() - t0;
          chunks++;
        } else if (msg.id === id) {
          result = msg.result;
        }
        end = buf.indexOf('\n\n');
      }
    }
  } else {
    result = (await res.json()).result;
  }
  const total = performance.now() - t0;
  clearInterval(sampler);
  peak = Math.max(peak, memory(pid).rss);
  // The extractor process may be reaped after the answer has left: wait
  // (up to half a second) until its CPU time has been added.
  for (let i = 0; i < 50 && children(pid).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
  const cpu = cpuSeconds(pid, ticks) - cpuBefore;
  if (!result || result.isError) throw new Error(`get_file_text failed: ${JSON.stringify(result)}`);
  const sc = result.structuredContent;
  return { stream, firstMs: first, totalMs: total, chunks, totalChars: sc.totalChars,
    truncated: Boolean(sc.truncated), rssBeforeKb: before, rssPeakKb: peak,
    extractorPeakKb: extractorPeak, cpuSeconds: cpu };
}

async function stream(url, fileUrl, rounds, pid, ticks) {
  const sid = await session(url);
  for (let r = 1; r <= Number(rounds); r++) {
    for (const streaming of [true, false]) {
      const out = await call(url, sid, `${fileUrl}?round=${r}&stream=${streaming}`, r * 10 + streaming, streaming,
        pid, Number(ticks));
      console.log(JSON.stringify({ round: r, ...out }));
    }
  }
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'docs') docs(...args);
else if (cmd === 'serve') await serve(...args);
else if (cmd === 'stream') await stream(...args);
else {
  console.error('usage: extract.mjs docs DIR PDF_MB DOCX_MB | serve DIR | stream MCP_URL FILE_URL ROUNDS PID CLK_TCK');
  process.exit(2);
}
