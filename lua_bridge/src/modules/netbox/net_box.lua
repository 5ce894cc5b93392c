-- The Lua face of luafiber's `net.box` (see mod.rs): Tarantool 2.6's
-- src/box/lua/net_box.lua (the connection object, its state machine and
-- triggers, spaces and indexes) over the C functions of calls.rs, which do
-- the requests, the transport and the futures. Run once per cord by the
-- module's loader, which passes `net.box.lib`.
local lib = ...
local fiber = require('fiber')
local msgpack = require('msgpack')

local perform = lib.perform
local lib_set_state = lib.set_state
local NULL = msgpack.NULL
local fiber_clock = fiber.clock
local max = math.max
local unpack = unpack or table.unpack

-- IPROTO request types.
local PING, CALL, CALL_16, EVAL = 64, 10, 6, 8
local SELECT, INSERT, REPLACE, UPDATE, DELETE, UPSERT = 1, 2, 3, 4, 5, 9
-- How answers are decoded (calls.rs, `decode_arg`).
local D_PING, D_MULTI, D_TABLE, D_FIRST, D_NOTHING = 0, 1, 2, 3, 4

local E_UNKNOWN = 0
local E_PROC_LUA = 32
local E_NO_SUCH_SPACE = 36
local E_NO_CONNECTION = 77

local VSPACE_ID, VINDEX_ID, VCOLLATION_ID = 281, 289, 277
local DEFAULT_CONNECT_TIMEOUT = 10
local TIMEOUT_INFINITY = 500 * 365 * 86400
local ASYNC = {is_async = true}

local is_final_state = {closed = true, error = true}

local ITERATORS = {
    EQ = 0, REQ = 1, ALL = 2, LT = 3, LE = 4, GE = 5, GT = 6,
    BITS_ALL_SET = 7, BITS_ANY_SET = 8, BITS_ALL_NOT_SET = 9,
    OVERLAPS = 10, NEIGHBOR = 11,
}

local function box_error(code, msg)
    error(lib.error(code, msg), 3)
end

local log
local function log_warn(...)
    log = log or require('log')
    log.warn(...)
end

--
-- Triggers: Tarantool's internal.trigger.
--
local function is_callable(f)
    if type(f) == 'function' then
        return true
    end
    local mt = type(f) == 'table' and getmetatable(f)
    return mt and type(mt.__call) == 'function' or false
end

local trigger_mt = {
    __call = function(self, new, old)
        if new ~= nil and not is_callable(new) then
            error(string.format("Usage: %s(callable)", self.name))
        end
        if old ~= nil and not is_callable(old) then
            error("Usage: trigger(new_callable, old_callable)")
        end
        if new == nil and old == nil then
            local copy = {}
            for i, f in ipairs(self) do copy[i] = f end
            return copy
        elseif old == nil then
            table.insert(self, new)
            return
        end
        for pos, f in ipairs(self) do
            if f == old then
                if new == nil then
                    table.remove(self, pos)
                else
                    self[pos] = new
                end
                return old
            end
        end
        error(string.format("%s: trigger is not found", self.name))
    end,
    __index = {
        run = function(self, ...)
            for _, f in ipairs(self) do
                f(...)
            end
        end,
    },
}

local function trigger_new(name)
    return setmetatable({name = name}, trigger_mt)
end

--
-- URIs: the `uri` module when there is one, else the forms net.box takes.
--
local function parse_uri(str)
    local ok, urilib = pcall(require, 'uri')
    if ok and type(urilib) == 'table' and urilib.parse then
        return urilib.parse(str)
    end
    local res = {}
    local rest = str
    local at = rest:find('@[^@]*$')
    if at then
        local cred = rest:sub(1, at - 1)
        rest = rest:sub(at + 1)
        local colon = cred:find(':', 1, true)
        if colon then
            res.login, res.password = cred:sub(1, colon - 1), cred:sub(colon + 1)
        else
            res.login = cred
        end
    end
    if rest:match('^%d+$') then
        res.service = rest
        return res
    end
    if rest:sub(1, 6) == 'unix/:' then
        res.host, res.service = 'unix/', rest:sub(7)
        return res
    end
    local host, port = rest:match('^%[(.*)%]:(%w+)$')
    if not host then
        host, port = rest:match('^([^:]*):(%w+)$')
    end
    if not host then
        return nil
    end
    res.host, res.service = host, port
    return res
end

local function parse_connect_params(host_or_uri, ...)
    local port, opts = ...
    if type(host_or_uri) == 'table' then host_or_uri, port, opts = ... end
    if type(port) == 'table' then opts = port; port = nil end
    if opts == nil then
        opts = {}
    else
        local copy = {}
        for k, v in pairs(opts) do copy[k] = v end
        opts = copy
    end
    local host = host_or_uri
    if port == nil then
        local url = parse_uri(tostring(host))
        if url == nil or url.service == nil then
            box_error(E_PROC_LUA,
                      "usage: connect(uri[, opts] | host, port[, opts])")
        end
        host, port = url.host or 'localhost', url.service
        if opts.user == nil and opts.password == nil then
            opts.user, opts.password = url.login, url.password
        end
    end
    -- A number host is taken as text, as Tarantool's tostring does.
    if type(host) == 'number' then host = tostring(host) end
    return host, tostring(port), opts
end

-- Master's check of the connect options.
local CONNECT_OPTS = {
    user = 'string', password = 'string', wait_connected = 'number|boolean',
    reconnect_after = 'number', connect_timeout = 'number',
    fetch_schema = 'boolean', call_16 = 'boolean', console = 'boolean',
    required_protocol_version = 'number', required_protocol_features = 'table',
    auth_type = 'string',
}

local function check_connect_opts(opts)
    for k, v in pairs(opts) do
        local want = CONNECT_OPTS[k]
        if want == nil then
            box_error(E_PROC_LUA, string.format(
                "unexpected option '%s'", tostring(k)))
        end
        if not want:find(type(v), 1, true) then
            box_error(E_PROC_LUA, string.format(
                "options parameter '%s' should be of type %s", k,
                (want:gsub('|', ' or '))))
        end
    end
end

local remote_methods = {}

local function remote_serialize(self)
    return {
        host = self.host,
        port = self.port,
        opts = next(self.opts) and self.opts,
        state = self.state,
        error = self.error,
        protocol = self.protocol,
        schema_version = self.schema_version,
        peer_uuid = self.peer_uuid,
        peer_version_id = self.peer_version_id,
    }
end

local remote_mt = {
    __index = remote_methods, __serialize = remote_serialize,
    __metatable = false,
}

--
-- The state machine.
--
local function set_state(conn, state, code, msg)
    conn.state = state
    conn.error = msg
    lib_set_state(conn._transport, state, code, msg)
    local triggers
    if state == 'active' then
        if not conn._is_connected then
            conn._is_connected = true
            triggers = conn._on_connect
        end
    elseif state == 'error' or state == 'error_reconnect' or
           state == 'closed' then
        if conn._is_connected then
            conn._is_connected = false
            triggers = conn._on_disconnect
        end
    end
    if state == 'error_reconnect' and msg ~= conn._last_reconnect_error then
        log_warn('%s:%s: %s', conn.host or "", conn.port or "", msg)
        conn._last_reconnect_error = msg
    end
    conn._state_cond:broadcast()
    if triggers then
        local ok, err = pcall(triggers.run, triggers, conn)
        if not ok then
            log_warn('net.box: a trigger failed: %s', tostring(err))
        end
    end
end

local function wait_state(conn, target, timeout)
    local deadline = fiber_clock() + (timeout or TIMEOUT_INFINITY)
    local cond = conn._state_cond
    local state = conn.state
    while not (state == target or (type(target) == 'table' and target[state])
               or is_final_state[state]) do
        local left = deadline - fiber_clock()
        if left <= 0 then
            break
        end
        cond:wait(left)
        state = conn.state
    end
    return state == target or (type(target) == 'table' and target[state])
           or false
end

function remote_methods:_install_schema(schema_version, spaces, indices,
                                        collations)
    local sl, space_mt, index_mt = {}, self._space_mt, self._index_mt
    for _, space in pairs(spaces) do
        local name, id = space[3], space[1]
        local s = {}
        if self.space ~= nil and self.space[id] ~= nil then
            s = self.space[id]
        else
            setmetatable(s, space_mt)
        end
        s.id = id
        s.name = name
        s.engine = space[4]
        s.field_count = space[5]
        s.enabled = true
        s.index = {}
        s.temporary = false
        s.is_sync = false
        s._format = space[7] or {}
        s.connection = self
        local opts = space[6]
        if type(opts) == 'table' then
            s.temporary = not not opts.temporary
            s.is_sync = not not opts.is_sync
        end
        sl[id] = s
        sl[name] = s
    end
    for _, index in pairs(indices) do
        local idx = {
            space = index[1], id = index[2], name = index[3],
            type = string.upper(index[4]), parts = {},
        }
        local opts, parts = index[5], index[6]
        if type(opts) == 'number' then
            idx.unique = opts == 1
            for k = 0, parts - 1 do
                idx.parts[k + 1] = {type = index[7 + k * 2 + 1],
                                    fieldno = index[7 + k * 2] + 1}
            end
        else
            for k = 1, #parts do
                local part = parts[k]
                local collation_id = part.collation
                local pk = {
                    type = part[2] or part.type,
                    fieldno = (part[1] or part.field) + 1,
                    is_nullable = part.is_nullable or false,
                }
                if collations == nil then
                    pk.collation_id = collation_id
                elseif collation_id ~= nil then
                    local c = collations[collation_id + 1]
                    pk.collation = c and c[2]
                end
                idx.parts[k] = pk
            end
            idx.unique = not not (type(opts) == 'table' and opts.unique)
        end
        if sl[idx.space] ~= nil then
            sl[idx.space].index[idx.id] = idx
            sl[idx.space].index[idx.name] = idx
            idx.space = sl[idx.space]
            setmetatable(idx, index_mt)
        end
    end
    self.schema_version = schema_version
    self.space = sl
    lib.set_schema_version(self._transport, schema_version)
    local ok, err = pcall(self._on_schema_reload.run, self._on_schema_reload,
                          self)
    if not ok then
        log_warn('net.box: a trigger failed: %s', tostring(err))
    end
end

-- Fetches _vspace, _vindex and _vcollation (as 2.6 does, pipelined) and
-- installs them; nil and a message when the connection must fail.
local function fetch_schema(conn)
    local t = conn._transport
    local has_vcollation = (conn.peer_version_id or 0) >= 0x020201
    local f1 = perform(t, SELECT, D_TABLE, ASYNC, VSPACE_ID, 0, 2, 0,
                       0xFFFFFFFF)
    local f2 = perform(t, SELECT, D_TABLE, ASYNC, VINDEX_ID, 0, 2, 0,
                       0xFFFFFFFF)
    local f3 = has_vcollation and
               perform(t, SELECT, D_TABLE, ASYNC, VCOLLATION_ID, 0, 2, 0,
                       0xFFFFFFFF)
    local spaces, err = f1:wait_result()
    if err then return nil, err end
    local indices
    indices, err = f2:wait_result()
    if err then return nil, err end
    local collations
    if f3 then
        collations, err = f3:wait_result()
        if err then
            if err.code ~= E_NO_SUCH_SPACE then return nil, err end
            collations = nil
        end
    end
    conn:_install_schema(lib.seen_schema_version(t), spaces, indices,
                         collations)
    return true
end

local function reload_schema_fiber(conn)
    if conn.state ~= 'active' then
        return
    end
    set_state(conn, 'fetch_schema')
    local ok, err = fetch_schema(conn)
    if conn.state ~= 'fetch_schema' then
        return
    end
    if not ok then
        conn._session_error = err
        lib.close(conn._transport)
        return
    end
    set_state(conn, 'active')
end

-- watch.lua's functions (made below, once check_remote_arg is).
local watch

local function reader_loop(conn, session)
    local t = conn._transport
    while true do
        local what, v, data = lib.run(t)
        if what == 'event' then
            local ok, err = pcall(watch.on_event, conn, v, data)
            if not ok then
                what = 'error'
                v = type(err) == 'table' and err.message or tostring(err)
                lib.close(t)
            end
        end
        if what == 'schema' then
            if conn.opts.fetch_schema ~= false then
                fiber.new(reload_schema_fiber, conn)
            end
        elseif what ~= 'event' then
            session.error = v
            session.done = true
            session.cond:broadcast()
            return
        end
    end
end

local function reconnect_timeout(conn)
    local r = conn.opts.reconnect_after
    if type(r) == 'number' and r > 0 then
        return r
    end
end

-- One connection's life: connect, auth, schema, serve until it fails.
-- Returns the error code and message it failed with.
local function session(conn, user, password)
    local t = conn._transport
    local opts = conn.opts
    local greeting, err = lib.connect(t, conn.host, conn.port,
                                      opts.connect_timeout or
                                      DEFAULT_CONNECT_TIMEOUT)
    if not greeting then
        return E_NO_CONNECTION, err
    end
    if conn.state == 'closed' then
        lib.close(t)
        return
    end
    if greeting.protocol ~= 'Binary' then
        lib.close(t)
        return E_NO_CONNECTION, 'Unsupported protocol: ' .. greeting.protocol
    end
    conn.protocol = greeting.protocol
    conn.peer_uuid = greeting.uuid
    conn.peer_version_id = greeting.version_id
    local s = {cond = fiber.cond(), done = false}
    conn._session_error = nil
    fiber.new(reader_loop, conn, s)
    fiber.new(lib.writer, t)
    set_state(conn, 'auth')
    local ok_id, e_id = watch.identify(conn, greeting.version_id,
                                       opts.connect_timeout or
                                       DEFAULT_CONNECT_TIMEOUT)
    if not ok_id then
        lib.close(t)
        return E_NO_CONNECTION, e_id.message
    end
    if user then
        local ok, e = lib.auth(t, user, password, greeting.salt)
        if not ok then
            lib.close(t)
            return E_NO_CONNECTION, e.message
        end
    end
    if opts.fetch_schema ~= false then
        set_state(conn, 'fetch_schema')
        local ok, e = fetch_schema(conn)
        if not ok then
            lib.close(t)
            return E_NO_CONNECTION, e.message
        end
    end
    if conn.state == 'closed' then
        lib.close(t)
        return
    end
    set_state(conn, 'active')
    while not s.done and conn.state ~= 'closed' do
        s.cond:wait()
    end
    lib.close(t)
    local e = conn._session_error
    if e then
        return E_NO_CONNECTION, e.message
    end
    return E_NO_CONNECTION, s.error
end

local function worker(conn, user, password)
    fiber.name(string.format('%s:%s (net.box)', conn.host, conn.port),
               {truncate = true})
    while conn.state ~= 'closed' do
        -- An error raised on the way (bad arguments reaching the
        -- transport, ...) ends this session as a failure to connect: the
        -- connection reports it in `error` rather than staying `initial`
        -- with its worker dead.
        local ok, code, msg = pcall(session, conn, user, password)
        if not ok then
            code, msg = E_NO_CONNECTION, tostring(code)
            pcall(lib.close, conn._transport)
        end
        if conn.state == 'closed' then
            break
        end
        local timeout = reconnect_timeout(conn)
        if not timeout then
            set_state(conn, 'error', code, msg)
            break
        end
        set_state(conn, 'error_reconnect', code, msg)
        fiber.sleep(timeout)
    end
    conn._fiber = nil
end

local space_metatable, index_metatable

local function new_sm(host, port, opts)
    check_connect_opts(opts)
    local user, password = opts.user, opts.password
    opts.password = nil
    if user == nil and password ~= nil then
        box_error(E_PROC_LUA, 'net.box: user is not defined')
    end
    if user ~= nil and password == nil then password = '' end
    local conn = setmetatable({
        host = host, port = port, opts = opts, state = 'initial',
        space = {},
    }, remote_mt)
    conn._transport = lib.new_transport()
    conn._state_cond = fiber.cond()
    conn._on_schema_reload = trigger_new('on_schema_reload')
    conn._on_disconnect = trigger_new('on_disconnect')
    conn._on_connect = trigger_new('on_connect')
    conn._is_connected = false
    conn._space_mt = space_metatable(conn)
    conn._index_mt = index_metatable(conn)
    if opts.call_16 then
        conn.call = conn.call_16
        conn.eval = conn.eval_16
    end
    conn._fiber = fiber.new(worker, conn, user, password)
    if opts.wait_connected ~= false then
        wait_state(conn, 'active', tonumber(opts.wait_connected))
    end
    return conn
end

local function connect(...)
    return new_sm(parse_connect_params(...))
end

local function check_remote_arg(remote, method)
    if type(remote) ~= 'table' then
        box_error(E_PROC_LUA, string.format(
            'Use remote:%s(...) instead of remote.%s(...):', method, method))
    end
end

watch = lib.make_watch(lib, remote_methods, box_error, check_remote_arg)

function remote_methods:close()
    check_remote_arg(self, 'close')
    if not is_final_state[self.state] then
        set_state(self, 'closed', E_NO_CONNECTION, 'Connection closed')
    end
    lib.close(self._transport)
    local f = self._fiber
    if f ~= nil and f:status() == 'suspended' then
        f:wakeup()
    end
end

function remote_methods:on_schema_reload(...)
    check_remote_arg(self, 'on_schema_reload')
    return self._on_schema_reload(...)
end

function remote_methods:on_disconnect(...)
    check_remote_arg(self, 'on_disconnect')
    return self._on_disconnect(...)
end

function remote_methods:on_connect(...)
    check_remote_arg(self, 'on_connect')
    return self._on_connect(...)
end

function remote_methods:is_connected()
    check_remote_arg(self, 'is_connected')
    return self.state == 'active' or self.state == 'fetch_schema'
end

function remote_methods:wait_connected(timeout)
    check_remote_arg(self, 'wait_connected')
    return wait_state(self, 'active', timeout)
end

function remote_methods:wait_state(state, timeout)
    check_remote_arg(self, 'wait_state')
    return wait_state(self, state, timeout)
end

function remote_methods:ping(opts)
    check_remote_arg(self, 'ping')
    return (pcall(perform, self._transport, PING, D_PING, opts))
end

function remote_methods:reload_schema()
    check_remote_arg(self, 'reload_schema')
    self:ping()
end

function remote_methods:call(func_name, args, opts)
    if type(self) ~= 'table' then check_remote_arg(self, 'call') end
    if args ~= nil and type(args) ~= 'table' then
        error("Use remote:call(func_name, {arg1, arg2, ...}, opts) "..
              "instead of remote:call(func_name, arg1, arg2, ...)")
    end
    if type(func_name) ~= 'string' then func_name = tostring(func_name) end
    return perform(self._transport, CALL, D_MULTI, opts, func_name, args)
end

function remote_methods:eval(code, args, opts)
    if type(self) ~= 'table' then check_remote_arg(self, 'eval') end
    if args ~= nil and type(args) ~= 'table' then
        error("Use remote:eval(expression, {arg1, arg2, ...}, opts) "..
              "instead of remote:eval(expression, arg1, arg2, ...)")
    end
    -- master's netbox_encode_eval takes the expression by lua_tolstring
    if type(code) == 'number' then code = tostring(code) end
    return perform(self._transport, EVAL, D_MULTI, opts, code, args)
end

-- @deprecated since 1.7.4
function remote_methods:call_16(func_name, ...)
    check_remote_arg(self, 'call')
    return (perform(self._transport, CALL_16, D_TABLE, nil,
                    tostring(func_name), {...}))
end

-- @deprecated since 1.7.4
function remote_methods:eval_16(code, ...)
    check_remote_arg(self, 'eval')
    if type(code) == 'number' then code = tostring(code) end
    return unpack((perform(self._transport, EVAL, D_TABLE, nil, code,
                           {...})))
end

--
-- Spaces and indexes. Tuples are Lua tables (luafiber has no box.tuple).
--
local function check_space_arg(s, method)
    if type(s) ~= 'table' or s.id == nil then
        error(string.format(
            'Use space:%s(...) instead of space.%s(...)', method, method))
    end
end

local function check_index_arg(i, method)
    if type(i) ~= 'table' or i.id == nil then
        error(string.format(
            'Use index:%s(...) instead of index.%s(...)', method, method))
    end
end

local function primary(s)
    local pk = s.index[0]
    if pk == nil then
        box_error(39, string.format("No index #0 is defined in space '%s'",
                                    s.name))
    end
    return pk
end

local function as_key(key)
    if key == nil or type(key) == 'table' then
        return key
    end
    return {key}
end

local function iterator_of(opts, key_is_nil)
    local it = opts and opts.iterator
    if it == nil then
        return key_is_nil and ITERATORS.ALL or ITERATORS.EQ
    end
    if type(it) == 'number' then
        return it
    end
    local n = type(it) == 'string' and ITERATORS[string.upper(it)]
    if n == nil then
        box_error(E_PROC_LUA, "Unknown iterator type '" .. tostring(it) .. "'")
    end
    return n
end

local function nothing_or_data(value)
    if value ~= nil then
        return value
    end
end

space_metatable = function(remote)
    local methods = {}

    function methods:insert(tuple, opts)
        check_space_arg(self, 'insert')
        return perform(remote._transport, INSERT, D_FIRST, opts, self.id,
                       tuple)
    end

    function methods:replace(tuple, opts)
        check_space_arg(self, 'replace')
        return perform(remote._transport, REPLACE, D_FIRST, opts, self.id,
                       tuple)
    end

    function methods:select(key, opts)
        check_space_arg(self, 'select')
        return primary(self):select(key, opts)
    end

    function methods:pairs(key, opts)
        check_space_arg(self, 'pairs')
        return primary(self):pairs(key, opts)
    end

    function methods:delete(key, opts)
        check_space_arg(self, 'delete')
        return primary(self):delete(key, opts)
    end

    function methods:update(key, oplist, opts)
        check_space_arg(self, 'update')
        return primary(self):update(key, oplist, opts)
    end

    function methods:upsert(tuple, oplist, opts)
        check_space_arg(self, 'upsert')
        perform(remote._transport, UPSERT, D_NOTHING, opts, self.id, tuple,
                oplist)
    end

    function methods:get(key, opts)
        check_space_arg(self, 'get')
        return primary(self):get(key, opts)
    end

    function methods:count(key, opts)
        check_space_arg(self, 'count')
        return primary(self):count(key, opts)
    end

    function methods:format(format)
        if format == nil then
            return self._format
        end
        box_error(E_PROC_LUA, "net.box: setting space format is not supported")
    end

    return {__index = methods, __metatable = false}
end

index_metatable = function(remote)
    local methods = {}

    function methods:select(key, opts)
        check_index_arg(self, 'select')
        local key_is_nil = key == nil or
                           (type(key) == 'table' and #key == 0)
        local iterator = iterator_of(opts, key_is_nil)
        local offset = tonumber(opts and opts.offset) or 0
        local limit = tonumber(opts and opts.limit) or 0xFFFFFFFF
        return (perform(remote._transport, SELECT, D_TABLE, opts,
                        self.space.id, self.id, iterator, offset, limit,
                        as_key(key)))
    end

    function methods:pairs(key, opts)
        check_index_arg(self, 'pairs')
        return ipairs(self:select(key, opts))
    end

    function methods:get(key, opts)
        check_index_arg(self, 'get')
        if opts and opts.buffer then
            error("index:get() doesn't support `buffer` argument")
        end
        return nothing_or_data(perform(remote._transport, SELECT, D_FIRST,
                                       opts, self.space.id, self.id,
                                       ITERATORS.EQ, 0, 2, as_key(key)))
    end

    function methods:min(key, opts)
        check_index_arg(self, 'min')
        return nothing_or_data(perform(remote._transport, SELECT, D_FIRST,
                                       opts, self.space.id, self.id,
                                       ITERATORS.GE, 0, 1, as_key(key)))
    end

    function methods:max(key, opts)
        check_index_arg(self, 'max')
        return nothing_or_data(perform(remote._transport, SELECT, D_FIRST,
                                       opts, self.space.id, self.id,
                                       ITERATORS.LE, 0, 1, as_key(key)))
    end

    function methods:count(key, opts)
        check_index_arg(self, 'count')
        if opts and opts.buffer then
            error("index:count() doesn't support `buffer` argument")
        end
        local code = string.format('box.space.%s.index.%s:count',
                                   self.space.name, self.name)
        local it = opts and opts.iterator
        return perform(remote._transport, CALL, D_FIRST, opts, code,
                       {key, {iterator = it}})
    end

    function methods:delete(key, opts)
        check_index_arg(self, 'delete')
        return nothing_or_data(perform(remote._transport, DELETE, D_FIRST,
                                       opts, self.space.id, self.id,
                                       as_key(key)))
    end

    function methods:update(key, oplist, opts)
        check_index_arg(self, 'update')
        return nothing_or_data(perform(remote._transport, UPDATE, D_FIRST,
                                       opts, self.space.id, self.id,
                                       as_key(key), oplist))
    end

    return {__index = methods, __metatable = false}
end

local this_module = {
    connect = connect,
    new = connect, -- Tarantool < 1.7.1 compatibility
    _lib = lib,
    _E_UNKNOWN = E_UNKNOWN,
}
-- net.box.self (self.lua), on every cord (master: the main one only)
this_module.self = lib.make_self(check_remote_arg, lib.error)

return this_module
