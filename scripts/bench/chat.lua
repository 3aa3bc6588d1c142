-- wrk script for scripts/bench-load.sh: a non-streamed chat turn with an X-Session-Id from a
-- ring of 256 sessions (agent-server requires the header; the bare server ignores it).
wrk.method = "POST"
wrk.body = '{"model":"m","messages":[{"role":"user","content":"the time people way year day thing man world life"}],"max_tokens":4}'
wrk.headers["Content-Type"] = "application/json"
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, { ["X-Session-Id"] = "wrk-" .. (n % 256) })
end
