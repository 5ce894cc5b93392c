-- require('tarantool') and the global _TARANTOOL (master's
-- src/lua/init.c, luaopen_tarantool). Called with `box.internal`.
--
-- The version: luafiber's Lua API offers no feature a library turns on
-- for a later version (box.info.replicaset, ...), so it names itself 2.6.0
-- here (its IPROTO greeting says 2.10.0, for the clients' ID and
-- watchers, which the server answers): vshard 0.1.42 then
-- takes its >= 1.10.1 / >= 2.1.0 / >= 2.4.0 paths and none of its 2.10+
-- ones (docs/lua/tarantool.md).
local internal = ...

local VERSION = '2.6.0-0-g0000000'

local target, luafiber_version, engine = internal.build()

_TARANTOOL = VERSION

return {
    version = VERSION,
    -- vshard tells Tarantool Enterprise apart by this.
    package = 'Tarantool',
    build = {
        target = target,
        options = 'luafiber ' .. luafiber_version .. ' (' .. engine .. ')',
        compiler = 'rustc',
        mod_format = 'so',
        flags = '',
        linking = 'dynamic',
        asan = false,
        test_build = false,
        tzdata_version = nil,
    },
    -- Not Tarantool's: luafiber's own version, for scripts that want to
    -- tell it from Tarantool (_TARANTOOL is set on both).
    luafiber = luafiber_version,
    debug = {
        getsources = function() return nil end,
    },
}
