-- LuaSocket emulation: `socket.tcp()`, `socket.connect(host, port)` and
-- `socket.bind(host, port[, backlog])`, as Tarantool master's socket.lua
-- ("Lua Socket Emulation") has them, for code ported from LuaSocket.
--
-- One difference: master swaps the metatable of its socket object (a
-- table there); luafiber's sockets are userdata with one shared metatable,
-- so a LuaSocket object here is a table `{sock = <socket>, timeout = n}`
-- whose metatable says what it is (`tcp{master}`, `tcp{server}`,
-- `tcp{client}`). The methods and what they return are master's.
--
-- Run once per cord by socket.lua, which passes its helpers; returns the
-- table of the three constructors (the module's `__index`).
local h = ...
local fiber = require('fiber')
local errno = require('errno')

local format = string.format
local TIMEOUT_INFINITY = 500 * 365 * 86400
local LIMIT_INFINITY = 2147483647

local master_mt, server_mt, client_mt

local function check(self)
    if type(self) ~= 'table' or self.sock == nil then
        error('Usage: socket:method()')
    end
    return self.sock
end

local function failure(self)
    return nil, check(self):error()
end

local function tostring_of(kind)
    return function(self)
        return format('tcp{%s}: fd=%d', kind, check(self):fd())
    end
end

local function close(self)
    if not check(self):close() then
        return failure(self)
    end
    return 1
end

-- host, port (a string) and family ('inet', 'inet6', 'unix') of `addr`.
local function lsocket_addr(self, addr)
    if addr == nil then
        return failure(self)
    end
    return addr.host, tostring(addr.port), addr.family:match('AF_(.*)'):lower()
end

local function getsockname(self)
    return lsocket_addr(self, check(self):name())
end

local function getpeername(self)
    return lsocket_addr(self, check(self):peer())
end

local function settimeout(self, value)
    check(self)
    self.timeout = value
    -- mode is ignored, as in master
    return 1
end

local function setoption(self, option, value)
    local s = check(self)
    local r
    if option == 'reuseaddr' then
        r = s:setsockopt('SOL_SOCKET', 'SO_REUSEADDR', value)
    elseif option == 'keepalive' then
        r = s:setsockopt('SOL_SOCKET', 'SO_KEEPALIVE', value)
    elseif option == 'linger' then
        value = type(value) == 'table' and value.on or value
        -- value.timeout is ignored, as in master
        r = s:linger(value)
    elseif option == 'tcp-nodelay' then
        r = s:setsockopt('tcp', 'TCP_NODELAY', value)
    else
        error(format('Unknown socket option name: %s', tostring(option)))
    end
    if not r then
        return failure(self)
    end
    return 1
end

local function bind(self, address, port)
    if not check(self):bind(address, port) then
        return failure(self)
    end
    return 1
end

local function listen(self, backlog)
    if not check(self):listen(backlog) then
        return failure(self)
    end
    setmetatable(self, server_mt)
    return 1
end

local function connect(self, host, port)
    local s = check(self)
    local deadline = fiber.clock() + (self.timeout or TIMEOUT_INFINITY)
    local dns, err = h.getaddrinfo(host, port, deadline - fiber.clock(),
                                   {family = 'AF_INET', type = 'SOCK_STREAM'})
    if dns == nil then
        h.set_errno(s, errno.EINVAL)
        return nil, err
    end
    if #dns == 0 then
        h.set_errno(s, errno.EINVAL)
        return failure(self)
    end
    for _, remote in ipairs(dns) do
        if s:connect(remote.host, remote.port, deadline - fiber.clock()) then
            return 1
        end
    end
    return failure(self)
end

local function accept(self)
    local s = check(self)
    local deadline = fiber.clock() + (self.timeout or TIMEOUT_INFINITY)
    repeat
        local client = s:accept()
        if client then
            return setmetatable({sock = client}, client_mt)
        end
        local e = s:errno()
        if e ~= errno.EAGAIN and e ~= errno.EWOULDBLOCK and e ~= errno.EINTR then
            break
        end
    until not s:readable(deadline - fiber.clock())
    return failure(self)
end

-- receive(pattern, prefix): a number of bytes, '*l' (a line, without its
-- '\n'; the default) or '*a' (everything until the peer closes). At the
-- end of the stream before the pattern is met: nil, 'closed', what came.
local function receive(self, pattern, prefix)
    local s = check(self)
    prefix = prefix or ''
    local timeout = self.timeout or TIMEOUT_INFINITY
    if type(pattern) == 'number' then
        local data = s:read(pattern, timeout)
        if data == nil then
            return failure(self)
        elseif #data < pattern then
            return nil, 'closed', prefix .. data
        end
        return prefix .. data
    elseif pattern == '*l' or pattern == nil then
        local data = s:read({chunk = LIMIT_INFINITY, delimiter = '\n'}, timeout)
        if data == nil then
            return failure(self)
        elseif #data > 0 and data:byte(#data) == 10 then
            return prefix .. data:sub(1, #data - 1)
        end
        return nil, 'closed', prefix .. data
    elseif pattern == '*a' then
        local result = {prefix}
        local deadline = fiber.clock() + timeout
        while true do
            local data = s:read(65536, deadline - fiber.clock())
            if data == nil then
                return failure(self)
            elseif data == '' then
                break
            end
            table.insert(result, data)
            if #data < 65536 then
                break
            end
        end
        if #result == 1 then
            return nil, 'closed', table.concat(result)
        end
        return table.concat(result)
    end
    error('Usage: socket:receive(pattern, [, prefix])')
end

local function send(self, data, i, j)
    local s = check(self)
    if i ~= nil then
        data = string.sub(data, i, j)
    end
    local sent = s:write(data, self.timeout)
    if not sent then
        return failure(self)
    end
    return (i or 1) + sent - 1
end

local function shutdown(self, how)
    if not check(self):shutdown(how) then
        return failure(self)
    end
    return 1
end

local common = {
    close = close,
    getsockname = getsockname,
    getpeername = getpeername,
    settimeout = settimeout,
    setoption = setoption,
}

local function kind(name, extra)
    local index = {}
    for k, v in pairs(common) do index[k] = v end
    for k, v in pairs(extra) do index[k] = v end
    local str = tostring_of(name)
    return {__index = index, __tostring = str, __serialize = str}
end

-- An unconnected socket has receive and send too: LuaSocket's own does,
-- against its documentation, and modules such as MobDebug rely on it.
master_mt = kind('master', {bind = bind, listen = listen, connect = connect,
                            receive = receive, send = send})
server_mt = kind('server', {accept = accept})
client_mt = kind('client', {receive = receive, send = send, shutdown = shutdown})

local function tcp()
    local s = h.socket_new('AF_INET', 'SOCK_STREAM', 'tcp')
    if not s then
        return nil, errno.strerror()
    end
    return setmetatable({sock = s}, master_mt)
end

local function lconnect(host, port)
    if host == nil or port == nil then
        error('Usage: luasocket.connect(host, port)')
    end
    local s, err = h.tcp_connect(host, port)
    if not s then
        return nil, err
    end
    return setmetatable({sock = s}, client_mt)
end

local function lbind(host, port, backlog)
    if host == nil or port == nil then
        error('Usage: luasocket.bind(host, port [, backlog])')
    end
    local s, err = h.tcp_server_bind(host, port, function() return backlog end)
    if not s then
        return nil, err
    end
    return setmetatable({sock = s}, server_mt)
end

return {tcp = tcp, connect = lconnect, bind = lbind}
