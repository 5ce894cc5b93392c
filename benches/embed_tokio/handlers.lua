-- The Lua module both sides of benches/embed_tokio call (see README.md).
-- `host_wait(x)` is a Rust async function the host registers: it hands `x`
-- to a new tokio task and awaits its answer through a oneshot.
local M = {}

-- (a) A handler that waits once per call.
function M.wait_call(x)
    return host_wait(x) + 1
end

-- (b) A handler that does not wait: about 400 Lua instructions.
function M.work_call(x)
    local s = 0
    for i = 1, 100 do
        s = s + (i * x) % 7
    end
    return s
end

return M
