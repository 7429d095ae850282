-- Leda's dynamic page (Salmito et al. 2014, sec. 6, Fig. 9c): "a Lua script that
-- executes a for loop of 30,000 iterations". The same module is the page's work in every
-- server of the lab's dynamic-lua scenario; each wraps it in its own way of answering
-- (leda.lua: a Proscenium page; ../cgi/leda.lua: a CGI script; ../nginx.lua: nginx's
-- Lua module; ../../httpd/lab.lua: Apache's mod_lua). The arithmetic is written for
-- every Lua these run (5.4, 5.3 and LuaJIT's 5.1): `%` rather than `&`, and no value
-- past 2^53, so each computes the same number.

local ITERATIONS = 30000

return function()
  local acc = 0
  for i = 0, ITERATIONS - 1 do
    acc = (acc * 31 + i) % 4294967296
  end
  return "<!doctype html><title>Leda</title><p>" .. ITERATIONS .. " iterations: "
    .. string.format("%d", acc) .. "</p>"
end
