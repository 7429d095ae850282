-- wrk script: 16 pipelined GETs of the URL's path per write (TechEmpower's pipelining depth).
init = function(args)
  local requests = {}
  for i = 1, 16 do
    requests[i] = wrk.format(nil, wrk.path)
  end
  batch = table.concat(requests)
end

request = function()
  return batch
end
