//! Fibers yield from anywhere Lua can call back: inside `pcall`/`xpcall`,
//! metamethods, `table.sort` comparators, `string.gsub` callbacks, Lua
//! coroutines, `require` loaders, `load` readers, and Rust functions
//! registered through `register_fn`.
//!
//! Each context runs in 200 fibers x 20 iterations under every way of
//! yielding (`fiber.yield()`, `fiber.sleep(0)`, `fiber.sleep(0.001)`, and a
//! registered Rust function sleeping 0 s or 1 ms). A ticker fiber that keeps
//! yielding proves that other fibers ran during every single yield, every
//! fiber checks its own results, and all 200 fibers must be suspended inside
//! the context at the same time.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use luafiber::LuaRuntime;

/// `stress(name, body, expect [, nfib [, niter]])`: for every yield kind,
/// runs `body(Y, f, it)` in `nfib` fibers x `niter` iterations and raises
/// unless each result equals `expect(f, it)`. `Y()` yields and raises when no
/// other fiber ran meanwhile.
const HARNESS: &str = r#"
local fiber = require('fiber')
KINDS = {
    {'fiber.yield()', function() fiber.yield() end},
    {'fiber.sleep(0)', function() fiber.sleep(0) end},
    {'fiber.sleep(0.001)', function() fiber.sleep(0.001) end},
    {'rust_sleep(0)', function() rust_sleep(0) end},
    {'rust_sleep(0.001)', function() rust_sleep(0.001) end},
}
function stress(name, body, expect, nfib, niter)
    nfib = nfib or 200
    niter = niter or 20
    for _, kind in ipairs(KINDS) do
        local kname, yield = kind[1], kind[2]
        local ticks, inside, max_inside, yields = 0, 0, 0, 0
        local stop = false
        local function Y()
            local t0 = ticks
            inside = inside + 1
            if inside > max_inside then max_inside = inside end
            yield()
            inside = inside - 1
            if ticks == t0 then
                error(('%s / %s: no other fiber ran during the yield'):format(name, kname), 0)
            end
            yields = yields + 1
        end
        fiber.new(function()
            while not stop do
                ticks = ticks + 1
                fiber.yield()
            end
        end)
        local workers = {}
        for f = 1, nfib do
            workers[f] = fiber.new(function()
                for it = 1, niter do
                    local got = body(Y, f, it)
                    local want = expect(f, it)
                    if got ~= want then
                        error(('%s / %s: fiber %d iteration %d: got %s, want %s'):format(
                            name, kname, f, it, tostring(got), tostring(want)), 0)
                    end
                end
                return f
            end)
            workers[f]:set_joinable(true)
        end
        local first_err
        for f = 1, nfib do
            local ok, res = workers[f]:join()
            if not ok then
                first_err = first_err or res
            elseif res ~= f then
                first_err = first_err or ('%s / %s: fiber %d returned %s'):format(name, kname, f, tostring(res))
            end
        end
        stop = true
        if first_err then error(first_err, 0) end
        assert(yields >= nfib * niter,
            ('%s / %s: only %d yields'):format(name, kname, yields))
        assert(max_inside == nfib,
            ('%s / %s: at most %d of %d fibers were suspended at once'):format(name, kname, max_inside, nfib))
        STRESSED = (STRESSED or 0) + 1
    end
end
"#;

/// A runtime with `rust_sleep(seconds, ...)`: sleeps the calling fiber with
/// `luafiber::fiber::sleep`, then returns the other arguments.
fn runtime() -> LuaRuntime {
    let rt = LuaRuntime::new().unwrap();
    rt.register_fn("rust_sleep", |args| {
        let secs = args
            .first()
            .and_then(|v| v.as_f64())
            .ok_or("expected seconds")?;
        luafiber::fiber::sleep(Duration::from_secs_f64(secs))?;
        Ok(args[1..].to_vec())
    })
    .unwrap();
    rt
}

/// Runs `stress` code and checks every yield kind was exercised.
fn stress(code: &str) {
    let rt = runtime();
    let before = luafiber::fiber::stats().fibers;
    if let Err(e) = rt.run_chunk(&format!("{HARNESS}\n{code}"), "yield_contexts") {
        panic!("{e}");
    }
    let kinds: i64 = rt.lua().load("return #KINDS").eval().unwrap();
    let stressed: i64 = rt.lua().globals().get("STRESSED").unwrap();
    assert_eq!(stressed, kinds);
    assert_eq!(luafiber::fiber::stats().fibers, before, "every fiber ended");
}

#[test]
fn yield_inside_pcall() {
    stress(
        r#"
        stress('pcall', function(Y, f, it)
            local ok, v = pcall(function(a, b) Y(); local r = a * 1000 + b; Y(); return r end, f, it)
            assert(ok, v)
            local ok2, e = pcall(function() Y(); error({f = f, it = it}) end)
            assert(not ok2 and type(e) == 'table' and e.f == f and e.it == it, 'error table after yield')
            local ok3, ok4, e2 = pcall(pcall, function() Y(); error('inner', 0) end)
            assert(ok3 == true and ok4 == false and e2 == 'inner', 'nested pcall')
            assert(select('#', pcall(function() Y(); return 1, nil, 3, nil end)) == 5, 'results kept')
            return v
        end, function(f, it) return f * 1000 + it end)
        "#,
    );
}

#[test]
fn yield_inside_xpcall_and_its_message_handler() {
    stress(
        r#"
        stress('xpcall', function(Y, f, it)
            local ok, v = xpcall(function() Y(); error('boom' .. f, 0) end,
                                 function(m) Y(); return m .. '/' .. it end)
            assert(not ok)
            local ok2, v2 = xpcall(function() Y(); return 'fine' end, debug.traceback)
            assert(ok2 and v2 == 'fine', 'xpcall success')
            local ok3, tb = xpcall(function() Y(); error('deep', 0) end, debug.traceback)
            assert(not ok3 and tb:find('deep', 1, true) and tb:find('stack traceback', 1, true), tb)
            return v
        end, function(f, it) return 'boom' .. f .. '/' .. it end)
        "#,
    );
}

#[test]
fn yield_inside_index_and_newindex_metamethods() {
    stress(
        r#"
        stress('__index', function(Y, f, it)
            local store = {}
            local t = setmetatable({}, {
                __index = function(_, k) Y(); return k * 2 end,
                __newindex = function(_, k, v) Y(); rawset(store, k, v + 1) end,
            })
            local child = setmetatable({}, {__index = t})
            t[f] = it
            return child[it] + t[f * 1000] + store[f]
        end, function(f, it) return it * 2 + f * 2000 + it + 1 end)
        "#,
    );
}

#[test]
fn yield_inside_arithmetic_and_concat_metamethods() {
    stress(
        r#"
        stress('arith', function(Y, f, it)
            local mt = {}
            local function N(v) return setmetatable({v = v}, mt) end
            local function raw(x) return type(x) == 'table' and x.v or x end
            mt.__add = function(a, b) Y(); return N(raw(a) + raw(b)) end
            mt.__sub = function(a, b) Y(); return N(raw(a) - raw(b)) end
            mt.__mul = function(a, b) Y(); return N(raw(a) * raw(b)) end
            mt.__unm = function(a) Y(); return N(-a.v) end
            mt.__concat = function(a, b) Y(); return raw(a) .. ':' .. raw(b) end
            local r = -((N(f) + N(it)) * 3 - N(1))
            return r.v .. '|' .. (N(f) .. 'x')
        end, function(f, it) return (-((f + it) * 3 - 1)) .. '|' .. f .. ':x' end)
        "#,
    );
}

#[test]
fn yield_inside_comparison_metamethods() {
    stress(
        r#"
        stress('compare', function(Y, f, it)
            local mt = {}
            local function N(v) return setmetatable({v = v}, mt) end
            mt.__lt = function(a, b) Y(); return a.v < b.v end
            mt.__le = function(a, b) Y(); return a.v <= b.v end
            mt.__eq = function(a, b) Y(); return a.v == b.v end
            local a, b = N(f), N(it)
            return tostring(a < b) .. tostring(a <= b) .. tostring(a == N(f))
                .. tostring(a ~= b) .. tostring(b > a) .. tostring(b >= a)
        end, function(f, it)
            return tostring(f < it) .. tostring(f <= it) .. 'true'
                .. tostring(f ~= it) .. tostring(it > f) .. tostring(it >= f)
        end)
        "#,
    );
}

#[test]
fn yield_inside_call_and_tostring_metamethods() {
    stress(
        r#"
        stress('__call', function(Y, f, it)
            local mt = {}
            mt.__call = function(self, x, y) Y(); return self.v + x, y end
            mt.__tostring = function(self) Y(); return 'N' .. self.v end
            local o = setmetatable({v = f}, mt)
            local a, b = o(it, 'y')
            local _, s = pcall(tostring, o)
            return a .. b .. tostring(o) .. s .. string.format('[%s]', o)
        end, function(f, it) return (f + it) .. 'yN' .. f .. 'N' .. f .. '[N' .. f .. ']' end)
        "#,
    );
}

#[test]
fn yield_inside_table_sort_comparator() {
    stress(
        r#"
        stress('table.sort', function(Y, f, it)
            local arr = {}
            for k = 1, 12 do arr[k] = (k * 5 + f + it) % 12 end
            table.sort(arr, function(a, b) Y(); return a < b end)
            local mt = {__lt = function(a, b) Y(); return a.v > b.v end}
            local objs = {}
            for k = 1, 6 do objs[k] = setmetatable({v = (k + f) % 6}, mt) end
            table.sort(objs)
            local vs = {}
            for k = 1, 6 do vs[k] = objs[k].v end
            return table.concat(arr, ',') .. ';' .. table.concat(vs, ',')
        end, function() return '0,1,2,3,4,5,6,7,8,9,10,11;5,4,3,2,1,0' end)
        "#,
    );
}

#[test]
fn yield_inside_string_gsub_callback() {
    stress(
        r#"
        stress('string.gsub', function(Y, f, it)
            local s, n = ('a1b22c333'):gsub('%d+', function(d) Y(); return '<' .. (tonumber(d) * f) .. '>' end)
            local s2 = ('xy'):gsub('%a', setmetatable({}, {
                __index = function(_, k) Y(); return k:upper() .. it end,
            }))
            return s .. n .. s2
        end, function(f, it)
            return 'a<' .. f .. '>b<' .. 22 * f .. '>c<' .. 333 * f .. '>3X' .. it .. 'Y' .. it
        end)
        "#,
    );
}

#[test]
fn yield_inside_coroutine_wrap_iterator() {
    stress(
        r#"
        stress('coroutine', function(Y, f, it)
            local sum = 0
            for v in coroutine.wrap(function()
                for k = 1, 3 do
                    Y()
                    coroutine.yield(k * f)
                    Y()
                end
            end) do
                Y()
                sum = sum + v
            end
            local co = coroutine.create(function(a)
                local ok, b = pcall(function() Y(); return coroutine.yield(a + 1) end)
                assert(ok, b)
                Y()
                return b * 2
            end)
            local ok1, x = coroutine.resume(co, it)
            local ok2, y = coroutine.resume(co, x)
            assert(ok1 and ok2, tostring(x) .. ' ' .. tostring(y))
            assert(coroutine.status(co) == 'dead')
            return sum + y * 1000
        end, function(f, it) return 6 * f + (it + 1) * 2000 end)
        "#,
    );
}

#[test]
fn yield_inside_require_loader_and_load_reader() {
    stress(
        r#"
        stress('require/load', function(Y, f, it)
            local name = 'yield_mod_' .. f .. '_' .. it
            package.preload[name] = function(modname) Y(); return {name = modname, v = f * it} end
            local m = require(name)
            Y()
            assert(require(name) == m, 'require caches the module')
            package.preload[name] = nil
            package.loaded[name] = nil
            local parts = {'return ', tostring(f), ' + ', tostring(it)}
            local i = 0
            local chunk = assert(load(function() Y(); i = i + 1; return parts[i] end))
            return m.name .. '=' .. m.v .. ',' .. chunk()
        end, function(f, it) return 'yield_mod_' .. f .. '_' .. it .. '=' .. f * it .. ',' .. (f + it) end)
        "#,
    );
}

#[test]
fn yield_inside_nested_contexts() {
    // sort comparator -> pcall -> __index -> gsub callback -> coroutine -> yield
    stress(
        r#"
        stress('nested', function(Y, f, it)
            local weight = setmetatable({}, {__index = function(_, k)
                local s = tostring(k):gsub('%d', function(d)
                    local gen = coroutine.wrap(function() Y(); coroutine.yield(d) end)
                    return gen()
                end)
                return tonumber(s)
            end})
            local arr = {f + 3, it, f, 7}
            table.sort(arr, function(a, b)
                local ok, wa = pcall(function() return weight[a] end)
                local ok2, wb = pcall(function() return weight[b] end)
                assert(ok and ok2, wa)
                return wa < wb
            end)
            return table.concat(arr, ',')
        end, function(f, it)
            local arr = {f + 3, it, f, 7}
            table.sort(arr)
            return table.concat(arr, ',')
        end, 100, 10)
        "#,
    );
}

#[test]
fn rust_function_blocks_only_its_fiber() {
    let rt = LuaRuntime::new().unwrap();
    let in_flight = Rc::new(Cell::new(0usize));
    let max_in_flight = Rc::new(Cell::new(0usize));
    let calls = Rc::new(Cell::new(0usize));
    {
        let (in_flight, max_in_flight, calls) =
            (in_flight.clone(), max_in_flight.clone(), calls.clone());
        rt.register_fn("rust_wait", move |args| {
            let me = luafiber::fiber::current().ok_or("not in a fiber")?;
            let secs = args
                .first()
                .and_then(|v| v.as_f64())
                .ok_or("expected seconds")?;
            calls.set(calls.get() + 1);
            in_flight.set(in_flight.get() + 1);
            max_in_flight.set(max_in_flight.get().max(in_flight.get()));
            let slept = luafiber::fiber::sleep(Duration::from_secs_f64(secs));
            in_flight.set(in_flight.get() - 1);
            slept?;
            assert_eq!(
                luafiber::fiber::current(),
                Some(me),
                "resumed as the same fiber"
            );
            let mut out = vec![(me.0 as i64).into()];
            out.extend_from_slice(&args[1..]);
            Ok(out)
        })
        .unwrap();
    }
    rt.run_chunk(
        r#"
        local fiber = require('fiber')
        local ticks, stop = 0, false
        fiber.new(function() while not stop and ticks < 1e7 do ticks = ticks + 1; fiber.yield() end end)
        local workers = {}
        for f = 1, 200 do
            workers[f] = fiber.new(function()
                for it = 1, 20 do
                    local t0 = ticks
                    local id, a, b, s, t = rust_wait(it % 2 == 0 and 0.001 or 0, f, it, 'str' .. f, {f, k = it})
                    assert(ticks > t0, 'other fibers ran while Rust slept')
                    assert(id == fiber.self():id(), 'Rust saw the calling fiber')
                    assert(a == f and b == it and s == 'str' .. f, 'arguments came back')
                    assert(type(t) == 'table' and t[1] == f and t.k == it, 'table came back')
                end
                return true
            end)
            workers[f]:set_joinable(true)
        end
        for f = 1, 200 do
            local ok, err = workers[f]:join()
            assert(ok, err)
        end
        stop = true
        local ok, err = pcall(rust_wait, 'soon')
        assert(not ok and err.type == 'IllegalParams', tostring(err))
        assert(tostring(err) == 'rust_wait: expected seconds', tostring(err))
        "#,
        "rust_fn",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(calls.get(), 200 * 20);
    assert_eq!(in_flight.get(), 0);
    assert_eq!(
        max_in_flight.get(),
        200,
        "all fibers were inside the Rust function at once"
    );
}

#[cfg(feature = "lua54")]
#[test]
fn yield_inside_lua54_metamethods_and_close() {
    stress(
        r#"
        stress('lua54', function(Y, f, it)
            local closed = {}
            do
                local x <close> = setmetatable({}, {__close = function() Y(); closed[#closed + 1] = 'ok' end})
                Y()
            end
            local ok, e = pcall(function()
                local y <close> = setmetatable({}, {__close = function(_, err) Y(); closed[#closed + 1] = err end})
                Y()
                error('boom', 0)
            end)
            assert(not ok and e == 'boom' and closed[1] == 'ok' and closed[2] == 'boom', tostring(e))
            local t = setmetatable({}, {
                __len = function() Y(); return f end,
                __idiv = function() Y(); return it end,
                __band = function() Y(); return f + it end,
                __pairs = function(self)
                    Y()
                    return function(_, k) Y(); if not k then return 'k', f end end, self, nil
                end,
            })
            local pairs_seen
            for k, v in pairs(t) do pairs_seen = k .. v end
            local proxy = setmetatable({}, {
                __index = function(_, k) Y(); return k * 10 end,
                __newindex = function(self, k, v) Y(); rawset(self, k, v) end,
            })
            table.insert(proxy, 1, 'first')
            local co = coroutine.create(function()
                local z <close> = setmetatable({}, {__close = function() Y(); closed[#closed + 1] = 'co' end})
                coroutine.yield()
            end)
            coroutine.resume(co)
            assert(coroutine.close(co) and closed[3] == 'co', 'coroutine.close ran __close')
            return #t .. ',' .. (t // 2) .. ',' .. (t & 1) .. ',' .. pairs_seen .. ',' .. rawget(proxy, 1)
        end, function(f, it) return f .. ',' .. it .. ',' .. (f + it) .. ',k' .. f .. ',first' end)
        "#,
    );
}

#[cfg(not(feature = "lua54"))]
#[test]
fn yield_inside_luajit_ffi_callback() {
    // A C function (qsort) calls back into Lua, which yields. The calling
    // function is kept out of the JIT: LuaJIT aborts the process when a
    // callback comes from a compiled FFI call, yield or not.
    stress(
        r#"
        local ffi = require('ffi')
        ffi.cdef[[void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));]]
        local body = function(Y, f, it)
            local arr = ffi.new('int[6]', {5, f % 7, 3, it % 11, 9, 1})
            local cb = ffi.cast('int (*)(const void *, const void *)', function(a, b)
                local x, y = ffi.cast('const int *', a)[0], ffi.cast('const int *', b)[0]
                Y()
                return x < y and -1 or (x > y and 1 or 0)
            end)
            ffi.C.qsort(arr, 6, 4, cb)
            cb:free()
            local out = {}
            for k = 0, 5 do out[#out + 1] = arr[k] end
            return table.concat(out, ',')
        end
        jit.off(body)
        stress('ffi callback', body, function(f, it)
            local arr = {5, f % 7, 3, it % 11, 9, 1}
            table.sort(arr)
            return table.concat(arr, ',')
        end, 50, 5)
        "#,
    );
}
