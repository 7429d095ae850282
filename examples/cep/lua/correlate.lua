-- Leda's Correlate stage, in Lua: the pair of clients whose request patterns are most
-- alike in a window (cosine similarity of 64-dimension feature vectors, ties to the
-- first pair in name order), over four passes, the CPU-heavy step. The same
-- arithmetic in the same order as the Rust stage, so both find the same pairs.

local DIMS, ROUNDS = 64, 4

local function features(entries)
  local vectors = {}
  for _, e in ipairs(entries) do
    local v = vectors[e.client]
    if not v then
      v = {}
      for k = 1, DIMS do v[k] = 0.0 end
      vectors[e.client] = v
    end
    local h = e.status
    for i = 1, #e.path do
      h = h * 31 + e.path:byte(i) -- wraps at 64 bits, as Rust's wrapping_mul
    end
    v[(h & (DIMS - 1)) + 1] = v[(h & (DIMS - 1)) + 1] + 1.0
    local b = (e.bytes // 100) % DIMS + 1
    v[b] = v[b] + 0.5
  end
  local clients = {}
  for client in pairs(vectors) do clients[#clients + 1] = client end
  table.sort(clients)
  return clients, vectors
end

local function most_similar(entries)
  local clients, vectors = features(entries)
  local best, bi, bj = nil, nil, nil
  for round = 0, ROUNDS - 1 do
    for i = 1, #clients do
      local a = vectors[clients[i]]
      for j = i + 1, #clients do
        local b = vectors[clients[j]]
        local dot, na, nb = 0.0, 0.0, 0.0
        for k = 0, DIMS - 1 do
          local x, y = a[k + 1], b[(k + round) % DIMS + 1]
          dot = dot + x * y
          na = na + x * x
          nb = nb + y * y
        end
        local sim = 0.0
        if na ~= 0.0 and nb ~= 0.0 then sim = dot / (math.sqrt(na) * math.sqrt(nb)) end
        if round == 0 and (best == nil or sim > best) then
          best, bi, bj = sim, i, j
        end
      end
    end
  end
  if best == nil then return null end
  return { clients[bi], clients[bj] }
end

function handle(window)
  emit("reports", {
    window = window.index,
    last = window.last,
    entries = #window.entries,
    finding = { Correlated = most_similar(window.entries) },
  })
end
