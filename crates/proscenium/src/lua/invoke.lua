-- How Rust calls a handler (lua/convert.rs): the request comes as plain strings,
-- which cost no reference each as tables and their fields would, and is made a table
-- here; `headers`, `args` and `params` are parsed when a script first reads them.
-- What the handler returns comes back as a status, a body and the header fields in
-- one string ("name\0value\0" ...).

local HEADERS, PARAMS = "\0headers", "\0params"

local function decode(text)
  text = text:gsub("+", " ")
  return (text:gsub("%%(%x%x)", function(hex) return string.char(tonumber(hex, 16)) end))
end

local function pairs_of(raw)
  local t = {}
  for name, value in raw:gmatch("([^\0]*)\0([^\0]*)\0") do
    t[name] = value
  end
  return t
end

local REQUEST = {
  __index = function(req, key)
    local value
    if key == "headers" then
      value = pairs_of(rawget(req, HEADERS))
    elseif key == "params" then
      value = pairs_of(rawget(req, PARAMS))
    elseif key == "args" then
      value = {}
      for pair in rawget(req, "query"):gmatch("[^&]+") do
        local name, text = pair:match("^([^=]*)=?(.*)$")
        value[decode(name)] = decode(text)
      end
    else
      return nil
    end
    rawset(req, key, value)
    return value
  end,
}

local function fields(headers)
  if headers == nil then
    return nil
  end
  if type(headers) ~= "table" then
    error("headers were a " .. type(headers), 0)
  end
  local out = {}
  for name, value in pairs(headers) do
    if type(value) == "table" then
      for _, one in ipairs(value) do
        out[#out + 1] = tostring(name)
        out[#out + 1] = tostring(one)
      end
    else
      out[#out + 1] = tostring(name)
      out[#out + 1] = tostring(value)
    end
  end
  out[#out + 1] = ""
  return table.concat(out, "\0")
end

local function answer(first, headers, body)
  if first == nil then
    return 204
  end
  if type(first) == "string" and headers == nil and body == nil then
    return 200, first
  end
  if type(first) == "table" then
    first, headers, body = first.status or 200, first.headers, first.body
  end
  local kind = type(body)
  if kind == "number" then
    body = tostring(body)
  elseif kind ~= "nil" and kind ~= "string" then
    error("the body was a " .. kind, 0)
  end
  return first, body, fields(headers)
end

return function(handler, method, path, query, body, remote, headers, params)
  local req = setmetatable({
    method = method,
    path = path,
    query = query,
    body = body,
    remote_addr = remote ~= "" and remote or nil,
    [HEADERS] = headers,
    [PARAMS] = params,
  }, REQUEST)
  return answer(handler(req))
end
