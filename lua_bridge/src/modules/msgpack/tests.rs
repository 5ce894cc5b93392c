//! The `buffer` and `msgpack` modules from Lua: the conformance cases C09 and
//! C10, bytes compared with Tarantool 2.6.0's, bad input, and the zero
//! allocation steady state.

use std::ffi::c_int;

#[cfg(all(feature = "luajit", not(luafiber_no_fast_paths)))]
use mlua::ffi;

use crate::LuaRuntime;

/// A runtime whose `package.loaded` has `buffer` and `msgpack` (opened here
/// when the runtime does not install them itself). A debug build's frames
/// are about 8 times a release build's, so there its fibers get 4 MiB
/// stacks: the cases nest tables 129 levels deep, and the encoder stops
/// where the stack ends.
fn runtime() -> LuaRuntime {
    runtime_with_stacks(if cfg!(debug_assertions) {
        4 << 20
    } else {
        512 << 10
    })
}

/// [`runtime`] with fiber stacks of `bytes`.
fn runtime_with_stacks(bytes: usize) -> LuaRuntime {
    let rt = LuaRuntime::builder()
        .stack_size(bytes)
        .build()
        .expect("a runtime");
    // `hex(s)`: the bytes of `s` as hex digits, for the cases to compare.
    rt.lua()
        .load("function hex(s) return (s:gsub('.', function(c) return ('%02x'):format(c:byte()) end)) end")
        .exec()
        .unwrap();
    rt
}

/// Runs a Lua chunk as the main fiber; panics with its error.
fn run(rt: &LuaRuntime, code: &str) {
    if let Err(e) = rt.run_chunk(code, "test") {
        panic!("{e}");
    }
}

/// Runs a conformance case file and returns its stdout lines. `os.exit`
/// ends the chunk (and cancels the case's fibers, its watchdog included)
/// instead of the process.
fn run_case(file: &str) -> Vec<String> {
    let path = format!(
        "{}/../tests/conformance/cases/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let code = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let rt = runtime();
    let prelude = r#"
        local fiber = require('fiber')
        local created, create = {}, fiber.create
        fiber.create = function(...)
            local f = create(...)
            created[#created + 1] = f
            return f
        end
        OUTPUT = {}
        print = function(...)
            local parts = {}
            for i = 1, select('#', ...) do parts[i] = tostring((select(i, ...))) end
            OUTPUT[#OUTPUT + 1] = table.concat(parts, '\t')
        end
        os.exit = function(code)
            EXIT = code
            for _, f in ipairs(created) do pcall(f.cancel, f) end
            error('os.exit', 0)
        end
    "#;
    rt.lua().load(prelude).exec().unwrap();
    let _ = rt.run_chunk(&code, file);
    let out: Vec<String> = rt.lua().load("return OUTPUT").eval().unwrap();
    let exit: Option<c_int> = rt.lua().load("return EXIT").eval().unwrap();
    assert_eq!(exit, Some(0), "{file}: {out:?}");
    out
}

#[test]
fn conformance_c09_msgpack() {
    let out = run_case("C09_msgpack.lua");
    assert_eq!(out.last().map(String::as_str), Some("ok"), "{out:?}");
}

#[test]
fn conformance_c10_buffer_ibuf() {
    let out = run_case("C10_buffer_ibuf.lua");
    assert_eq!(out.last().map(String::as_str), Some("ok"), "{out:?}");
}

/// Bytes that Tarantool 2.6.0 produces (`tarantool -e` of the same
/// expressions), for values beyond C09's table.
#[test]
fn same_bytes_as_tarantool() {
    let rt = runtime();
    run(
        &rt,
        r#"
        local msgpack = require('msgpack')
        local rows = {
            {-0.0, '00'},
            {2^64, 'cb43f0000000000000'},
            {-2^63, 'd38000000000000000'},
            {-2^63 - 4096, 'cbc3e0000000000002'},
            {2^63, 'cf8000000000000000'},
            {0/0 ~= 0/0 and 1.25 or 0, 'cb3ff4000000000000'},
            {{[1] = 1, [3] = 3}, '9301c003'},
            {{[2] = 1}, '92c001'},
            {{nil, nil, 3}, '93c0c003'},
            {{[1] = 1, [2.0] = 2}, '920102'},
            {setmetatable({1, 2, nil, 4}, {__serialize = 'seq'}), '940102c004'},
            {setmetatable({1, 2, a = 4}, {__serialize = 'seq'}), '920102'},
            {setmetatable({a = 1}, {__serialize = 'seq'}), '90'},
            {setmetatable({}, {__serialize = 'array'}), '90'},
            {setmetatable({}, {__serialize = 'mapping'}), '80'},
            {setmetatable({}, {__serialize = 'sequence'}), '90'},
            {setmetatable({}, {__serialize = function() return 'x' end}), 'a178'},
            {setmetatable({}, {__serialize = function() return nil end}), 'c0'},
            {setmetatable({}, {__serialize = function() return setmetatable({}, {__serialize = 'map'}) end}), '80'},
            {{[1] = {}, [2] = {a = {}}}, '929081a16190'},
            -- an array by `__serialize` is as long as its largest integer key
            {setmetatable({[1] = 1, [5] = 5}, msgpack.array_mt), '9501c0c0c005'},
            {setmetatable({[5] = 5}, {__serialize = 'seq'}), '95c0c0c0c005'},
            {setmetatable({1, 2, 3, x = 1, [2.5] = 1, [-1] = 1}, {__serialize = 'sequence'}), '93010203'},
        }
        for i, row in ipairs(rows) do
            local got = hex(msgpack.encode(row[1]))
            assert(got == row[2], ('row %d: %s, Tarantool %s'):format(i, got, row[2]))
        end
        -- maps in the key order of the engine's table: Tarantool (LuaJIT)
        -- gives 821e030101 and 8202020101
        local s = msgpack.encode({[1] = 1, [30] = 3})
        assert(#s == 5 and s:byte(1) == 0x82, hex(s))
        s = msgpack.encode(setmetatable({[1] = 1, [2] = 2}, {__serialize = 'map'}))
        assert(s == '\130\1\1\2\2' or s == '\130\2\2\1\1', hex(s))
        msgpack.cfg{encode_max_depth = 2}
        local ok, err = pcall(msgpack.encode, {{{1}}})
        assert(not ok and tostring(err):find('Too high nest level - 3', 1, true), tostring(err))
        msgpack.cfg{encode_deep_as_nil = true}
        assert(hex(msgpack.encode({{{1}}})) == '9191c0')
        msgpack.cfg{encode_max_depth = 128, encode_deep_as_nil = false}
        local loop = {}
        loop.self = loop
        ok, err = pcall(msgpack.encode, loop)
        assert(not ok and tostring(err):find('Too high nest level - 129', 1, true), tostring(err))
    "#,
    );
}

#[test]
fn cfg_options() {
    let rt = runtime();
    run(
        &rt,
        r#"
        local msgpack = require('msgpack')
        assert(msgpack.cfg.encode_max_depth == 128 and msgpack.cfg.encode_use_tostring == false)
        msgpack.cfg{encode_invalid_numbers = false}
        assert(msgpack.cfg.encode_invalid_numbers == false)
        local ok, err = pcall(msgpack.encode, 0/0)
        assert(not ok and tostring(err):find('NaN'), tostring(err))
        assert(not pcall(msgpack.encode, {math.huge}))
        msgpack.cfg{encode_invalid_numbers = true, decode_invalid_numbers = false}
        assert(not pcall(msgpack.decode, msgpack.encode(0/0)))
        msgpack.cfg{decode_invalid_numbers = true}
        assert(msgpack.decode(msgpack.encode(-math.huge)) == -math.huge)
        msgpack.cfg{encode_use_tostring = true}
        local s = msgpack.decode(msgpack.encode(print))
        assert(type(s) == 'string' and s:find('function'), tostring(s))
        msgpack.cfg{encode_use_tostring = false, encode_invalid_as_nil = true}
        assert(msgpack.encode({print}) == '\145\192')
        msgpack.cfg{encode_invalid_as_nil = false}
        assert(not pcall(msgpack.encode, print))
        msgpack.cfg{encode_sparse_convert = false}
        assert(not pcall(msgpack.encode, {[1] = 1, [100] = 2}))
        msgpack.cfg{encode_sparse_convert = true, encode_sparse_ratio = 0}
        assert(#msgpack.encode({[1] = 1, [20] = 2}) == 3 + 20)
        msgpack.cfg{encode_sparse_ratio = 2, encode_load_metatables = false}
        assert(msgpack.encode(setmetatable({}, {__serialize = 'map'})) == '\144')
        msgpack.cfg{encode_load_metatables = true, decode_save_metatables = false}
        assert(getmetatable(msgpack.decode('\144')) == nil)
        msgpack.cfg{decode_save_metatables = true}
        assert(getmetatable(msgpack.decode('\144')) == msgpack.array_mt)
        assert(getmetatable(msgpack.decode('\128')) == msgpack.map_mt)
        -- decode_max_depth is JSON's (as in Tarantool): msgpack nests on
        msgpack.cfg{decode_max_depth = 3}
        assert(pcall(msgpack.decode, '\145\145\145\145\1'))
        msgpack.cfg{decode_max_depth = 128}
        assert(not pcall(msgpack.cfg, {encode_max_depth = 'x'}))
        assert(not pcall(msgpack.cfg, {encode_use_tostring = 1}))
        assert(pcall(msgpack.cfg, {no_such_option = 1}))
        assert(not pcall(msgpack.cfg, 5))
        -- a decoded table that gets a new key loses its kind
        local t = msgpack.decode('\145\1')
        t[1] = 5
        assert(getmetatable(t) == msgpack.array_mt)
        t[2] = 3
        assert(getmetatable(t) == nil and t[2] == 3)
        local m = msgpack.decode('\128')
        assert(not pcall(function() m[0/0] = 1 end))
    "#,
    );
}

#[test]
fn serialize_errors_and_yields() {
    let rt = runtime();
    run(
        &rt,
        r#"
        local msgpack, fiber = require('msgpack'), require('fiber')
        local ok, err = pcall(msgpack.encode, setmetatable({}, {__serialize = function() error('boom') end}))
        assert(not ok and tostring(err):find('boom'), tostring(err))
        local e = {}
        ok, err = pcall(msgpack.encode, setmetatable({}, {__serialize = function() error(e) end}))
        assert(not ok and err == e, 'the error value is raised as it is')
        assert(not pcall(msgpack.encode, setmetatable({}, {__serialize = 'bogus'})))
        assert(not pcall(msgpack.encode, setmetatable({}, {__serialize = 5})))
        local endless = {}
        setmetatable(endless, {__serialize = function(t) return t end})
        assert(not pcall(msgpack.encode, endless))
        -- a __serialize function may yield; the encode goes on afterwards
        local other
        local obj = setmetatable({}, {__serialize = function()
            fiber.sleep(0)
            return {1, 2}
        end})
        local f = fiber.new(function() other = msgpack.encode({x = 'y'}) end)
        assert(msgpack.encode({obj, obj, 'z'}) == '\147\146\1\2\146\1\2\161z')
        assert(other == '\129\161x\161y')
        -- a __serialize function that changes the table being encoded
        local t = {}
        for i = 1, 20 do t['k' .. i] = i end
        local grow = setmetatable({}, {__serialize = function()
            for i = 21, 200 do t['k' .. i] = i end
            for i = 1, 20 do t['k' .. i] = nil end
            collectgarbage()
            return 1
        end})
        t.grow = grow
        ok, err = pcall(msgpack.encode, t)
        -- either encoded or a clean error, never a crash
        assert(ok or err ~= nil)
        -- tables found to be maps (or sparse) after __serialize functions
        -- ran for their first elements: each function runs once (bytes from
        -- Tarantool 2.6.0; map order may differ on Lua 5.4)
        local calls = 0
        local x = setmetatable({}, {__serialize = function() calls = calls + 1; return 'x' end})
        assert(msgpack.encode({x, x, [4] = 5}) == '\148\161x\161x\192\5' and calls == 2)
        calls = 0
        local m = msgpack.decode(msgpack.encode({x, x, y = 1}))
        assert(calls == 2 and m[1] == 'x' and m[2] == 'x' and m.y == 1 and getmetatable(m) == msgpack.map_mt)
        calls = 0
        m = msgpack.decode(msgpack.encode({x, [100] = 1}))
        assert(calls == 1 and m[1] == 'x' and m[100] == 1 and getmetatable(m) == msgpack.map_mt)
        -- userdata with a __serialize function
        local buffer = require('buffer')
        assert(not pcall(msgpack.encode, buffer.ibuf()))
        assert(not pcall(msgpack.encode, coroutine.create(print)))
    "#,
    );
}

#[test]
fn decode_api_and_pointers() {
    let rt = runtime();
    run(
        &rt,
        r#"
        local msgpack, buffer = require('msgpack'), require('buffer')
        assert(select(2, msgpack.decode('\1\2', 2)) == 3)
        assert(not pcall(msgpack.decode, '\1\2', 3))
        assert(not pcall(msgpack.decode, '\1\2', 0))
        assert(msgpack.decode('\1\2', 1.5) == 1, 'luaL_checkinteger truncates')
        assert(msgpack.decode_unchecked('\1\2', 2) == 2)
        local buf = buffer.ibuf()
        msgpack.encode({1, 2, 3}, buf)
        msgpack.encode('tail', buf)
        local v, nxt = msgpack.decode(buf.rpos, buf:size())
        assert(v[3] == 3)
        local s, last = msgpack.decode_unchecked(nxt)
        assert(s == 'tail' and last == buf.wpos)
        assert(not pcall(msgpack.decode, buf.rpos), 'decode(ptr) needs a size')
        assert(not pcall(msgpack.decode, buf.rpos, 2), 'a size that cuts the value')
        assert(not pcall(msgpack.decode, msgpack.NULL, 1), 'NULL is no ibuf pointer')
        buf:recycle()
        -- Lua-only helpers
        buf:write(msgpack.encode({a = 1}))
        assert(buf:string() == msgpack.encode({a = 1}))
        assert(msgpack.decode(buf.rpos, buf:size()).a == 1)
        -- rpos can be set with a pointer into the buffer
        buf.rpos = buf.wpos
        assert(buf:size() == 0)
        assert(not pcall(function() buf.rpos = msgpack.NULL end))
        assert(not pcall(function() buf.size = 1 end))
    "#,
    );
}

#[test]
fn stale_cord_buffer_is_refused() {
    let rt = runtime();
    run(
        &rt,
        r#"
        local buffer, msgpack = require('buffer'), require('msgpack')
        local take, put = buffer.internal.cord_ibuf_take, buffer.internal.cord_ibuf_put
        local b = take()
        put(b)
        msgpack.encode({1, 2, 3})        -- takes (and puts) the same slot
        assert(not pcall(b.size, b), 'a put buffer is refused after another take')
        local c = take()
        assert(c == b and c:size() == 0)
        put(c)
        put(c)                           -- a second put is a no-op
        assert(not pcall(put, buffer.ibuf()), 'put of a non-cord ibuf')
        assert(not pcall(put, {}))
    "#,
    );
}

/// The issue's "Must show": 1e5 encodes after warm-up allocate no cord
/// buffer memory.
#[test]
fn steady_state_encode_allocates_no_buffer() {
    let rt = runtime();
    run(
        &rt,
        r#"
        local msgpack, buffer = require('msgpack'), require('buffer')
        local source = {
            setmetatable({[180] = 10, [1] = 0}, {__serialize = "map"}),
            setmetatable({[34] = "vshard.router.call_rw", [33] = {148, 0, "bench_call_select_r"}},
                         {__serialize = "map"}),
            string.rep('x', 5000),
        }
        local out = buffer.ibuf()
        for _ = 1, 100 do msgpack.encode(source); msgpack.encode(source, out); out:reset() end
        local s0 = buffer.internal.stats()
        for _ = 1, 100000 do msgpack.encode(source) end
        local s1 = buffer.internal.stats()
        assert(s1.allocations == s0.allocations, ('%d cord buffer allocations'):format(s1.allocations - s0.allocations))
        assert(s1.takes - s0.takes == 100000 and s1.puts - s0.puts == 100000)
        assert(s1.taken == 0)
    "#,
    );
}

/// Every file of the corpus (inputs a fuzzer and hand found tricky) decodes
/// or raises; never a crash. Also as an ibuf pointer, and re-encoded.
#[test]
fn corpus_decodes_or_raises() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/msgpack_corpus");
    let rt = runtime();
    let check = rt
        .lua()
        .load(
            r#"
            local msgpack, buffer = require('msgpack'), require('buffer')
            return function(s)
                local ok, v = pcall(msgpack.decode, s)
                pcall(msgpack.decode_unchecked, s)
                local buf = buffer.ibuf()
                buf:write(s)
                local ok2 = pcall(msgpack.decode, buf.rpos, buf:size())
                assert(ok == ok2, 'string and pointer decodes disagree')
                if ok then
                    local eok, err = pcall(msgpack.encode, v)
                    assert(eok or tostring(err):find('Too high nest level'), tostring(err))
                end
                return ok
            end
        "#,
        )
        .eval::<mlua::Function>()
        .unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let s = rt.lua().create_string(&bytes).unwrap();
        check
            .call::<bool>(s)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    assert!(n >= 10, "corpus has {n} files");
}

/// Random mutations of valid encodings: decode raises or succeeds.
#[test]
fn mutated_inputs_never_crash() {
    let rt = runtime();
    let seeds: Vec<Vec<u8>> = rt
        .lua()
        .load(
            r#"
            local msgpack = require('msgpack')
            local t = {}
            for _, v in ipairs({
                {1, 2, {a = 'b', c = {1.5, -7, true}}}, {[1] = 'x', y = {{}, {{}}}},
                string.rep('s', 300), {k = {string.rep('v', 70000)}}, 2^40, -2^40,
            }) do t[#t + 1] = msgpack.encode(v) end
            return t
        "#,
        )
        .eval::<Vec<mlua::LuaString>>()
        .unwrap()
        .into_iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let decode = rt
        .lua()
        .load("local m = require('msgpack'); return function(s) return (pcall(m.decode, s)) end")
        .eval::<mlua::Function>()
        .unwrap();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20_000 {
        let mut b = seeds[(rand() % seeds.len() as u64) as usize].clone();
        for _ in 0..1 + rand() % 4 {
            let i = (rand() % b.len() as u64) as usize;
            match rand() % 3 {
                0 => b[i] = rand() as u8,
                1 => b.truncate(i),
                _ => b.insert(i, rand() as u8),
            }
            if b.is_empty() {
                break;
            }
        }
        let s = rt.lua().create_string(&b).unwrap();
        decode.call::<bool>(s).unwrap();
    }
}

/// Sets global `slow_msgpack`: a second `msgpack` module whose encoder never
/// takes the LuaJIT fast path (`encode::raw`), to compare the two paths.
#[cfg(all(feature = "luajit", not(luafiber_no_fast_paths)))]
fn open_slow_msgpack(rt: &LuaRuntime) {
    let s = &mut rt.main_stack();
    let l = s.as_ptr();
    // A second module of the same state (`msgpack.new()`: a state of its own).
    assert!(s.load("return require('msgpack').new()", c"=slow").is_ok());
    assert!(s.pcall(0, 1).is_ok(), "msgpack.new()");
    s.rawget_field(-1, c"encode");
    // SAFETY: upvalue 1 of `encode` is the module's `State` userdata; the
    // stack is told of the push.
    unsafe {
        assert!(!ffi::lua_getupvalue(l, -1, 1).is_null());
        s.sync();
        let st = s.to_userdata(-1).cast::<super::State>();
        assert!((*st).tables.is_some(), "the layout probe failed");
        (*st).tables = None;
    }
    s.pop(2);
    s.push_globals();
    s.insert(-2);
    s.set_field(-2, c"slow_msgpack");
    s.pop(1);
}

/// The LuaJIT fast path writes what the C API path writes, byte for byte,
/// or gives up and leaves it to that path: random nested tables of every
/// key and value kind, hints, holes, sparse arrays, `NULL`, keys in the hash
/// part, deep nesting, and each under several `cfg` settings.
#[cfg(all(feature = "luajit", not(luafiber_no_fast_paths)))]
#[test]
fn fast_path_writes_the_c_api_bytes() {
    let rt = runtime();
    open_slow_msgpack(&rt);
    run(
        &rt,
        r#"
        local msgpack, slow = require('msgpack'), slow_msgpack
        math.randomseed(7)
        local seq = {__serialize = 'seq'}
        local map = {__serialize = 'mapping'}
        local scalars = {
            0, 1, -1, 127, 128, -33, 255, 65536, 2^32, -2^31 - 1, 2^53, 2^63, -2^63, 2^64,
            0.5, -1.25, 1/0, -1/0, 0/0, true, false, msgpack.NULL, '', 'abc',
            string.rep('s', 31), string.rep('t', 32), string.rep('u', 256),
        }
        local value
        local function tab(depth)
            local t, kind = {}, math.random(6)
            local n = math.random(0, 12)
            for i = 1, n do
                if kind == 1 then
                    t[i] = value(depth + 1)
                elseif kind == 2 then
                    t[math.random(1, 40)] = value(depth + 1)
                elseif kind == 3 then
                    t['k' .. math.random(20)] = value(depth + 1)
                elseif kind == 4 then
                    local k = scalars[math.random(#scalars)]
                    if k == k then t[k] = value(depth + 1) end
                elseif kind == 5 then
                    t[i] = value(depth + 1); t[i + 100] = (i % 3 == 0) or nil
                else
                    t[({0, -1, 1.5, 2, 3})[math.random(5)]] = value(depth + 1)
                end
            end
            local m = math.random(8)
            if m == 1 then setmetatable(t, seq)
            elseif m == 2 then setmetatable(t, map)
            elseif m == 3 then setmetatable(t, {__index = t})
            elseif m == 4 then setmetatable(t, msgpack.array_mt) end
            return t
        end
        function value(depth)
            if depth < 5 and math.random(3) == 1 then return tab(depth) end
            return scalars[math.random(#scalars)]
        end
        local function same(v, what)
            local ok1, a = pcall(msgpack.encode, v)
            local ok2, b = pcall(slow.encode, v)
            if ok1 ~= ok2 or (ok1 and a ~= b) or (not ok1 and tostring(a) ~= tostring(b)) then
                a = ok1 and hex(a) or tostring(a)
                b = ok2 and hex(b) or tostring(b)
                error(('%s: fast %s, C API %s'):format(what, a, b))
            end
        end
        local cfgs = {
            {},
            {encode_max_depth = 3},
            {encode_max_depth = 3, encode_deep_as_nil = true},
            {encode_invalid_numbers = false},
            {encode_invalid_numbers = false, encode_invalid_as_nil = true},
            {encode_sparse_convert = false},
            {encode_sparse_ratio = 0},
            {encode_sparse_safe = 1, encode_sparse_ratio = 1},
            {encode_load_metatables = false},
        }
        -- Plain sequences of scalars (the encoder's one-pass path for them),
        -- with the longer strings' and arrays' heads.
        local plain = {string.rep('v', 65535), string.rep('w', 65536)}
        for _, v in ipairs(scalars) do
            if type(v) ~= 'cdata' then plain[#plain + 1] = v end
        end
        local function sequence()
            local t = {}
            for i = 1, math.random(1, 20) do t[i] = plain[math.random(#plain)] end
            return t
        end
        local defaults = {}
        for k, v in pairs(msgpack.cfg) do defaults[k] = v end
        for c, cfg in ipairs(cfgs) do
            msgpack.cfg(cfg); slow.cfg(cfg)
            for i = 1, 3000 do same(tab(0), ('cfg %d, table %d'):format(c, i)) end
            for i = 1, 500 do same(sequence(), ('cfg %d, sequence %d'):format(c, i)) end
            same({sequence(), {sequence()}}, ('cfg %d, nested sequences'):format(c))
            msgpack.cfg(defaults); slow.cfg(defaults)
        end
        local loop = {}
        loop.self = loop
        same(loop, 'a table holding itself')
        local deep = {}
        for _ = 1, 200 do deep = {deep} end
        same(deep, '200 levels')
        same({[{1}] = {[{}] = 'x'}}, 'tables as keys')
        same({f = print}, 'a function value')
        same(setmetatable({}, {__serialize = 5}), 'a number hint')
        same(setmetatable({}, {__serialize = 'bad'}), 'an unknown hint')
        same({setmetatable({1}, {__serialize = function(t) return {t[1], 'f'} end})}, 'a function hint')
        local big = {}
        for i = 1, 70000 do big[i] = i end
        same(big, '70000 elements')
        local wide = {}
        for i = 1, 70000 do wide['k' .. i] = i end
        same(wide, '70000 keys')
    "#,
    );
}

/// Nesting that the fiber's stack cannot hold raises an error instead of
/// faulting in the stack guard: plain tables, and `__serialize` functions
/// each nesting the next (a `lua_pcall` per level), on 128 KiB stacks.
#[test]
fn nesting_deeper_than_the_stack_raises() {
    let rt = runtime_with_stacks(128 << 10);
    run(
        &rt,
        r#"
        local msgpack = require('msgpack')
        msgpack.cfg{encode_max_depth = 1000}
        local t, u = {}, {}
        for _ = 1, 999 do
            t = {t}
            u = setmetatable({u}, {__serialize = function(x) return {x[1]} end})
        end
        for _, v in ipairs{t, u} do
            local ok, err = pcall(msgpack.encode, v)
            assert(not ok and tostring(err):find('too deep for the fiber', 1, true), tostring(err))
        end
        assert(#msgpack.encode({{{{1}}}}) == 5)
    "#,
    );
}

/// Scalar cdata encode as Tarantool's (bytes from `tarantool` 2.6.0), and
/// `msgpack.NULL` is a cdata NULL, `== nil` as in Tarantool, also when
/// decoded.
#[cfg(feature = "luajit")]
#[test]
fn cdata_like_tarantool() {
    let rt = runtime();
    run(
        &rt,
        r#"
        local msgpack, ffi = require('msgpack'), require('ffi')
        local rows = {
            {{1LL}, '9101'}, {{1ULL}, '9101'}, {{ffi.new('int64_t', 5)}, '9105'},
            {{-5000000000LL}, '91d3fffffffed5fa0e00'}, {{18446744073709551615ULL}, '91cfffffffffffffffff'},
            {{ffi.cast('void *', 0)}, '91c0'}, {{ffi.new('double', 1.5)}, '91cb3ff8000000000000'},
            {{ffi.new('bool', true)}, '91c3'}, {{msgpack.NULL}, '91c0'},
            {{[1LL] = 'a'}, '81'.. '01a161'},
        }
        for i, row in ipairs(rows) do
            local got = hex(msgpack.encode(row[1]))
            assert(got == row[2], ('row %d: %s, Tarantool %s'):format(i, got, row[2]))
        end
        local ok, err = pcall(msgpack.encode, {ffi.cast('void *', 1)})
        assert(not ok and tostring(err):find('cdata', 1, true), tostring(err))
        assert(type(msgpack.NULL) == 'cdata' and msgpack.NULL == nil)
        local t = msgpack.decode('\147\1\192\3')
        assert(t[2] == nil and t[2] == msgpack.NULL and type(t[2]) == 'cdata')
    "#,
    );
}

/// A value encoded where it sits on the stack (`port::encode_value_in_place`:
/// IPROTO replies and pushes, net.box's request bodies, with the default
/// options; on LuaJIT a number, a string or a table read from the slot's
/// word) writes the bytes `msgpack.encode` writes with those options, or
/// leaves the value to the general path.
#[test]
fn values_encoded_in_place_are_msgpack_encode_bytes() {
    let rt = runtime();
    let s = &mut rt.main_stack();
    let chunk = r#"
        local msgpack = require('msgpack')
        return msgpack, {0, 1, -1, 127, 128, -33, 2^32, 2^53, 2^63, -2^63, 2^64, 0.5,
            -1.25, 1/0, -1/0, 0/0, true, false, '', 'abc', string.rep('s', 31),
            string.rep('u', 300), {1, 2, 'foo'}, {a = 1}, {}, msgpack.NULL,
            setmetatable({}, msgpack.array_mt), {{1}, {2, {3}}}}
    "#;
    assert!(s.load(chunk, c"=in_place").is_ok() && s.pcall(0, 2).is_ok());
    let (msgpack, values) = (s.top() - 1, s.top());
    let mut written = 0;
    for i in 1..=28 {
        s.rawgeti(values, i);
        let v = s.top();
        let mut out = luafiber_runtime::ibuf::Ibuf::new();
        let in_place =
            super::port::encode_value_in_place(s, v, &mut out, super::port::Options::Default)
                .map(|r| r.map(|()| out.data().to_vec()).map_err(drop));
        s.rawget_field(msgpack, c"encode");
        s.push_value(v);
        assert!(s.pcall(1, 1).is_ok(), "msgpack.encode of value {i}");
        let want = s.to_str(-1).unwrap().to_vec();
        s.pop(2);
        if let Some(got) = in_place {
            assert_eq!(got, Ok(want), "value {i}");
            written += 1;
        }
    }
    // Every value but the NULL cdata is written in place where tables are
    // read in place (LuaJIT); elsewhere the scalars are.
    let want = if cfg!(all(feature = "luajit", not(luafiber_no_fast_paths))) {
        27
    } else {
        22
    };
    assert!(written >= want, "{written} of 28 written in place");
}
