-- Leda's page through nginx's Lua module (content_by_lua_file; the lab's nginx-lua
-- config sets lua_package_path to leda/).
ngx.header.content_type = "text/html; charset=utf-8"
ngx.print(require("loop")())
