-- A keep-alive HTTP/1.1 server on the `socket` module (Tarantool's API):
-- one fiber per connection, each request answered with "Hello, world!".
--
--   luafiber examples/http_hello.lua [port]      (default 8080; Ctrl-C stops it)
--   curl -i http://127.0.0.1:8080/
--
-- It runs unchanged on Tarantool (`tarantool examples/http_hello.lua`).
local socket = require('socket')
local fiber = require('fiber')

local port = tonumber(arg[1]) or 8080
local body = 'Hello, world!\n'

local function reply(keep_alive)
    return table.concat({
        'HTTP/1.1 200 OK',
        'Content-Type: text/plain',
        'Content-Length: ' .. #body,
        'Connection: ' .. (keep_alive and 'keep-alive' or 'close'),
        '', body,
    }, '\r\n')
end
local keep, last = reply(true), reply(false)

local requests = 0

-- Called in a fiber of its own for each connection (named
-- "server/HOST:PORT" after the client); the socket is closed when it
-- returns.
local function handler(s, from)
    while true do
        -- The request line and headers, up to and with the blank line;
        -- '' or nil when the client closed the connection or it failed.
        local head = s:read({delimiter = '\r\n\r\n'}, 60)
        if head == nil or head == '' then break end
        requests = requests + 1
        local close = head:lower():find('\r\nconnection: *close') ~= nil
            or head:find('^[^\r]* HTTP/1%.0\r\n') ~= nil
        if s:write(close and last or keep) == nil or close then break end
    end
end

local server, err = socket.tcp_server('127.0.0.1', port, handler)
if server == nil then
    io.stderr:write(('cannot listen on 127.0.0.1:%d: %s\n'):format(port, err))
    os.exit(1)
end
print(('listening on http://127.0.0.1:%d/ (try: curl -i http://127.0.0.1:%d/)'):format(port, port))

-- The accept loop's fiber keeps the process serving; this one reports.
while true do
    fiber.sleep(10)
    print(('%d requests served'):format(requests))
end
