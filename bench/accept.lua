-- wrk script for `bench/run.py accept` (and `batches`, `templates`): POSTs webhook sends (or plain email sends, or
-- sends whose fields a file holds), rotating API keys and unique idempotency keys; or, given an item count, batches
-- of that many sends a request ({"items": [...]}).
-- Arguments after "--": <keys file> <tag> <wrk thread count> <index of the first key to use> [<items a request>]
-- [<send: webhook or email>] [<fields file: one send's JSON object but its idempotency key, in place of send's>].
-- Prints one "BENCH_RESULT k=v ..." line that bench/run.py parses.

local threads = {}
local thread_count = 0

function setup(thread)
  thread:set("thread_id", thread_count)
  thread_count = thread_count + 1
  table.insert(threads, thread)
end

function init(args)
  keys = {}
  for line in io.lines(args[1]) do
    if #line > 0 then
      keys[#keys + 1] = line
    end
  end
  tag = args[2]
  stride = tonumber(args[3])
  first_key = tonumber(args[4])
  -- 0 (or absent): one send's body a request; n: a batch of n sends.
  items = tonumber(args[5] or "0")
  email = args[6] == "email"
  fields = nil
  if args[7] then
    local file = assert(io.open(args[7], "r"))
    -- The object without its closing brace: each send appends its idempotency key and closes it.
    fields = string.gsub(file:read("*a"), "%s*}%s*$", "")
    file:close()
  end
  sent = 0
  unexpected = 0
  jobs = 0
end

-- One send (bench/accept.py's Load.one_send); its idempotency key ends with `suffix`, unique to the run.
local function send_body(suffix)
  if fields then
    return string.format('%s,"idempotencyKey":"%s-%d-%s"}', fields, tag, thread_id, suffix)
  end
  if email then
    return string.format(
      '{"to":"reader@bench.example","subject":"Bench","body":"ping %d","idempotencyKey":"%s-%d-%s"}',
      sent, tag, thread_id, suffix
    )
  end
  return string.format(
    '{"url":"https://hooks.example.com/in","payload":{"event":"bench.ping","n":%d},"idempotencyKey":"%s-%d-%s"}',
    sent, tag, thread_id, suffix
  )
end

function request()
  -- Thread t sends keys t, t+stride, t+2*stride, ... so every key gets the same share of the load,
  -- and each send carries a fresh idempotency key so the duplicate check runs and passes.
  local key = keys[(first_key + thread_id + sent * stride) % #keys + 1]
  sent = sent + 1
  local body
  if items > 0 then
    local parts = {}
    for item = 1, items do
      parts[item] = send_body(sent .. "-" .. item)
    end
    body = '{"items":[' .. table.concat(parts, ",") .. "]}"
  else
    body = send_body(tostring(sent))
  end
  -- X-Forwarded-Proto: what the TLS proxy in front of production adds; without it the app redirects to HTTPS.
  local headers = { ["Content-Type"] = "application/json", ["X-API-Key"] = key, ["X-Forwarded-Proto"] = "https" }
  return wrk.format("POST", nil, headers, body)
end

-- How many times `word` occurs in `text`.
local function occurrences(text, word)
  local count, at = 0, 1
  while true do
    local found = string.find(text, word, at, true)
    if not found then
      return count
    end
    count = count + 1
    at = found + #word
  end
end

function response(status, headers, body)
  -- wrk itself only counts 4xx/5xx; anything but 202 means the request was not accepted.
  if status ~= 202 then
    unexpected = unexpected + 1
  elseif items > 0 then
    -- A batch answers 202 with a slot per item: a job for each accepted one, an error for each refused.
    jobs = jobs + occurrences(body, '"jobId"')
  else
    jobs = jobs + 1
  end
end

function done(summary, latency, requests)
  local unexpected_total, jobs_total = 0, 0
  for _, thread in ipairs(threads) do
    unexpected_total = unexpected_total + thread:get("unexpected")
    jobs_total = jobs_total + thread:get("jobs")
  end
  local errors = summary.errors
  io.write(string.format(
    "BENCH_RESULT requests=%d duration_us=%d unexpected=%d jobs=%d connect=%d read=%d write=%d timeout=%d "
      .. "p50_us=%d p99_us=%d max_us=%d mean_us=%d\n",
    summary.requests, summary.duration, unexpected_total, jobs_total, errors.connect, errors.read, errors.write,
    errors.timeout, latency:percentile(50), latency:percentile(99), latency.max, math.floor(latency.mean)
  ))
end
