-- Leda's page as a Proscenium Lua page: `proscenium serve bench/peers/lua/leda --lua`,
-- then GET /leda.lua.
local page = require("loop")

function handle(req)
  return page()
end
