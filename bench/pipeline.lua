-- wrk script: 16 pipelined GET /plaintext per write (TechEmpower's pipelining depth).
init = function(args)
  local requests = {}
  for i = 1, 16 do
    requests[i] = wrk.format(nil, "/plaintext")
  end
  batch = table.concat(requests)
end

request = function()
  return batch
end
