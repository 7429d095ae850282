-- Leda's page as a CGI script, run through `lua5.4` by Proscenium's CGI
-- (proscenium.toml beside it): a process a request, as Leda's peers ran their scripts.
package.path = "../leda/?.lua;" .. package.path
local body = require("loop")()
io.write("Content-Type: text/html; charset=utf-8\r\nContent-Length: ", #body, "\r\n\r\n", body)
