-- Leda's Filter stage, in Lua: in each window, a client with 20 or more 404s is a
-- scan, 20 or more 5xx answers a burst. Takes a window ({index, last, entries}) and
-- emits its report on `reports`, as the Rust stage does.

local SCAN, BURST = 20, 20

function handle(window)
  local not_found, errors = {}, 0
  for _, entry in ipairs(window.entries) do
    if entry.status == 404 then
      not_found[entry.client] = (not_found[entry.client] or 0) + 1
    elseif entry.status >= 500 and entry.status <= 599 then
      errors = errors + 1
    end
  end
  local scanners = {}
  for client, count in pairs(not_found) do
    if count >= SCAN then scanners[#scanners + 1] = client end
  end
  table.sort(scanners)
  local alarms = {}
  for _, client in ipairs(scanners) do
    alarms[#alarms + 1] = { Scan = { window = window.index, client = client } }
  end
  if errors >= BURST then
    alarms[#alarms + 1] = { Burst = { window = window.index } }
  end
  emit("reports", {
    window = window.index,
    last = window.last,
    entries = #window.entries,
    finding = { Filtered = alarms },
  })
end
