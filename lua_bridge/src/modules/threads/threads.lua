-- The `experimental.threads` module: Tarantool master's
-- (src/box/lua/app_threads.lua), over the bridge's C functions in `C`
-- (modules/threads/mod.rs): `C.cfg` starts the groups, `C.size` gives a
-- group's size, `C.dispatch` sends a call or an eval to a group's cords and
-- waits for their answers, `C.place` is this thread's group and id,
-- `C.groups` the configured groups, `C.new_error` makes an error object,
-- `C.arg_count` counts the values of an arguments table as msgpack does.
-- Returns the module and the function a cord runs for `threads.call`.
local C = ...
local unpack = unpack or table.unpack
local loadstring = loadstring or load
local debug_getinfo = debug.getinfo

local function pack(...)
    return {n = select('#', ...), ...}
end

local threads = {}

-- Map: name -> function exported with threads.export().
local exported_functions = {}

-- Tarantool's error codes (src/box/errcode.h) of the errors raised here.
local ERRORS = {
    ILLEGAL_PARAMS = {1, 'IllegalParams'},
    PROC_LUA = {32, 'ClientError'},
    NO_CONNECTION = {77, 'ClientError'},
    NO_SUCH_FUNCTION = {51, 'ClientError'},
    FUNCTION_EXISTS = {52, 'ClientError'},
    NO_SUCH_THREAD = {299, 'ClientError'},
    NO_SUCH_THREAD_GROUP = {302, 'ClientError'},
}

-- Raises an error object with `fields` (`name` one of ERRORS), located at
-- the function `level` levels up from the caller (as box.error's level).
local function raise(fields, level)
    local e = ERRORS[fields.name]
    if e ~= nil then
        fields.code = e[1]
        fields.type = e[2]
    end
    local info = level and debug_getinfo(level + 1, 'Sl')
    if info ~= nil and info.currentline > 0 then
        fields.file = info.short_src
        fields.line = info.currentline
    end
    error(C.new_error(fields), 0)
end

-- Same as type(), but 'number' for a 64-bit integer cdata (Tarantool's
-- utils.param_type).
local function param_type(param)
    local t = type(param)
    if t == 'cdata' and tonumber(param) ~= nil then
        t = 'number'
    end
    return t
end

-- Tarantool's utils.check_param.
local function check_param(param, name, should_be_type, level)
    if param_type(param) ~= should_be_type then
        raise({name = 'ILLEGAL_PARAMS',
               message = name .. ' should be a ' .. should_be_type},
              level and level + 1)
    end
end

-- call/eval options: Tarantool's `target`, and `timeout` (seconds; a
-- luafiber addition).
local CALL_EVAL_OPTS = {
    target = 'string, number',
    timeout = 'number',
}

-- Tarantool's utils.check_param_table for CALL_EVAL_OPTS.
local function check_param_table(opts, template, level)
    if opts == nil then
        return
    end
    if type(opts) ~= 'table' then
        raise({name = 'ILLEGAL_PARAMS', message = 'options should be a table'},
              level + 1)
    end
    for k, v in pairs(opts) do
        local types = template[k]
        if types == nil then
            raise({name = 'ILLEGAL_PARAMS',
                   message = "unexpected option '" .. tostring(k) .. "'"},
                  level + 1)
        end
        local good = ',' .. string.gsub(types, ' ', '') .. ','
        if string.find(good, ',' .. param_type(v) .. ',', 1, true) == nil then
            local what = string.find(types, ',', 1, true) and
                         "' should be one of types: " or "' should be of type "
            raise({name = 'ILLEGAL_PARAMS',
                   message = "options parameter '" .. k .. what .. types},
                  level + 1)
        end
    end
end

local function check_call_eval_opts(opts)
    check_param_table(opts, CALL_EVAL_OPTS, 3)
    if type(opts.target) == 'string' and
            opts.target ~= 'all' and opts.target ~= 'any' then
        raise({name = 'ILLEGAL_PARAMS',
               message = "unexpected value for option parameter 'target': " ..
                         "got '" .. opts.target .. "', " ..
                         "expected 'any', 'all', or a number"}, 3)
    end
end

-- The size of group `group_name`, or an error (level: as box.error's).
local function group_size(group_name, level)
    local size = C.size(group_name)
    if size == nil then
        raise({name = 'NO_SUCH_THREAD_GROUP',
               message = 'Thread group does not exist',
               thread_group = group_name}, level + 1)
    end
    return size
end

-- `opts.target` as C.dispatch takes it: 0 all, -1 any, else the thread id.
local function target_of(opts, size, level)
    local target = opts.target
    if target == nil or target == 'all' then
        return 0
    elseif target == 'any' then
        return -1
    end
    target = tonumber(target)
    if target < 1 or target > size or target % 1 ~= 0 then
        raise({name = 'NO_SUCH_THREAD', message = 'Thread does not exist',
               thread_id = opts.target}, level + 1)
    end
    return target
end

-- Raises the error a call failed with: an error object crosses with its
-- fields; anything else becomes a LuajitError with its message.
local function reraise(message, value, kind, level)
    if type(value) == 'table' and value.type ~= nil then
        local fields = {}
        for k, v in pairs(value) do
            fields[k] = v
        end
        error(C.new_error(fields), 0)
    end
    if kind == 'refused' then
        raise({name = 'ILLEGAL_PARAMS', message = message}, level + 1)
    end
    if kind == 'dropped' then
        raise({name = 'NO_CONNECTION', message = message}, level + 1)
    end
    raise({type = 'LuajitError', message = message}, level + 1)
end

-- Calls `fn(...)` in this fiber, as master's stub for the `tx` group does:
-- `{{results...}}`, or the error (a string as a PROC_LUA ClientError).
local function call_here(fn, ...)
    local res = pack(pcall(fn, ...))
    if res[1] then
        return {{unpack(res, 2, res.n)}}
    end
    local err = res[2]
    if type(err) == 'table' and err.type ~= nil then
        error(err, 0)
    end
    raise({name = 'PROC_LUA', message = tostring(err)}, 3)
end

-- What a cord runs for threads.call (box.internal.threads.call).
local function internal_call(func_name, ...)
    local func = exported_functions[func_name]
    if func == nil then
        raise({name = 'NO_SUCH_FUNCTION',
               message = "Function '" .. tostring(func_name) ..
                         "' does not exist",
               func = func_name})
    end
    return func(...)
end

-- Sends a call or an eval to `group_name` and returns the answers.
local function dispatch(fname, kind, group_name, what, args, opts)
    local size = group_size(group_name, 3)
    -- As many values as msgpack.encode(args) holds: `{1, nil, 3}` is 3.
    local nargs = C.arg_count(args, fname)
    local target = target_of(opts, size, 3)
    if group_name == 'tx' then
        if C.place() ~= 'tx' then
            raise({name = 'ILLEGAL_PARAMS',
                   message = fname .. ': the tx group cannot be called ' ..
                             'from a thread of another group'}, 3)
        end
        local res
        if kind == 'eval' then
            local proc, errmsg = loadstring(what)
            if proc == nil then
                raise({name = 'PROC_LUA', message = errmsg}, 3)
            end
            res = call_here(proc, unpack(args, 1, nargs))
        else
            res = call_here(internal_call, what, unpack(args, 1, nargs))
        end
        return res
    end
    local ok, res, value, failed = C.dispatch(fname, kind, group_name, what,
                                              target, opts.timeout,
                                              unpack(args, 1, nargs))
    if ok then
        return res
    end
    reraise(res, value, failed, 3)
end

--
-- Exports a function so that it can be executed with threads.call().
--
function threads.export(func_name, func)
    check_param(func_name, 'function name', 'string', 2)
    check_param(func, 'function object', 'function', 2)
    if exported_functions[func_name] ~= nil then
        raise({name = 'FUNCTION_EXISTS',
               message = "Function '" .. func_name .. "' already exists",
               func = func_name}, 2)
    end
    exported_functions[func_name] = func
end

--
-- Calls a function exported with threads.export() on a thread group: an
-- array of results, one per target thread (each an array of the values
-- returned); if the function fails on any thread, the last error is
-- raised again.
--
function threads.call(group_name, func_name, args, opts)
    args = args or {}
    opts = opts or {}
    check_param(group_name, 'group name', 'string', 2)
    check_param(func_name, 'function name', 'string', 2)
    check_param(args, 'function arguments', 'table', 2)
    check_call_eval_opts(opts)
    local res = dispatch('threads.call', 'call', group_name, func_name, args,
                         opts)
    return res
end

--
-- Executes a Lua expression on a thread group; answers as threads.call.
--
function threads.eval(group_name, expr, args, opts)
    args = args or {}
    opts = opts or {}
    check_param(group_name, 'group name', 'string', 2)
    check_param(expr, 'expression', 'string', 2)
    check_param(args, 'expression arguments', 'table', 2)
    check_call_eval_opts(opts)
    local res = dispatch('threads.eval', 'eval', group_name, expr, args, opts)
    return res
end

--
-- Returns information about configured thread groups.
--
function threads.info()
    local group_name, thread_id = C.place()
    local info = {
        thread_id = thread_id,
        group_name = group_name,
        groups = {
            {name = 'tx', size = 1},
        },
    }
    for _, group in ipairs(C.groups()) do
        table.insert(info.groups, group)
    end
    return info
end

--
-- Starts the thread groups (what Tarantool's config `threads.groups` and
-- box.cfg.app_threads do): threads.cfg({groups = {{name = 'workers',
-- size = 2}}}). Once per process, from the main thread.
--
function threads.cfg(cfg)
    if type(cfg) ~= 'table' then
        raise({name = 'ILLEGAL_PARAMS',
               message = 'threads.cfg: the config should be a table'}, 2)
    end
    local groups = cfg.groups or {}
    if type(groups) ~= 'table' then
        raise({name = 'ILLEGAL_PARAMS',
               message = 'threads.cfg: groups should be a table'}, 2)
    end
    local names, specs, total = {}, {}, 0
    for i, group in ipairs(groups) do
        local where = 'threads.cfg: groups[' .. i .. ']'
        if type(group) ~= 'table' or type(group.name) ~= 'string' or
                type(group.size) ~= 'number' or group.size % 1 ~= 0 then
            raise({name = 'ILLEGAL_PARAMS',
                   message = where .. ' should be {name = string, ' ..
                             'size = integer}'}, 2)
        end
        if group.name == 'tx' then
            raise({name = 'ILLEGAL_PARAMS',
                   message = 'Thread group name "tx" is reserved'}, 2)
        end
        if names[group.name] then
            raise({name = 'ILLEGAL_PARAMS',
                   message = ('Duplicate thread group name: %q'):format(
                       group.name)}, 2)
        end
        if group.size <= 0 then
            raise({name = 'ILLEGAL_PARAMS',
                   message = ('Thread group %q has invalid size: ' ..
                              'must be > 0'):format(group.name)}, 2)
        end
        names[group.name] = true
        total = total + group.size
        table.insert(specs, {group.name, group.size})
    end
    if total > 1000 then
        raise({name = 'ILLEGAL_PARAMS',
               message = 'threads.cfg: at most 1000 threads in all'}, 2)
    end
    local err = C.cfg(specs)
    if err ~= nil then
        raise({name = 'ILLEGAL_PARAMS', message = 'threads.cfg: ' .. err}, 2)
    end
end

return threads, internal_call
