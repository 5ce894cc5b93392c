//! `msgpack` from Lua: encode and decode of the request-shaped table of
//! `benches/lua/msgpack_encode.lua` (maps with `__serialize = "map"`),
//! of a 1000-integer array and of a 100-entry map, encode into an ibuf, and
//! encode through a `__serialize` function (the cached trampoline).
//!
//! ```text
//! cargo bench --bench msgpack                                   # LuaJIT
//! cargo bench --bench msgpack --no-default-features --features lua54
//! ```
//!
//! Each op is one call from a Lua loop; the loop runs a whole batch (through
//! `iter_custom`, outside any fiber: msgpack never yields), and criterion
//! divides by the batch size. Encode results are interned strings equal
//! from call to call, so the figures show the encoder, not the collector.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use luafiber_lua::mlua::{Function, Table};
use luafiber_lua::LuaRuntime;

/// The Lua side: `cases[name] = function(n)` running `n` ops.
const SETUP: &str = r#"
local msgpack, buffer = require('msgpack'), require('buffer')
local encode, decode = msgpack.encode, msgpack.decode

local request = {
    setmetatable({[180] = 10, [1] = 0}, {__serialize = "map"}),
    setmetatable({
        [34] = "vshard.router.call_rw",
        [33] = {148, 0, "bench_call_select_r"},
    }, {__serialize = "map"}),
}
local ints = {}
for i = 1, 1000 do ints[i] = i end
local map = {}
for i = 1, 100 do map['key' .. i] = {i, 'value' .. i} end
local custom = setmetatable({}, {__serialize = function() return {1, 'two', 3.5} end})

local function encoder(v) return function(n) for _ = 1, n do encode(v) end end end
local function decoder(v)
    local s = encode(v)
    return function(n) for _ = 1, n do decode(s) end end
end

local out = buffer.ibuf()
local cases = {
    encode_request = encoder(request),
    decode_request = decoder(request),
    encode_ints_1000 = encoder(ints),
    decode_ints_1000 = decoder(ints),
    encode_map_100 = encoder(map),
    decode_map_100 = decoder(map),
    encode_serialize_fn = encoder(custom),
    encode_request_into_ibuf = function(n)
        for _ = 1, n do
            encode(request, out)
            out:reset()
        end
    end,
}
return cases
"#;

const CASES: &[&str] = &[
    "encode_request",
    "decode_request",
    "encode_request_into_ibuf",
    "encode_serialize_fn",
    "encode_ints_1000",
    "decode_ints_1000",
    "encode_map_100",
    "decode_map_100",
];

fn msgpack(c: &mut Criterion) {
    let rt = LuaRuntime::new().expect("a LuaRuntime on the bench thread");
    let cases: Table = rt
        .lua()
        .load(SETUP)
        .set_name("=msgpack_bench")
        .eval()
        .expect("setup");
    let mut g = c.benchmark_group("msgpack");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .throughput(Throughput::Elements(1));
    for &name in CASES {
        let run: Function = cases.get(name).expect(name);
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                run.call::<()>(iters).expect(name);
                t.elapsed()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, msgpack);
criterion_main!(benches);
