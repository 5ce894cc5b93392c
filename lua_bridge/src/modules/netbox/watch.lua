-- Master's additions to net.box's connection object (src/box/lua/net_box.lua):
-- conn:watch and conn:watch_once with their watchers, what ID tells of the
-- peer (peer_protocol_version, peer_protocol_features), and conn:_request.
-- Called once by net_box.lua with `lib`, the connection methods and its
-- helpers; returns the functions the state machine calls.
local lib, remote_methods, box_error, check_remote_arg = ...
local fiber = require('fiber')
local msgpack = require('msgpack')

local perform = lib.perform
local E_ILLEGAL_PARAMS = 1
local E_PROC_LUA = 32
local E_UNKNOWN_REQUEST_TYPE = 48
local PING, CALL, CALL_16, EVAL, WATCH_ONCE = 64, 10, 6, 8, 77
-- perform's type for bytes sent as they are (calls.rs)
local INJECT = 0xFFFFFFFF
local D_PING, D_MULTI, D_TABLE, D_FIRST = 0, 1, 2, 3

-- Feature ids (master's iproto_features.h) by their names in
-- peer_protocol_features.
local FEATURE_NAMES = {
    [0] = 'streams', 'transactions', 'error_extension', 'watchers',
    'pagination', 'space_and_index_names', 'watch_once',
    'dml_tuple_extension', 'call_ret_tuple_extension',
    'call_arg_tuple_extension', 'fetch_snapshot_cursor', 'is_sync',
    'insert_arrow',
}

local function features_of(ids)
    local f = {}
    for i = 0, #FEATURE_NAMES do
        f[FEATURE_NAMES[i]] = false
    end
    for _, id in ipairs(ids) do
        if FEATURE_NAMES[id] then
            f[FEATURE_NAMES[id]] = true
        end
    end
    return f
end

-- The ID step of a session (greeting 2.10.0 or later, as master): sets
-- what the peer said; nil and the error object when the connection must
-- fail. A peer that does not know ID (error 48) has version 0 and no
-- features.
local function identify(conn, version_id, timeout)
    local version, ids = 0, {}
    if version_id >= 0x020a00 then
        local v, r = lib.id(conn._transport, timeout)
        if v ~= nil then
            version, ids = v, r
        elseif r.code ~= E_UNKNOWN_REQUEST_TYPE then
            return nil, r
        end
    end
    conn.peer_protocol_version = version
    conn.peer_protocol_features = features_of(ids)
    return true
end

--
-- Watchers (master's watcher_methods).
--
local watcher_methods = {}
local watcher_mt = {
    __index = watcher_methods,
    __tostring = function() return 'net.box.watcher' end,
}
watcher_mt.__serialize = watcher_mt.__tostring

-- WATCH (or UNWATCH) when the peer has watchers and the connection is up
-- (master's luaT_netbox_transport_watch_or_unwatch); a reconnect sends
-- WATCH again for every key.
local function send_watch(conn, key, unwatch)
    local f = conn.peer_protocol_features
    if f and f.watchers and (conn.state == 'active' or
                             conn.state == 'fetch_schema') then
        lib.watch(conn._transport, key, unwatch)
    end
end

local run_async

-- Calls the watcher's function with the key's value, again while the
-- value changed under it; then acknowledges the value (WATCH again).
local function run(self)
    local state = self._state
    self._version = state.version
    local ok, err = pcall(self._func, state.key, state.value)
    if not ok then
        require('log').error(err)
    end
    if not self._state then
        -- unregistered while it ran
        return
    end
    if self._version == state.version then
        self._next = state.idle
        state.idle = self
        if not state.is_acknowledged then
            send_watch(self._conn, state.key)
            state.is_acknowledged = true
        end
    else
        return run(self)
    end
end

run_async = function(w)
    fiber.new(run, w)
end

--- watcher:unregister(): no more calls; the last watcher of a key
--- unsubscribes (UNWATCH).
function watcher_methods:unregister()
    if type(self) ~= 'table' then
        box_error(E_PROC_LUA,
                  'Use watcher:unregister() instead of watcher.unregister()')
    end
    local state = self._state
    if not state then
        box_error(E_PROC_LUA, 'Watcher is already unregistered')
    end
    self._state = nil
    local conn = self._conn
    if state.idle == self then
        state.idle = self._next
    elseif state.idle then
        local w = state.idle
        while w._next do
            if w._next == self then
                w._next = self._next
                break
            end
            w = w._next
        end
    end
    state.watcher_count = state.watcher_count - 1
    if state.watcher_count == 0 then
        send_watch(conn, state.key, true)
        conn._watchers[state.key] = nil
    end
end

--- conn:watch(key, func): func(key, value) runs in a new fiber with the
--- key's value on the server, and after each change of it.
function remote_methods:watch(key, func)
    check_remote_arg(self, 'watch')
    if type(key) ~= 'string' then
        box_error(E_PROC_LUA, 'key must be a string')
    end
    if type(func) ~= 'function' then
        box_error(E_PROC_LUA, 'func must be a function')
    end
    if not self._watchers then
        self._watchers = {}
        self._on_connect(function(conn)
            for k in pairs(conn._watchers) do
                send_watch(conn, k)
            end
        end)
    end
    local state = self._watchers[key]
    if not state then
        state = {key = key, value = nil, has_value = false, version = 0,
                 is_acknowledged = false, watcher_count = 0, idle = nil}
        send_watch(self, key)
        self._watchers[key] = state
    end
    local w = setmetatable({_conn = self, _func = func, _state = state,
                            _version = 0, _next = nil}, watcher_mt)
    state.watcher_count = state.watcher_count + 1
    if state.has_value then
        run_async(w)
    else
        w._next = state.idle
        state.idle = w
    end
    return w
end

-- What each request option must be (master's REQUEST_OPTION_TYPES).
local REQUEST_OPTION_TYPES = {
    is_async = 'boolean', on_push = 'function', on_push_ctx = 'any',
    return_raw = 'boolean', skip_header = 'boolean', timeout = 'number',
    buffer = 'any',
}

local function check_request_opts(opts)
    if opts == nil then
        return
    end
    if type(opts) ~= 'table' then
        box_error(E_ILLEGAL_PARAMS, 'options should be a table')
    end
    for k, v in pairs(opts) do
        local want = REQUEST_OPTION_TYPES[k]
        if want == nil then
            box_error(E_ILLEGAL_PARAMS,
                      "unexpected option '" .. tostring(k) .. "'")
        elseif want ~= 'any' and type(v) ~= want then
            box_error(E_ILLEGAL_PARAMS, "options parameter '" .. k ..
                      "' should be of type " .. want)
        end
    end
end

--- conn:watch_once(key[, opts]): the key's value on the server (nothing
--- when it has none), a request as any (timeout, is_async, return_raw).
function remote_methods:watch_once(key, opts)
    check_remote_arg(self, 'watch_once')
    if type(key) ~= 'string' then
        box_error(E_PROC_LUA, 'key must be a string')
    end
    check_request_opts(opts)
    return perform(self._transport, WATCH_ONCE, D_FIRST, opts, key)
end

-- An EVENT for `key` (its value as MessagePack, or nil): the idle
-- watchers run with it. A value that does not decode raises, which fails
-- the connection.
local function on_event(conn, key, data)
    local state = conn._watchers and conn._watchers[key]
    if not state then
        return
    end
    local value
    if data ~= nil then
        value = msgpack.decode(data)
    end
    state.value = value
    state.has_value = true
    state.version = state.version + 1
    state.is_acknowledged = false
    while state.idle do
        local w = state.idle
        state.idle = w._next
        run_async(w)
    end
end

--- conn:_request(method, opts, format, stream_id, ...): one request by
--- its name (master's internal entry, which tests use): 'PING', 'CALL',
--- 'CALL_16', 'EVAL', 'WATCH_ONCE', or 'INJECT' with bytes that go out as
--- they are, answered by the reply with the sync conn:_next_sync() told.
local METHODS = {
    PING = {PING, D_PING}, CALL = {CALL, D_MULTI}, CALL_16 = {CALL_16, D_TABLE},
    EVAL = {EVAL, D_MULTI}, WATCH_ONCE = {WATCH_ONCE, D_FIRST},
    INJECT = {INJECT, D_TABLE},
}
function remote_methods:_request(method, opts, _, _, ...)
    check_remote_arg(self, '_request')
    local m = METHODS[method]
    if not m then
        box_error(E_PROC_LUA, 'net.box: unknown method ' .. tostring(method))
    end
    return perform(self._transport, m[1], m[2], opts, ...)
end

--- conn:_inject(bytes[, opts]): `bytes` sent as they are (a test's packet).
function remote_methods:_inject(str, opts)
    check_request_opts(opts)
    return self:_request('INJECT', opts, nil, nil, str)
end

--- conn:_next_sync(): the sync of the next request.
function remote_methods:_next_sync()
    return lib.next_sync(self._transport)
end

return {identify = identify, on_event = on_event}
