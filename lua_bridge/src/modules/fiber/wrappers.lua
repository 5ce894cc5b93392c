-- The hot methods of fiber.channel and fiber.cond on LuaJIT (see
-- wrappers.rs).
--
-- Each one first tries the case that neither blocks nor fails through an FFI
-- call that cannot raise, compiled into the caller's trace. Anything else (a
-- wrong argument, a closed or full channel, a wait) goes to the C method,
-- which checks, blocks and raises; with no timeout, the arguments checked
-- here are not checked again (`put_slot`, `get` and `wait` are C functions
-- that check only whether they may block).
--
-- A value in a channel lives at the slot the channel holds: slots up to
-- FAST in VALS, whose array part holds all of them (no other key is ever
-- stored there, so it is never rehashed), the rest in OVER. The primitive
-- `try_put` hands out slots of VALS only, so storing the value never
-- allocates and cannot fail after the slot has gone to a reader. When it
-- cannot put and is asked to, it reserves the slot instead (a negative
-- result): the value is stored there and the slot passed to `put_slot`,
-- which blocks, so the C function need not move the value itself.
local CH_MT, COND_MT, VALS, OVER, FAST,
      try_put, try_get, signal, broadcast, wait, get, put_slot = ...
local getmetatable, type, select, error = getmetatable, type, select, error

local ok, ffi = pcall(require, 'ffi')
if not ok or type(ffi) ~= 'table' or not ffi.cast then return end
local slot_fn = ffi.typeof('int (*)(void *)')
local reserve_fn = ffi.typeof('int (*)(void *, int)')
local void_fn = ffi.typeof('void (*)(void *)')
try_put, try_get = ffi.cast(reserve_fn, try_put), ffi.cast(slot_fn, try_get)
signal, broadcast = ffi.cast(void_fn, signal), ffi.cast(void_fn, broadcast)

local ch, cond = CH_MT.__index, COND_MT.__index
local c_put, c_get = ch.put, ch.get
local c_wait, c_signal, c_broadcast = cond.wait, cond.signal, cond.broadcast

-- A timeout the fast paths take: none, or a number >= 0 (not NaN); the C
-- methods read the rest (numeric strings) or raise.
local function timeout_ok(t)
    return t == nil or type(t) == 'number' and t >= 0
end

function ch.put(self, ...)
    if getmetatable(self) == CH_MT and select('#', ...) ~= 0
            and timeout_ok((select(2, ...))) then
        local blocking = (select(2, ...)) == nil
        local s = try_put(self, blocking and 1 or 0)
        if s > 0 then
            VALS[s] = (...)
            return true
        end
        if s < 0 then
            VALS[-s] = (...)
            return put_slot(self, -s)
        end
    end
    return c_put(self, ...)
end

-- The value at slot `s`, freed: a `get` reads it before anything else
-- runs.
local function take(s)
    if s > FAST then
        local v = OVER[s]
        OVER[s] = nil
        return v
    end
    local v = VALS[s]
    VALS[s] = false
    return v
end

-- `get` and `wait` take fixed arguments (the C methods ignore any beyond
-- the timeout) and call the C function that may block with one result, not
-- as a tail call: a trace then stitches around it and goes on in the
-- caller, even when the caller takes all the results (`ch2:put(ch1:get())`,
-- where a tail call cannot be stitched), and without the vararg frame that
-- would end the stitched trace at the wrapper's return.
function ch.get(self, timeout)
    if getmetatable(self) == CH_MT and timeout_ok(timeout) then
        local s = try_get(self)
        if s > 0 then return take(s) end
        if timeout == nil then
            s = get(self)
            if s > 0 then return take(s) end
            return nil
        end
    end
    return c_get(self, timeout)
end

-- `wait` is the C method without the argument checks, done here; with no
-- timeout it ends only signalled, returning nothing, or cancelled,
-- returning the error to raise.
function cond.wait(self, timeout)
    if timeout == nil and getmetatable(self) == COND_MT then
        local err = wait(self)
        if err ~= nil then error(err) end
        return true
    end
    return c_wait(self, timeout)
end

function cond.signal(self, ...)
    if getmetatable(self) ~= COND_MT then return c_signal(self, ...) end
    signal(self)
end

function cond.broadcast(self, ...)
    if getmetatable(self) ~= COND_MT then return c_broadcast(self, ...) end
    broadcast(self)
end
