-- A `tap` module for running Tarantool's own tests (test/app-tap) on
-- luafiber: the API of Tarantool's src/lua/tap.lua (test, plan, ok, is,
-- is_deeply, like, ...), TAP on stdout, written here.
--
-- Differences that help the runner (run.sh):
-- - a subtest whose function raises is reported as a failed assertion
--   "<name>: died: <error>" and the test goes on (Tarantool's would stop);
-- - each assertion that is not a subtest's summary is also recorded, with
--   its full name (the test names from the root, then its message, joined
--   by '/'), in the file named by LUAFIBER_TAP_LOG, one per line:
--   "ok<TAB>name" or "not ok<TAB>name".

local ffi_ok, ffi = pcall(require, 'ffi')

local log_path = os.getenv('LUAFIBER_TAP_LOG')
local log_file = log_path and io.open(log_path, 'a')

local function record(test, passed, message)
    if log_file == nil then
        return
    end
    local names = {}
    local t = test
    while t ~= nil do
        table.insert(names, 1, tostring(t.name))
        t = t.parent
    end
    table.insert(names, tostring(message))
    local name = table.concat(names, '/'):gsub('[\t\n]', ' ')
    log_file:write(passed and 'ok' or 'not ok', '\t', name, '\n')
    log_file:flush()
end

local function indent(test)
    return string.rep(' ', 4 * test.level)
end

local function show(v)
    if type(v) == 'string' then
        return string.format('%q', v)
    end
    return tostring(v)
end

local function diag(test, fmt, ...)
    io.write(indent(test), '# ', string.format(fmt, ...), '\n')
end

-- An assertion; `summary` marks a subtest's own line (not recorded).
local function report(test, cond, message, extra, summary)
    test.total = test.total + 1
    message = message or ''
    if cond then
        io.write(indent(test), 'ok - ', tostring(message), '\n')
    else
        test.failed = test.failed + 1
        io.write(indent(test), 'not ok - ', tostring(message), '\n')
        if extra ~= nil then
            for k, v in pairs(extra) do
                io.write(indent(test), '  ', tostring(k), ': ', show(v), '\n')
            end
        end
    end
    if not summary then
        record(test, cond, message)
    end
    return cond and true or false
end

local function ok(test, cond, message, extra)
    return report(test, cond, message, extra, false)
end

local function fail(test, message, extra)
    return ok(test, false, message, extra)
end

local function skip(test, message, extra)
    return ok(test, true, tostring(message) .. ' # skip', extra)
end

local function is_bool_cdata(v)
    return ffi_ok and type(v) == 'cdata' and ffi.istype('bool', v)
end

local function cmpdeeply(got, expected, extra)
    if type(expected) == 'number' or type(got) == 'number' then
        extra.got, extra.expected = got, expected
        if got ~= got and expected ~= expected then
            return true
        end
        return got == expected
    end
    if is_bool_cdata(got) then got = got == 1 end
    if is_bool_cdata(expected) then expected = expected == 1 end
    if extra.strict and type(got) ~= type(expected) then
        extra.got, extra.expected = type(got), type(expected)
        return false
    end
    if type(got) ~= 'table' or type(expected) ~= 'table' then
        extra.got, extra.expected = got, expected
        return got == expected
    end
    local path = extra.path or '/'
    local visited = {}
    for k, v in pairs(got) do
        visited[k] = true
        extra.path = path .. '/' .. tostring(k)
        if not cmpdeeply(v, expected[k], extra) then
            return false
        end
    end
    for k, v in pairs(expected) do
        -- a NULL (box.NULL, msgpack.NULL) stands for an absent key
        if visited[k] ~= true and (extra.strict or v ~= nil) then
            extra.expected = 'key ' .. tostring(k)
            extra.got = 'nil'
            return false
        end
    end
    extra.path = path
    return true
end

local function is(test, got, expected, message, extra)
    extra = extra or {}
    extra.got, extra.expected = got, expected
    local same = (test.strict == false or type(got) == type(expected))
        and got == expected
    return ok(test, same, message, extra)
end

local function isnt(test, got, unexpected, message, extra)
    extra = extra or {}
    extra.got, extra.unexpected = got, unexpected
    local differ = (test.strict == true and type(got) ~= type(unexpected))
        or got ~= unexpected
    return ok(test, differ, message, extra)
end

local function is_deeply(test, got, expected, message, extra)
    extra = extra or {}
    extra.strict = test.strict
    return ok(test, cmpdeeply(got, expected, extra), message, extra)
end

local function like(test, got, pattern, message, extra)
    extra = extra or {}
    extra.got, extra.expected = got, pattern
    return ok(test, string.match(tostring(got), pattern) ~= nil, message, extra)
end

local function unlike(test, got, pattern, message, extra)
    extra = extra or {}
    extra.got, extra.expected = got, pattern
    return ok(test, string.match(tostring(got), pattern) == nil, message, extra)
end

local function is_type(name)
    return function(test, v, message, extra)
        return is(test, type(v), name, message, extra)
    end
end

local function isnil(test, v, message, extra)
    return is(test, not v and 'nil' or v, 'nil', message, extra)
end

local function isudata(test, v, utype, message, extra)
    extra = extra or {}
    if type(v) ~= 'userdata' then
        extra.got = type(v)
        return fail(test, message, extra)
    end
    return ok(test, getmetatable(v) == utype, message, extra)
end

local function iscdata(test, v, ctype, message, extra)
    extra = extra or {}
    if not ffi_ok or type(v) ~= 'cdata' then
        extra.got = type(v)
        return fail(test, message, extra)
    end
    return ok(test, ffi.istype(ctype, v), message, extra)
end

local test_mt

local function check(test)
    if test.checked then
        error('check called twice')
    end
    test.checked = true
    local planned_ok = test.planned == test.total
    if test.parent ~= nil then
        if not planned_ok then
            report(test.parent, false, 'bad plan', {
                planned = test.planned, run = test.total,
            }, true)
        elseif test.failed > 0 then
            report(test.parent, false, 'failed subtests', {
                failed = test.failed, planned = test.planned,
            }, true)
        else
            report(test.parent, true, test.name, nil, true)
        end
    elseif not planned_ok then
        diag(test, 'bad plan: planned %d run %d', test.planned, test.total)
    elseif test.failed > 0 then
        diag(test, 'failed subtest: %d', test.failed)
    end
    return planned_ok and test.failed == 0
end

local function new_test(parent, name, fun, ...)
    local level = parent ~= nil and parent.level + 1 or 0
    local t = setmetatable({
        parent = parent,
        name = name,
        level = level,
        total = 0,
        failed = 0,
        planned = 0,
        strict = parent ~= nil and parent.strict or false,
    }, test_mt)
    if fun == nil then
        return t
    end
    diag(t, '%s', tostring(name))
    local ran, err = pcall(fun, t, ...)
    if not ran then
        ok(t, false, 'died: ' .. tostring(err))
    end
    diag(t, '%s: end', tostring(name))
    return check(t)
end

local function plan(test, planned)
    test.planned = planned
    io.write(indent(test), string.format('1..%d\n', planned))
end

test_mt = {
    __index = {
        test = new_test,
        plan = plan,
        check = check,
        diag = diag,
        ok = ok,
        fail = fail,
        skip = skip,
        is = is,
        isnt = isnt,
        isnil = isnil,
        isnumber = is_type('number'),
        isstring = is_type('string'),
        istable = is_type('table'),
        isboolean = is_type('boolean'),
        isfunction = is_type('function'),
        isudata = isudata,
        iscdata = iscdata,
        is_deeply = is_deeply,
        like = like,
        unlike = unlike,
    },
}

return {
    test = function(...)
        io.write('TAP version 13\n')
        return new_test(nil, ...)
    end,
}
