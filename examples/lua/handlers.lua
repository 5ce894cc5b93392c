-- Handlers the `lua_call` example calls by name from Rust, each on its own
-- fiber (as Tarantool serves iproto CALL). Loaded as the module `handlers`.
local fiber = require('fiber')

local handlers = {}
local hits = 0

-- A plain function: no yield.
function handlers.add(a, b)
    hits = hits + 1
    return a + b
end

-- Waits as if for I/O; calls to it overlap.
function handlers.fetch(key, delay)
    hits = hits + 1
    fiber.sleep(delay or 0.05)
    return {key = key, value = string.upper(key), fiber = fiber.id()}
end

-- Raises: the Rust caller gets the message and traceback.
function handlers.fail(msg)
    error('handler failed: ' .. tostring(msg))
end

function handlers.stats()
    return hits
end

return handlers
