-- The httpd peer's dynamic routes, run in the server by mod_lua: /plaintext, /json and
-- the /dynamic page, answering with examples/lab-app's bytes, and Leda's own page,
-- /leda.lua (bench/peers/lua/leda/loop.lua, on httpd.conf's LuaPackagePath).

-- Leda's dynamic page: n iterations (1,250,000 when the request names none, at most
-- 100,000,000 as every peer) of lab-app's 32-bit arithmetic (Lua 5.3's 64-bit integers,
-- masked to 32 bits as lab-app's u32 wraps). Nil, and a 400, for another n.
local function dynamic_page(r)
  local asked = r:parseargs().n
  local n = asked == nil and 1250000 or math.tointeger(tonumber(asked))
  if n == nil or n < 0 or n > 100000000 then
    return nil
  end
  local acc = 0
  for i = 0, n - 1 do
    acc = (acc * 31 + i) & 0xFFFFFFFF
  end
  return "<!doctype html><title>dynamic</title><p>" .. n .. " iterations: " .. acc .. "</p>"
end

local routes = {
  ["/plaintext"] = function() return "text/plain; charset=utf-8", "Hello, World!" end,
  ["/json"] = function() return "application/json", '{"message":"Hello, World!"}' end,
  ["/dynamic"] = function(r) return "text/html; charset=utf-8", dynamic_page(r) end,
  ["/leda.lua"] = function() return "text/html; charset=utf-8", require("loop")() end,
}

-- The handler httpd.conf maps the three paths to.
function handle(r)
  local route = routes[r.uri]
  if not route then
    return 404
  end
  local content_type, body = route(r)
  if body == nil then
    return 400
  end
  r.content_type = content_type
  r.headers_out["Content-Length"] = tostring(#body)
  r:write(body)
  return apache2.OK
end
