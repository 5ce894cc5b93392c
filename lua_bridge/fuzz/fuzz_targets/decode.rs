//! `msgpack.decode` on arbitrary bytes: it returns a value or raises a Lua
//! error, never crashes, never allocates without bound. The same bytes
//! decoded from an ibuf pointer must agree with the string decode, and a
//! decoded value must encode and decode again.
//!
//! ```text
//! cd lua_bridge/fuzz && cargo +nightly fuzz run decode ../tests/msgpack_corpus
//! ```
//! New crashers go to `lua_bridge/tests/msgpack_corpus/`, which the
//! `corpus_decodes_or_raises` unit test replays on every `cargo test`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use luafiber_lua::mlua::Function;
use luafiber_lua::LuaRuntime;

const CHECK: &str = r#"
    local msgpack, buffer = require('msgpack'), require('buffer')
    local buf = buffer.ibuf()
    return function(s)
        local ok, v = pcall(msgpack.decode, s)
        buf:reset()
        buf:write(s)
        local ok2 = pcall(msgpack.decode, buf.rpos, buf:size())
        assert(ok == ok2, 'string and pointer decodes disagree')
        if ok then
            local again = msgpack.encode(v)
            assert(pcall(msgpack.decode, again), 're-encoded value does not decode')
        end
    end
"#;

thread_local! {
    /// One runtime per thread (the fuzzer runs on one).
    static TARGET: (LuaRuntime, Function) = {
        let rt = LuaRuntime::new().expect("a Lua runtime");
        let check = rt.lua().load(CHECK).eval::<Function>().expect("the check function");
        (rt, check)
    };
}

fuzz_target!(|data: &[u8]| {
    TARGET.with(|(rt, check)| {
        let s = rt.lua().create_string(data).expect("a Lua string");
        if let Err(e) = check.call::<()>(s) {
            panic!("{e}");
        }
    });
});
