-- What vshard's router needs from the interpreter, checked one piece at a
-- time, then `require('vshard.router')` itself (VSHARD_PATH). Prints one
-- `missing: WHAT` line per piece that fails (`note: WHAT` for a piece vshard
-- can do without, taking another path) and ends with `ok` when nothing
-- required is missing and the router module loads. tests/vshard_cluster.rs runs it on luafiber to decide
-- whether the luafiber router test can run (and says why not).
local missing = 0
local function check(what, fn, optional)
    local ok, res = pcall(fn)
    if not ok or not res then
        missing = missing + (optional and 0 or 1)
        print(('%s: %s%s'):format(optional and 'note' or 'missing', what,
              ok and '' or ' (' .. tostring(res):gsub('\n.*', '')
                                  :gsub('^[^:]*:%d+: ', '') .. ')'))
    end
end
local function has(mod, ...)
    local m = require(mod)
    for _, f in ipairs({...}) do
        if m[f] == nil then
            error(mod .. '.' .. f .. ' is nil')
        end
    end
    return true
end

check('_TARANTOOL', function()
    return type(_TARANTOOL) == 'string' and _TARANTOOL:match('^%d+%.%d+%.%d+')
end)
check("require('tarantool').package", function()
    return type(require('tarantool').package) == 'string'
end)
check('net.box', function() return has('net.box', 'connect') end)
check('uri', function() return has('uri', 'parse', 'format') end)
check('uri.parse_many (optional: multilisten)', function()
    return has('uri', 'parse_many')
end, true)
check('digest.crc32', function()
    local digest = require('digest')
    local c = digest.crc32.new()
    c:update('a')
    return digest.crc32('a') == c:result()
end)
check('msgpackffi.encode', function() return has('msgpackffi', 'encode') end)
check('msgpack.object (optional: return_raw)', function()
    return has('msgpack', 'object', 'is_object')
end, true)
check('uuid.NULL:str()', function()
    return require('uuid').NULL:str() == '00000000-0000-0000-0000-000000000000'
end)
check('table.new, table.copy, table.deepcopy', function()
    return require('table.new') and table.copy and table.deepcopy
end)
check('string.startswith', function() return ('vshard.x'):startswith('vshard.') end)
check('box.NULL', function() return rawequal(box.NULL, nil) == false end)
check('box.error.new and its codes', function()
    for _, c in ipairs({'TIMEOUT', 'PROC_LUA', 'NO_CONNECTION', 'NO_SUCH_PROC',
                        'ACCESS_DENIED'}) do
        if type(box.error[c]) ~= 'number' then
            error('box.error.' .. c .. ' is not a number')
        end
    end
    local e = box.error.new(box.error.TIMEOUT)
    return e:unpack().code == box.error.TIMEOUT
end)
-- vshard.error.make takes a `struct error` cdata through :unpack() and a
-- table as it is: either form gives it type, code and message.
check("box.error objects vshard reads (struct error cdata or a table)",
      function()
    local ok, e = pcall(box.error, box.error.new(box.error.TIMEOUT))
    if ok then
        error('box.error(e) did not raise')
    end
    if type(e) == 'cdata' then
        return require('ffi').istype('struct error', e)
    end
    return type(e) == 'table' and e.code == box.error.TIMEOUT and
           type(e.type) == 'string' and type(e.message) == 'string'
end)
-- vshard asks ffi.istype('struct error', e) of any cdata, box.NULL too.
check("ffi.istype('struct error', cdata) answers (struct error declared)",
      function()
    local ffi = require('ffi')
    return ffi.istype('struct error', ffi.new('int[1]')) == false
end)
check('box.info.schema_version or box.internal.schema_version', function()
    local ok, v = pcall(function() return box.info.schema_version end)
    return ok and v ~= nil or box.internal.schema_version ~= nil
end)
check('fiber.self().csw (optional)', function()
    return require('fiber').self().csw ~= nil
end, true)

local vshard_path = os.getenv('VSHARD_PATH')
if vshard_path then
    package.path = vshard_path .. '/?.lua;' .. vshard_path .. '/?/init.lua;' ..
                   package.path
    check("require('vshard.router')", function()
        return require('vshard.router')
    end)
end
if missing == 0 then
    print('ok')
end
os.exit(missing == 0 and 0 or 1)
