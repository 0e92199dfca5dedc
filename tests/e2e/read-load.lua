-- wrk script for the read-load reliability test: cycles through kfaild's read endpoints and
-- prints one machine-readable summary line.
local paths = {
  "/api/v1/clusters/lab",
  "/api/v1/clusters/lab/gaps?limit=50",
  "/api/v1/clusters/lab/events?limit=50",
  "/api/v1/drills",
  "/api/v1/clusters/lab/drills/last",
  "/api/v1/statistics",
  "/healthz",
  "/metrics",
}
-- WRK_NO_DRILL=1: a kfaild that has run no drill answers the last drill's path 404, rightly;
-- leave that path out.
if os.getenv("WRK_NO_DRILL") == "1" then
  local kept = {}
  for _, path in ipairs(paths) do
    if not path:find("/drills/last", 1, true) then kept[#kept + 1] = path end
  end
  paths = kept
end
local i = 0
-- WRK_DELAY_MS > 0 paces each connection: one request, then that many milliseconds of pause.
local pause = tonumber(os.getenv("WRK_DELAY_MS") or "0")

delay = function()
  return pause
end

request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "KFAILD_WRK requests=%d socket_errors=%d non_2xx=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f duration_s=%.3f\n",
    summary.requests, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000, summary.duration / 1e6))
end
