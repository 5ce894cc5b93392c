//! Fiber stacks seen from Lua: luafiber's `fiber.new_ex` and
//! `fiber.create_ex` (a stack size and a name per fiber) and their errors;
//! runaway recursion through C callbacks is a catchable "C stack overflow"
//! on both engines, in stacks of every size; what no check sees (the
//! parser's recursion in a small stack) ends in the guard report naming the
//! fiber.

use std::process::Command;

use luafiber::LuaRuntime;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    let before = luafiber::fiber::stats().fibers;
    if let Err(e) = rt.run_chunk(&format!("local fiber = require('fiber')\n{code}"), "stacks") {
        panic!("{e}");
    }
    assert_eq!(luafiber::fiber::stats().fibers, before, "every fiber ended");
}

#[test]
fn new_ex_and_create_ex_take_a_stack_size_and_a_name() {
    run(r#"
        local f = fiber.new_ex({stack_size = 16384, name = 'small'}, function(a, b)
            fiber.yield()
            return a + b
        end, 1, 2)
        f:set_joinable(true)
        assert(f:name() == 'small', f:name())
        assert(f:info().memory.total == 16384, f:info().memory.total)
        assert(f:status() == 'suspended')
        local ok, sum = f:join()
        assert(ok and sum == 3, tostring(sum))
        -- Sizes round up to whole pages; create_ex runs the fiber at once.
        local ran = false
        local g = fiber.create_ex({stack_size = 20000}, function() ran = true; fiber.yield() end)
        assert(ran and g:name() == 'lua')
        assert(g:info().memory.total >= 20000 and g:info().memory.total % 4096 == 0)
        -- No options: as fiber.new, with the default stack.
        local h = fiber.new_ex({}, function() end)
        assert(h:info().memory.total == 512 * 1024)
        fiber.yield()
        -- fiber.new and fiber.create are untouched.
        assert(fiber.new ~= fiber.new_ex and fiber.create ~= fiber.create_ex)
    "#);
}

/// Small fibers that spawn many small fibers, each spawning from inside a
/// `pcall` and a sort comparator (a new chunk of the scheduler's slots is
/// made every 64 fibers: once on the spawner's stack, which overflowed a
/// 16 KiB one).
#[test]
fn small_fibers_spawn_many_small_fibers() {
    run(r#"
        local done, spawned, spawners = 0, 0, {}
        for i = 1, 4 do
            local f = fiber.new_ex({stack_size = 16384}, function()
                local t = {3, 1, 2}
                pcall(table.sort, t, function(a, b)
                    for _ = 1, 150 do
                        spawned = spawned + 1
                        fiber.new_ex({stack_size = 16384}, function()
                            fiber.yield()
                            done = done + 1
                        end)
                    end
                    fiber.yield()
                    return a < b
                end)
            end)
            f:set_joinable(true)
            spawners[i] = f
        end
        for _, f in ipairs(spawners) do assert(f:join()) end
        for _ = 1, 100 do
            if done == spawned then break end
            fiber.yield()
        end
        assert(done == spawned and spawned >= 4 * 150 * 2, done .. ' of ' .. spawned)
    "#);
}

/// On the smallest stack the codecs take tables (their stack margin is a
/// quarter of a small stack, not a fixed 64 KiB), and nesting deeper than
/// the stack holds is an error naming the level, not a fault.
#[test]
fn json_and_msgpack_work_on_small_stacks() {
    run(r#"
        local json, msgpack = require('json'), require('msgpack')
        local f = fiber.new_ex({stack_size = 16384}, function()
            assert(json.encode({a = {1, 2}}) == '{"a":[1,2]}')
            assert(msgpack.decode(msgpack.encode({a = {1, 2}})).a[2] == 2)
            assert(json.decode('{"a":[1,2]}').a[2] == 2)
            local deep, t = {}, nil
            t = deep
            for _ = 1, 200 do t.x = {}; t = t.x end
            local ok, err = pcall(json.encode, deep)
            assert(not ok and tostring(err):find('too deep for the fiber', 1, true), tostring(err))
            ok, err = pcall(msgpack.encode, deep)
            assert(not ok and tostring(err):find('too deep for the fiber', 1, true), tostring(err))
            ok, err = pcall(json.decode, string.rep('[', 200) .. string.rep(']', 200))
            assert(not ok and tostring(err):find('too many nested', 1, true), tostring(err))
            return true
        end)
        f:set_joinable(true)
        assert(f:join())
    "#);
}

#[test]
fn new_ex_errors_name_the_function_and_the_option() {
    run(r#"
        local function fails(fn, opts, f, want_type, want)
            local ok, e = pcall(fn, opts, f or function() end)
            assert(not ok, 'no error for ' .. want)
            assert(type(e) == 'table' and e.type == want_type, tostring(e))
            assert(tostring(e):find(want, 1, true), tostring(e))
        end
        local new, create = fiber.new_ex, fiber.create_ex
        fails(new, {stack_size = 1000}, nil, 'IllegalParams',
            'fiber.new_ex(opts, fn, ...): opts.stack_size is 1000, less than the smallest stack (16384 bytes)')
        fails(create, {stack_size = 16383}, nil, 'IllegalParams',
            'fiber.create_ex(opts, fn, ...): opts.stack_size is 16383')
        fails(new, {stack_size = -1}, nil, 'IllegalParams', 'opts.stack_size is -1')
        fails(new, {stack_size = '16384'}, nil, 'IllegalParams', 'opts.stack_size must be an integer')
        fails(new, {stack_size = 16384.5}, nil, 'IllegalParams', 'opts.stack_size must be an integer')
        fails(new, {name = 5}, nil, 'IllegalParams', 'opts.name must be a string')
        fails(new, {name = string.rep('x', 256)}, nil, 'IllegalParams', 'opts.name is longer than 255 bytes')
        fails(new, {stacksize = 16384}, nil, 'IllegalParams', "unknown option 'stacksize'")
        fails(new, {16384}, nil, 'IllegalParams', 'opts has a key that is not a string')
        fails(new, 16384, nil, 'IllegalParams', 'fiber.new_ex(opts, fn, ...): opts must be a table')
        fails(new, {}, 5, 'IllegalParams', 'fiber.new_ex(opts, fn, ...): fn must be a function')
        -- A size no machine can map is the stack's own error.
        fails(new, {stack_size = 2^60}, nil, 'OutOfMemory', 'cannot allocate a fiber stack')
        -- Nothing was created by the failed calls.
        fiber.yield()
    "#);
}

/// Recursion through C functions that call back into Lua, each in a fiber
/// of `stack_size` bytes: each must end in a caught error naming an
/// overflow (LuaJIT: "C stack overflow" from the check of `lua_call`; Lua
/// 5.4: its C call limit, or the same check's report of the Lua stack).
const RUNAWAY: &str = r#"
local fiber = require('fiber')
local cases = {
    gsub = function()
        local function nest() return (string.gsub('a', 'a', nest)) end
        return nest()
    end,
    tostring = function()
        local function tnest() return tostring(setmetatable({}, {__tostring = tnest})) end
        return tnest()
    end,
    sort = function()
        local function snest()
            local t = {2, 1}
            table.sort(t, function(a, b) snest(); return a < b end)
        end
        return snest()
    end,
    format = function()
        local mt = {}
        mt.__tostring = function() return string.format('%s', setmetatable({}, mt)) end
        return tostring(setmetatable({}, mt))
    end,
}
for _, size in ipairs({STACK_SIZES}) do
    for name, case in pairs(cases) do
        local f = fiber.new_ex({stack_size = size, name = name}, function()
            local ok, err = pcall(case)
            -- The fiber goes on after the error, and yields.
            fiber.yield()
            return ok, err
        end)
        f:set_joinable(true)
        local _, ok, err = f:join()
        assert(ok == false, name .. ' in ' .. size .. ' bytes: no error')
        assert(tostring(err):lower():find('overflow'), name .. ': ' .. tostring(err))
    end
end
"#;

#[test]
fn recursion_through_c_callbacks_is_a_catchable_overflow() {
    let sizes = if cfg!(feature = "luajit") {
        // LuaJIT's check keeps a quarter of a small stack: gsub's 8.8 KiB
        // frames need 64 KiB to be caught before the guard.
        "64 * 1024, 512 * 1024"
    } else {
        // Lua 5.4 counts C calls (200) and checks no machine stack: only a
        // stack that holds 200 levels of gsub raises before the guard.
        "2 * 1024 * 1024"
    };
    run(&RUNAWAY.replace("STACK_SIZES", sizes));
}

#[test]
fn what_no_check_sees_ends_in_the_guard_report_naming_the_fiber() {
    // The parser's recursion calls back into no Lua: in a 16 KiB stack a
    // 190-deep expression runs into the guard, on both engines.
    let out = Command::new(env!("CARGO_BIN_EXE_luafiber"))
        .arg("-e")
        .arg(
            r#"
            local fiber = require('fiber')
            local f = fiber.new_ex({stack_size = 16384, name = 'small'}, function()
                fiber.self():name('renamed-before-overflow')
                local src = 'return ' .. string.rep('(', 190) .. '1' .. string.rep(')', 190)
                assert(load(src))
            end)
            f:set_joinable(true)
            local ok = f:join()
            os.exit(ok and 0 or 3)
            "#,
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(134), "stderr: {err}");
    assert!(
        err.contains("(renamed-before-overflow): stack overflow (a fault in its stack guard)"),
        "stderr: {err}"
    );
}
