-- http.client GETs from a local HTTP server: FIBERS fibers sharing one
-- client whose connections are kept alive (keepalive_idle/interval set:
-- Tarantool's http.client sends "Connection: close" without them), for
-- SECONDS. Prints the requests per second. Runs unchanged on Tarantool.
--
--   luafiber examples/http_hello.lua 8080 &
--   luafiber benches/net/http_client.lua [url] [fibers] [seconds]
--   tarantool benches/net/http_client.lua [url] [fibers] [seconds]
local http = require('http.client')
local fiber = require('fiber')
local clock = require('clock')

local url = arg[1] or 'http://127.0.0.1:8080/'
local fibers = tonumber(arg[2]) or 100
local seconds = tonumber(arg[3]) or 5

local client = http.new({max_connections = fibers})
local opts = {keepalive_idle = 60, keepalive_interval = 60, timeout = 10}
local done, failed, stop = 0, 0, false

local workers = {}
for i = 1, fibers do
    workers[i] = fiber.new(function()
        while not stop do
            local r = client:get(url, opts)
            if r.status == 200 then done = done + 1 else failed = failed + 1 end
        end
    end)
    workers[i]:set_joinable(true)
end
-- Warm up (the connections made), then count.
fiber.sleep(0.5)
local start, t0 = done, clock.monotonic()
fiber.sleep(seconds)
local n, dt = done - start, clock.monotonic() - t0
stop = true
for _, w in ipairs(workers) do w:join() end
local stat = client:stat()
print(('http_client_get: %d fibers, %d requests in %.2f s: %.0f requests/s' ..
       ' (%d failed, %d sockets opened)')
    :format(fibers, n, dt, n / dt, failed, stat.sockets_added))
os.exit(0)
