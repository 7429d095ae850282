-- wrk script: 10 % of requests burn 50 ms of CPU on the route given as wrk's URL path
-- (lab-app's /cpu on the loop, /cpu-blocking on the pool), the rest are light (/_echo).
local heavy

init = function(args)
  heavy = wrk.path .. "?ms=50"
end

request = function()
  if math.random() < 0.1 then
    return wrk.format(nil, heavy)
  end
  return wrk.format(nil, "/_echo")
end
