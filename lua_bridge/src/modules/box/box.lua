-- The `box` table (Tarantool's src/box/lua/*.lua, without storage).
-- Called with `box.internal` (the C functions of the Rust parts); returns
-- the table that becomes the global `box`.
local internal = ...

local box = {
    internal = internal,
    -- Spaces need storage, which luafiber has none of.
    space = {},
}

return box
