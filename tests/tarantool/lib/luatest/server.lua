-- `luatest.server` for lib/luatest.lua: luatest starts a separate Tarantool
-- instance; here the "server" is this process. `exec(fn, args)` calls
-- `fn(unpack(args))` here, `eval(code, args)` runs `code` here; `start()`
-- sets the log level of `box_cfg` and calls box.cfg{} (once: later calls
-- of box.cfg change options), listening on a Unix socket in the current
-- directory (`net_box_uri`, as luatest's instance does);
-- `grep_log(pattern)` searches what the process wrote so far (run.sh names
-- the file its output goes to in LUAFIBER_TEST_OUT).

local Server = {}
Server.__index = Server

local unpack = table.unpack or unpack
local count = 0

function Server:new(opts)
    count = count + 1
    opts = opts or {}
    return setmetatable({
        alias = opts.alias or 'server',
        box_cfg = opts.box_cfg or {},
        log_path = os.getenv('LUAFIBER_TEST_OUT'),
    }, self)
end

function Server:start()
    if self.box_cfg.log_level then
        require('log').cfg({level = self.box_cfg.log_level})
    end
    -- luatest's instance has run box.cfg{} when start() returns.
    if type(box) == 'table' and type(box.cfg) == 'function' then
        local cfg = {}
        for k, v in pairs(self.box_cfg) do cfg[k] = v end
        -- luatest's instance listens on a Unix socket, its net_box_uri.
        if cfg.listen == nil and box.internal.cfg_listen ~= nil then
            local fio = require('fio')
            cfg.listen = 'unix/:' .. fio.pathjoin(fio.cwd(), self.alias .. '.iproto')
        end
        box.cfg(cfg)
    end
    if type(box) == 'table' and type(box.cfg) == 'table' then
        self.net_box_uri = box.cfg.listen
        -- luatest's instance script lets the guest do anything.
        if box.cfg.listen ~= nil then
            box.schema.user.grant('guest', 'read,write,execute', 'universe',
                                  nil, {if_not_exists = true})
        end
    end
end

function Server:stop()
end

Server.drop = Server.stop

function Server:exec(fn, args)
    return fn(unpack(args or {}))
end

function Server:eval(code, args)
    local f = assert((loadstring or load)(code))
    return f(unpack(args or {}))
end

function Server:grep_log(pattern)
    io.stderr:flush()
    local f = self.log_path and io.open(self.log_path)
    if f == nil then return nil end
    local text = f:read('*a')
    f:close()
    return text:match(pattern)
end

return Server
