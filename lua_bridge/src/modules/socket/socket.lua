-- The Lua half of luafiber's `socket` module (see mod.rs): Tarantool
-- master's src/lua/socket.lua over the C functions of mod.rs, for LuaJIT
-- and Lua 5.4 alike (no FFI). Names become numbers here; the C methods do
-- the I/O and the waits. Run once per cord by the module's loader, which
-- passes the internal table, the methods table and the metatable.
local internal, methods, socket_mt, lsocket = ...
local fiber = require('fiber')
local errno = require('errno')
local log = require('log')

local format, floor = string.format, math.floor
local usage, is_closed = internal.usage, internal.is_closed
local set_errno = internal.set_errno

local TIMEOUT_INFINITY = 500 * 365 * 86400

local errno_is_transient = {
    [errno.EAGAIN] = true,
    [errno.EWOULDBLOCK] = true,
    [errno.EINTR] = true,
}

local errno_is_fatal = {
    [errno.EBADF] = true,
    [errno.EINVAL] = true,
    [errno.EOPNOTSUPP] = true,
    [errno.ENOTSOCK] = true,
}

local function get_ivalue(table, key)
    if type(key) == 'number' then
        return key
    end
    return table[key]
end

-- The flags named by `flags` (a name or a list of names) or-ed; nil when
-- one is unknown. Every flag is one bit, so adding each once is or-ing.
local function get_iflags(table, flags)
    if flags == nil then
        return 0
    end
    if type(flags) ~= 'table' then
        flags = { flags }
    end
    local res = 0
    for _, f in pairs(flags) do
        local v = table[f]
        if v == nil then
            return nil
        end
        if floor(res / v) % 2 == 0 then
            res = res + v
        end
    end
    return res
end

local function getprotobyname(name)
    if type(name) == 'number' then
        return name
    elseif type(name) ~= 'string' then
        errno(errno.EINVAL)
        return nil
    end
    local num = internal.protocols[name]
    if num ~= nil then
        return num
    end
    num = internal.getprotobyname(name)
    if num == nil then
        errno(errno.EPROTOTYPE)
        return nil
    end
    internal.protocols[name] = num
    return num
end

local function getsol(level)
    if type(level) == 'number' then
        return level
    elseif type(level) ~= 'string' then
        errno(errno.EINVAL)
        return nil
    elseif level == 'SOL_SOCKET' or level == 'socket' then
        return internal.SOL_SOCKET
    end
    level = (level:match('IPPROTO_([A-Z]*)') or
             level:match('SOL_([A-Z]*)') or
             level):lower()
    return getprotobyname(level)
end

local soname_mt = {
    __tostring = function(si)
        if si.host == nil and si.port == nil then
            return ''
        end
        return format('%s:%s', tostring(si.host or 0), tostring(si.port or 0))
    end
}

-- The C methods that the Lua ones below wrap.
local c = {}
for k, v in pairs(methods) do c[k] = v end

function methods.name(self)
    local aka = c.name(self)
    if aka ~= nil then setmetatable(aka, soname_mt) end
    return aka
end

function methods.peer(self)
    local peer = c.peer(self)
    if peer ~= nil then setmetatable(peer, soname_mt) end
    return peer
end

-- Unix paths bound by tcp_server: removed when their socket closes.
local unlink_on_close = setmetatable({}, { __mode = 'k' })

function methods.close(self)
    local path = unlink_on_close[self]
    if path ~= nil then
        c.fd(self)
        unlink_on_close[self] = nil
        os.remove(path)
    end
    return c.close(self)
end

local function socket_option(self, level, name, write)
    c.fd(self)
    level = getsol(level)
    if level == nil then
        set_errno(self, errno())
        return nil
    end
    local info = get_ivalue(internal.SO_OPT[level] or {}, name)
    if type(info) ~= 'table' then
        usage(format("Unknown socket option name: %s", tostring(name)))
    end
    if write and not info.rw then
        usage(format("Socket option %s is read only", name))
    end
    if info.type ~= 1 and info.type ~= 2 then
        if name == 'SO_LINGER' then
            usage(write and "Use s:linger(active[, timeout])" or "Use s:linger()")
        end
        usage(format("Unsupported socket option: %s", name))
    end
    return level, info
end

function methods.setsockopt(self, level, name, value)
    local info
    level, info = socket_option(self, level, name, true)
    if level == nil then
        return false
    end
    if type(value) == 'boolean' then
        value = value and 1 or 0
    end
    return internal.setsockopt(self, level, info.iname, info.type, value)
end

function methods.getsockopt(self, level, name)
    local info
    level, info = socket_option(self, level, name, false)
    if level == nil then
        return false
    end
    return internal.getsockopt(self, level, info.iname, info.type)
end

local function flags_of(self, flags)
    if flags == nil or type(flags) == 'number' then
        return flags
    end
    local iflags = get_iflags(internal.SEND_FLAGS, flags)
    if iflags == nil then
        c.fd(self)
        set_errno(self, errno.EINVAL)
    end
    return iflags
end

function methods.send(self, octets, flags)
    local iflags = flags_of(self, flags)
    if iflags == nil and flags ~= nil then return nil end
    return c.send(self, octets, iflags)
end

function methods.recv(self, size, flags)
    local iflags = flags_of(self, flags)
    if iflags == nil and flags ~= nil then return nil end
    return c.recv(self, size, iflags)
end

function methods.recvfrom(self, size, flags)
    local iflags = flags_of(self, flags)
    if iflags == nil and flags ~= nil then return nil end
    return c.recvfrom(self, size, iflags)
end

function methods.sendto(self, host, port, octets, flags)
    local iflags = flags_of(self, flags)
    if iflags == nil and flags ~= nil then return nil end
    return c.sendto(self, host, port, octets, iflags)
end

socket_mt.__serialize = function(self)
    local fd = c.fd(self)
    return { fd = fd, peer = methods.peer(self), name = methods.name(self) }
end

local function check_socket_args(domain, stype, proto)
    local idomain = get_ivalue(internal.DOMAIN, domain)
    if idomain == nil then
        errno(errno.EINVAL)
        return nil
    end
    local itype = get_ivalue(internal.SO_TYPE, stype)
    if itype == nil then
        errno(errno.EINVAL)
        return nil
    end
    local iproto = getprotobyname(proto)
    if iproto == nil then
        return nil
    end
    return idomain, itype, iproto
end

local function socket_new(domain, stype, proto)
    local idomain, itype, iproto = check_socket_args(domain, stype, proto)
    if idomain == nil then
        return nil
    end
    return internal.socket(idomain, itype, iproto)
end

local function socket_socketpair(domain, stype, proto)
    local idomain, itype, iproto = check_socket_args(domain, stype, proto)
    if idomain == nil then
        return nil
    end
    return internal.socketpair(idomain, itype, iproto)
end

local function getaddrinfo(host, port, timeout, opts)
    if type(timeout) == 'table' and opts == nil then
        opts = timeout
        timeout = TIMEOUT_INFINITY
    elseif timeout == nil then
        timeout = TIMEOUT_INFINITY
    end
    if port == nil then
        port = 0
    end
    local ga_opts = {}
    if opts ~= nil then
        if opts.type ~= nil then
            local itype = get_ivalue(internal.SO_TYPE, opts.type)
            if itype == nil then
                errno(errno.EINVAL)
                return nil, errno.strerror()
            end
            ga_opts.type = itype
        end
        if opts.family ~= nil then
            local ifamily = get_ivalue(internal.DOMAIN, opts.family)
            if ifamily == nil then
                errno(errno.EINVAL)
                return nil, errno.strerror()
            end
            ga_opts.family = ifamily
        end
        if opts.protocol ~= nil then
            local p = getprotobyname(opts.protocol)
            if p == nil then
                return nil, errno.strerror()
            end
            ga_opts.protocol = p
        end
        if opts.flags ~= nil then
            ga_opts.flags = get_iflags(internal.AI_FLAGS, opts.flags)
            if ga_opts.flags == nil then
                errno(errno.EINVAL)
                return nil, errno.strerror()
            end
        end
    end
    return internal.getaddrinfo(host, port, timeout, ga_opts)
end

local function tcp_connect(host, port, timeout)
    if host == 'unix/' then
        local s = socket_new('AF_UNIX', 'SOCK_STREAM', 0)
        if not s then
            return nil, errno.strerror()
        end
        if not s:connect(host, port, timeout) then
            local save_errno = s:errno()
            s:close()
            errno(save_errno)
            return nil, errno.strerror()
        end
        errno(0)
        return s
    end
    timeout = timeout or TIMEOUT_INFINITY
    local stop = fiber.clock() + timeout
    local dns, err = getaddrinfo(host, port, timeout, {
        protocol = 'tcp',
        type = 'SOCK_STREAM',
        flags = 'AI_ADDRCONFIG',
    })
    if dns == nil then
        return nil, err
    end
    if #dns == 0 then
        errno(errno.EINVAL)
        return nil, errno.strerror()
    end
    for _, remote in ipairs(dns) do
        timeout = stop - fiber.clock()
        if timeout <= 0 then
            errno(errno.ETIMEDOUT)
            return nil, errno.strerror()
        end
        local s = socket_new(remote.family, remote.type, remote.protocol)
        if s then
            if s:connect(remote.host, remote.port, timeout) then
                errno(0)
                return s
            end
            local save_errno = s:errno()
            s:close()
            errno(save_errno)
        end
    end
    return nil, errno.strerror()
end

local function tcp_server_handler(server, sc, from)
    fiber.name(format("%s/%s:%s", server.name, from.host, from.port), {truncate = true})
    local status, message = pcall(server.handler, sc, from)
    if not is_closed(sc) then
        sc:shutdown()
        sc:close()
    end
    if not status then
        error(message, 0)
    end
end

local function tcp_server_loop_impl(server, s, addr)
    addr = addr or methods.name(s) or { host = '?', port = '?' }
    fiber.name(format("%s/%s:%s", server.name, addr.host, addr.port), {truncate = true})
    log.info("started")
    local accept = c.accept
    while not is_closed(s) do
        local sc, from = accept(s)
        if sc ~= nil then
            fiber.create(tcp_server_handler, server, sc, from)
        else
            local e = s:errno()
            if errno_is_transient[e] then
                if not s:readable() then
                    break
                end
            else
                log.error('accept(%s) failed: %s', tostring(s), s:error())
                if errno_is_fatal[e] then
                    break
                end
                -- EMFILE and the like: try again a little later.
                fiber.sleep(0.01)
            end
        end
    end
    log.info("stopped")
end

local function tcp_server_do_bind(s, addr)
    if s:bind(addr.host, addr.port) then
        if addr.family == 'AF_UNIX' then
            unlink_on_close[s] = addr.port
        end
        return true
    end
    return false
end

local function tcp_server_bind_addr(s, addr)
    if tcp_server_do_bind(s, addr) then
        return true
    end
    if addr.family ~= 'AF_UNIX' then
        return false
    end
    if errno() ~= errno.EADDRINUSE then
        return false
    end
    local save_errno = errno()
    local sc = tcp_connect(addr.host, addr.port)
    if sc ~= nil then
        sc:close()
        errno(save_errno)
        return false
    end
    if errno() ~= errno.ECONNREFUSED then
        errno(save_errno)
        return false
    end
    log.info("tcp_server: remove dead UNIX socket: %s", addr.port)
    if not os.remove(addr.port) then
        errno(save_errno)
        return false
    end
    return tcp_server_do_bind(s, addr)
end

local function tcp_server_bind(host, port, prepare, timeout)
    timeout = timeout and tonumber(timeout) or TIMEOUT_INFINITY
    local dns, err
    if host == 'unix/' then
        dns = {{host = host, port = port, family = 'AF_UNIX', protocol = 0,
            type = 'SOCK_STREAM' }}
    else
        dns, err = getaddrinfo(host, port, timeout, {
            protocol = 'tcp',
            type = 'SOCK_STREAM',
            flags = {'AI_ADDRCONFIG', 'AI_PASSIVE'},
        })
        if dns == nil then
            return nil, err
        end
    end
    for _, addr in ipairs(dns) do
        local s = socket_new(addr.family, addr.type, addr.protocol)
        if s ~= nil then
            local backlog
            if prepare then
                backlog = prepare(s)
            else
                s:setsockopt('SOL_SOCKET', 'SO_REUSEADDR', 1) -- ignore error
            end
            if not tcp_server_bind_addr(s, addr) or not s:listen(backlog) then
                local save_errno = errno()
                unlink_on_close[s] = nil
                s:close()
                errno(save_errno)
                return nil, errno.strerror()
            end
            return s, addr
        end
    end
    errno(errno.EAFNOSUPPORT)
    return nil, errno.strerror()
end

local function tcp_server_create(host, port, opts, timeout)
    local prepare
    if type(opts) == 'function' then
        prepare = opts
    elseif type(opts) == 'table' then
        if opts.prepare ~= nil and type(opts.prepare) ~= 'function' then
            usage('Usage: socket.tcp_server_create(host, port, prepare | opts)')
        end
        prepare = opts.prepare
    else
        usage('Usage: socket.tcp_server_create(host, port, prepare | opts)')
    end
    return tcp_server_bind(host, port, prepare, timeout)
end

local function server_of(opts, what)
    local server = {}
    if type(opts) == 'function' then
        server.handler = opts
    elseif type(opts) == 'table' then
        if type(opts.handler) ~= 'function' or (opts.prepare ~= nil and
            type(opts.prepare) ~= 'function') then
            usage(what)
        end
        for k, v in pairs(opts) do
            server[k] = v
        end
    else
        usage(what)
    end
    server.name = server.name or 'server'
    return server
end

local function tcp_server_loop(s, opts)
    local server = server_of(opts, 'Usage: socket.tcp_server_loop(socket, handler | opts)')
    if type(s) == 'number' then
        s = internal.from_fd(s)
    end
    return tcp_server_loop_impl(server, s)
end

local function tcp_server(host, port, opts, timeout)
    local server = server_of(opts, 'Usage: socket.tcp_server(host, port, handler | opts)')
    local s, addr = tcp_server_bind(host, port, server.prepare, timeout)
    if not s then
        return nil, addr
    end
    fiber.create(tcp_server_loop_impl, server, s, addr)
    return s, addr
end

return setmetatable({
    from_fd = internal.from_fd,
    socketpair = socket_socketpair,
    getaddrinfo = getaddrinfo,
    tcp_connect = tcp_connect,
    tcp_server = tcp_server,
    tcp_server_create = tcp_server_create,
    tcp_server_loop = tcp_server_loop,
    iowait = internal.iowait,
    internal = internal,
}, {
    __call = function(_, ...) return socket_new(...) end,
    -- LuaSocket emulation (lsocket.lua): socket.tcp, connect, bind.
    __index = lsocket({
        socket_new = socket_new,
        tcp_connect = tcp_connect,
        tcp_server_bind = tcp_server_bind,
        getaddrinfo = getaddrinfo,
        set_errno = set_errno,
    }),
})
