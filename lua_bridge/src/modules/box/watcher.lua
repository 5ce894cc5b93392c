-- box.broadcast, box.watch and box.watch_once (master's src/box/lua/watcher.c
-- over src/box/watcher.c). The values live in the server's table
-- (server/watch.rs, as MessagePack: box.internal.watch_set/watch_get),
-- which the IPROTO sessions watching a key (WATCH/EVENT) and WATCH_ONCE
-- read too; the local watchers of box.watch live here.
-- Called with `box` and `box.internal`.
local box, internal = ...

local fiber = require('fiber')
local msgpack = require('msgpack')

local watch_set, watch_get = internal.watch_set, internal.watch_get

-- The local watchers by key: {version = n, watchers = {[w] = true}}.
local states = {}

local watcher_methods = {}
local watcher_mt = {
    __index = watcher_methods,
    __tostring = function() return 'box.watcher' end,
}
watcher_mt.__serialize = watcher_mt.__tostring

-- Runs a watcher's function with the key's value, again while the value
-- changed under it (master's watcher_do_run and watcher_ack); an error
-- is logged.
local function run(w)
    local state = w._state
    while true do
        w._version = state.version
        local data = watch_get(state.key)
        local ok, err
        if data == nil then
            ok, err = pcall(w._func, state.key)
        else
            ok, err = pcall(w._func, state.key, msgpack.decode(data))
        end
        if not ok then
            require('log').error(err)
        end
        if w._state == nil or w._version == state.version then
            break
        end
    end
    w._running = false
end

local function schedule(w)
    w._running = true
    fiber.new(run, w):name('box.watcher')
end

--- watcher:unregister(): no more calls (a running one finishes).
function watcher_methods.unregister(w)
    if getmetatable(w) ~= watcher_mt then
        error('Usage: watcher:unregister()', 0)
    end
    local state = w._state
    if state == nil then
        error('Watcher is already unregistered', 0)
    end
    w._state = nil
    state.watchers[w] = nil
    if next(state.watchers) == nil then
        states[state.key] = nil
    end
end

--- box.watch(key, func): calls func(key, value) in a new fiber now and
--- after each box.broadcast of key; returns the watcher.
function box.watch(...)
    if select('#', ...) ~= 2 then
        error('Usage: box.watch(key, function)', 0)
    end
    local key, func = ...
    if type(key) ~= 'string' and type(key) ~= 'number' then
        error("bad argument #1 to 'watch' (string expected, got " ..
              type(key) .. ')', 0)
    end
    if type(func) ~= 'function' then
        error("bad argument #2 to 'watch' (function expected, got " ..
              type(func) .. ')', 0)
    end
    key = tostring(key)
    local state = states[key]
    if state == nil then
        state = {key = key, version = 0, watchers = {}}
        states[key] = state
    end
    local w = setmetatable({_state = state, _func = func, _version = 0,
                            _running = false}, watcher_mt)
    state.watchers[w] = true
    schedule(w)
    return w
end

--- box.watch_once(key): key's value now (nothing when it has none).
function box.watch_once(...)
    if select('#', ...) ~= 1 then
        error('Usage: box.watch_once(key)', 0)
    end
    local key = ...
    if type(key) ~= 'string' and type(key) ~= 'number' then
        error("bad argument #1 to 'watch_once' (string expected, got " ..
              type(key) .. ')', 0)
    end
    local data = watch_get(tostring(key))
    if data == nil then
        return
    end
    return (msgpack.decode(data))
end

--- box.broadcast(key[, value]): sets key's value (nil: none) and wakes its
--- watchers, local and remote. Keys starting with 'box.' are the
--- system's.
function box.broadcast(...)
    local n = select('#', ...)
    if n ~= 1 and n ~= 2 then
        error('Usage: box.broadcast(key[, value])', 0)
    end
    local key, value = ...
    if type(key) ~= 'string' and type(key) ~= 'number' then
        error("bad argument #1 to 'broadcast' (string expected, got " ..
              type(key) .. ')', 0)
    end
    key = tostring(key)
    if key:sub(1, 4) == 'box.' then
        error("System event can't be override", 0)
    end
    internal.broadcast(key, value)
end

--- box.internal.broadcast(key, value): box.broadcast without the checks
--- (the system's keys too, as box.shutdown).
function internal.broadcast(key, value)
    local data
    if value ~= nil then
        data = msgpack.encode(value)
    end
    watch_set(key, data)
    local state = states[key]
    if state == nil then
        return
    end
    state.version = state.version + 1
    for w in pairs(state.watchers) do
        if not w._running then
            schedule(w)
        end
    end
end
