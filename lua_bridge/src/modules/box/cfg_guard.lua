-- The guard of box.cfg (box, not the server), run last of box's parts at
-- setup: until the first box.cfg{} call it hides the members of box that
-- need it (as master's load_cfg.lua does), and box.cfg is a function that
-- loads cfg.lua (master's load_cfg.lua without storage) at its first call,
-- so a script that never configures box keeps that code out of its heap.
-- Called with `box` and `box.internal`.
local box, internal = ...

local state = {status = 'unconfigured', hidden = {}}

--- box.internal.cfg_status(): 'unconfigured', 'loading' or 'running'
--- (box.info.status).
function internal.cfg_status()
    return state.status
end

local load_cfg
local function impl()
    if load_cfg == nil then
        load_cfg = internal.load_chunk('cfg')(box, internal, state)
    end
    return load_cfg
end

-- box.internal.template_cfg and default_cfg (master's tables of option
-- types and defaults) are cfg.lua's.
setmetatable(internal, {
    __index = function(_, key)
        if key == 'template_cfg' or key == 'default_cfg' then
            impl()
            return rawget(internal, key)
        end
        return nil
    end,
})

-- Members of box that work before box.cfg{} (master's
-- box_cfg_guard_whitelist); the others raise ER_UNCONFIGURED until then.
local whitelist = {
    error = true, internal = true, index = true, lib = true, session = true,
    tuple = true, runtime = true, malloc = true, ctl = true, watch = true,
    watch_once = true, broadcast = true, txn_isolation_level = true,
    NULL = true, info = true, iproto = true, priv = true, schema = true,
    backup = true, cfg = true,
}
for k, v in pairs(box) do
    if not whitelist[k] then
        state.hidden[k] = v
        box[k] = nil
    end
end
setmetatable(box, {
    __index = function(_, key)
        if state.hidden[key] ~= nil then
            error(internal.client_error(2, box.error.UNCONFIGURED))
        end
        return nil
    end,
})

--- box.cfg{...}: configures box (first call), then changes the dynamic
--- options; after the first call box.cfg.NAME reads each option.
box.cfg = function(...)
    return impl()(...)
end
