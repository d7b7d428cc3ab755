-- wrk script of bench/http: POSTs one JSON-RPC message to /mcp with the
-- headers an MCP client sends after initialize.
--
-- Environment:
--   BODY    the JSON-RPC message
--   TOKEN   the bearer token
--   SIDS    the Mcp-Session-Id to send, or several separated by commas
--
-- With one session id the request is static (wrk sends it without calling
-- Lua per request). With several, an HTTP session lives in the worker that
-- created it, so each thread (run one connection per thread, -t N -c N)
-- starts with the first id and moves to the next when it gets 404; those
-- 404s are counted apart as session misses.
--
-- done() prints one line for bench/http:
--   RESULT requests=N seconds=S rps=R bytes=B non2xx=N misses=N errors=N

local sids = {}
for id in string.gmatch(os.getenv("SIDS") or "", "[^,]+") do
  sids[#sids + 1] = id
end

local function headers_for(sid)
  return {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["Authorization"] = "Bearer " .. (os.getenv("TOKEN") or ""),
    ["Mcp-Session-Id"] = sid,
    ["MCP-Protocol-Version"] = "2025-06-18",
  }
end

wrk.method = "POST"
wrk.body = os.getenv("BODY")
wrk.headers = headers_for(sids[1])

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
end

if #sids > 1 then
  local current = 1
  local req = nil
  misses = 0

  function request()
    if req == nil then
      req = wrk.format(nil, nil, headers_for(sids[current]), nil)
    end
    return req
  end

  function response(status, headers, body)
    if status == 404 then
      misses = misses + 1
      current = current % #sids + 1
      req = nil
    end
  end
end

function done(summary, latency, requests)
  local misses = 0
  for _, thread in ipairs(threads) do
    misses = misses + (tonumber(thread:get("misses")) or 0)
  end
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "RESULT requests=%d seconds=%.3f rps=%.1f bytes=%d non2xx=%d misses=%d errors=%d\n",
    summary.requests, seconds, summary.requests / seconds, summary.bytes, e.status, misses,
    e.connect + e.read + e.write + e.timeout))
end
