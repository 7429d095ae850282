-- The httpd peer's dynamic routes, run in the server by mod_lua: /plaintext, /json and
-- Leda's /dynamic page, answering with examples/lab-app's bytes.

-- Leda's dynamic page: the same 1,250,000 iterations of 32-bit arithmetic as lab-app
-- (Lua 5.3's 64-bit integers, masked to 32 bits as lab-app's u32 wraps).
local function dynamic_page()
  local acc = 0
  for i = 0, 1249999 do
    acc = (acc * 31 + i) & 0xFFFFFFFF
  end
  return "<!doctype html><title>dynamic</title><p>1250000 iterations: " .. acc .. "</p>"
end

local routes = {
  ["/plaintext"] = function() return "text/plain; charset=utf-8", "Hello, World!" end,
  ["/json"] = function() return "application/json", '{"message":"Hello, World!"}' end,
  ["/dynamic"] = function() return "text/html; charset=utf-8", dynamic_page() end,
}

-- The handler httpd.conf maps the three paths to.
function handle(r)
  local route = routes[r.uri]
  if not route then
    return 404
  end
  local content_type, body = route()
  r.content_type = content_type
  r.headers_out["Content-Length"] = tostring(#body)
  r:write(body)
  return apache2.OK
end
