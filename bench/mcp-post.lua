-- SPDX-License-Identifier: AGPL-3.0-or-later
-- wrk script of bench/http: POSTs one JSON-RPC message to /mcp with the
-- headers an MCP client sends after initialize. The request is static (wrk
-- sends it without calling Lua per request); with several workers, every
-- one of them serves the one session id.
--
-- Environment:
--   BODY    the JSON-RPC message
--   TOKEN   the bearer token
--   SID     the Mcp-Session-Id to send
--
-- done() prints one line for bench/http:
--   RESULT requests=N seconds=S rps=R bytes=B non2xx=N errors=N

wrk.method = "POST"
wrk.body = os.getenv("BODY")
wrk.headers = {
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
  ["Authorization"] = "Bearer " .. (os.getenv("TOKEN") or ""),
  ["Mcp-Session-Id"] = os.getenv("SID") or "",
  ["MCP-Protocol-Version"] = "2025-06-18",
}

function done(summary, latency, requests)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "RESULT requests=%d seconds=%.3f rps=%.1f bytes=%d non2xx=%d errors=%d\n",
    summary.requests, seconds, summary.requests / seconds, summary.bytes, e.status,
    e.connect + e.read + e.write + e.timeout))
end
