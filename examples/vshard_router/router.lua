-- An HTTP key-value service whose handlers route through vshard's router
-- to the Tarantool storages of tests/vshard/cluster.lua (README.md here
-- tells how to start them):
--
--   VSHARD_PATH=... VSHARD_PORTS=... luafiber examples/vshard_router/router.lua [port]
--   curl -X PUT --data-binary hello http://127.0.0.1:8080/kv/42
--   curl http://127.0.0.1:8080/kv/42
--   curl http://127.0.0.1:8080/info
--
-- GET /kv/ID reads through vshard.router.callro (a replica may answer),
-- PUT /kv/ID writes the request body through callrw, GET /info shows the
-- router's view of the cluster. A vshard error is a 503 with the error
-- object as JSON. The same script runs on Tarantool (`tarantool ...`).
local here = debug.getinfo(1, 'S').source:match('^@(.*/)') or './'
local socket = require('socket')
local fiber = require('fiber')
local json = require('json')
local cluster = dofile(here .. '../../tests/vshard/cluster.lua')
local router = require('vshard.router')

local port = tonumber(arg[1]) or 8080

local cfg = cluster.cfg
cfg.box_cfg_mode = 'manual' -- no box.cfg: the router needs no local storage
cfg.replication_connect_quorum = nil
router.cfg(cfg)
-- The first router to come up creates the buckets (once per cluster).
local ok, err = router.bootstrap({timeout = 10, if_not_bootstrapped = true})
if not ok then
    io.stderr:write('bootstrap failed: ', tostring(err), '\n')
    os.exit(1)
end

local function response(status, body, keep_alive)
    return table.concat({
        'HTTP/1.1 ' .. status,
        'Content-Type: text/plain',
        'Content-Length: ' .. #body,
        'Connection: ' .. (keep_alive and 'keep-alive' or 'close'),
        '', body,
    }, '\r\n')
end

-- One request: returns the status line's code and text, and the body.
local function handle(method, path, body)
    if path == '/info' and method == 'GET' then
        local info = router.info()
        return '200 OK', json.encode({status = info.status,
                                      bucket = info.bucket,
                                      alerts = info.alerts}) .. '\n'
    end
    local id = tonumber(path:match('^/kv/(%d+)$'))
    if id == nil then
        return '404 Not Found', 'try /kv/ID or /info\n'
    end
    local bucket_id = router.bucket_id_strcrc32(id)
    local res, err
    if method == 'GET' then
        res, err = router.callro(bucket_id, 'kv_get', {id}, {timeout = 1})
        if res == nil and err == nil then
            return '404 Not Found', 'no such key\n'
        end
    elseif method == 'PUT' or method == 'POST' then
        res, err = router.callrw(bucket_id, 'kv_put', {id, bucket_id, body},
                                 {timeout = 1})
        res = res and res[3]
    else
        return '405 Method Not Allowed', 'GET or PUT\n'
    end
    if err ~= nil then
        return '503 Service Unavailable', json.encode(err) .. '\n'
    end
    return '200 OK', tostring(res) .. '\n'
end

-- Called in a fiber of its own for each connection.
local function serve(s)
    while true do
        local head = s:read({delimiter = '\r\n\r\n'}, 60)
        if head == nil or head == '' then break end
        local method, path, version = head:match('^(%u+) (%S+) HTTP/1%.(%d)')
        local lower = head:lower()
        local length = tonumber(lower:match('\r\ncontent%-length: *(%d+)')) or 0
        local body = length > 0 and s:read(length, 60) or ''
        local close = lower:find('\r\nconnection: *close') ~= nil or
                      version == '0'
        local status, text
        if method == nil or body == nil or #body < length then
            status, text, close = '400 Bad Request', 'bad request\n', true
        else
            status, text = handle(method, path, body)
        end
        if s:write(response(status, text, not close)) == nil or close then
            break
        end
    end
end

local server, serr = socket.tcp_server('127.0.0.1', port, serve)
if server == nil then
    io.stderr:write(('cannot listen on 127.0.0.1:%d: %s\n'):format(port, serr))
    os.exit(1)
end
io.stdout:write(('listening on http://127.0.0.1:%d/ (try: curl ' ..
                 'http://127.0.0.1:%d/info)\n'):format(port, port))
io.stdout:flush()
while true do
    fiber.sleep(3600)
end
