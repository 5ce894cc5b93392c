//! Every fuzz target, run for a bounded number of inputs as an ordinary
//! test on stable Rust: a fixed seed, the corpus committed in the
//! repository, and mutations of it (bytes flipped, cut, inserted, spliced
//! from another input, runs of the bytes the format gives meaning to). The
//! same seed gives the same inputs, so a failure names an input that fails
//! again. `LUAFIBER_FUZZ_INPUTS=N` sets the count of every target (e.g. a
//! longer run before a release); `LUAFIBER_FUZZ_SEED=S` another seed.
//!
//! | target | corpus | checks |
//! |---|---|---|
//! | `msgpack.decode` | `lua_bridge/tests/msgpack_corpus/` | a value or a raised error; the string and the ibuf pointer decodes agree; a value encodes and decodes again (`lua_bridge/fuzz/` runs the same check under `cargo fuzz`) |
//! | `json.decode` | `tests/fuzz/json/` | a value or a raised error with a message; a value encodes and decodes again |
//! | `s:read()` | `tests/fuzz/socket_read/` | streams cut into random writes, read back by limit, delimiter, delimiter list and `{chunk, delimiter}`: each answer is Tarantool's (`socket.lua`'s `check_limit`/`check_delimiter`, as a model here), nothing lost, nothing waits for ever |
//!
//! The IPROTO decoders have their own bounded run in the `iproto` crate
//! (`iproto/tests/decode_fuzz.rs`).

use std::path::Path;

use luafiber::{LuaRuntime, Value};

/// The default seed (any fixed number).
const SEED: u64 = 0x5eed_1f1b_e2a7_c0de;

/// Inputs per target: `LUAFIBER_FUZZ_INPUTS`, else `default`.
fn inputs(default: usize) -> usize {
    std::env::var("LUAFIBER_FUZZ_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: small, seeded, enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(target: u64) -> Rng {
        let seed = std::env::var("LUAFIBER_FUZZ_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(SEED);
        Rng((seed ^ target.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The files of a corpus directory, in name order (so the run does not
/// depend on the file system's order).
fn corpus(dir: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let files: Vec<_> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(files.len() >= 5, "{}: {} files", dir.display(), files.len());
    files
}

/// One input: a corpus entry as it is (the first pass), or mutated.
fn mutate(rng: &mut Rng, corpus: &[Vec<u8>], interesting: &[u8], i: usize) -> Vec<u8> {
    if i < corpus.len() {
        return corpus[i].clone();
    }
    let mut b = corpus[rng.below(corpus.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(7) {
            0 if !b.is_empty() => {
                let at = at.min(b.len() - 1);
                b[at] ^= 1 << rng.below(8);
            }
            1 => b.truncate(at),
            2 => b.insert(at, interesting[rng.below(interesting.len())]),
            3 => {
                // A run of one interesting byte (deep nesting, long
                // numbers, many delimiters).
                let run = vec![interesting[rng.below(interesting.len())]; 1 + rng.below(64)];
                b.splice(at..at, run);
            }
            4 => {
                // Splice a piece of another input.
                let other = &corpus[rng.below(corpus.len())];
                let from = rng.below(other.len() + 1);
                let to = from + rng.below(other.len() - from + 1);
                b.splice(at..at, other[from..to].iter().copied());
            }
            5 if !b.is_empty() => {
                let at = at.min(b.len() - 1);
                b[at] = rng.next() as u8;
            }
            _ => {
                let to = at + rng.below(b.len() - at + 1);
                b.drain(at..to);
            }
        }
    }
    b
}

/// Runs `check` (a Lua function of one string) on each input; a Lua error
/// from it, or a crash, fails the test with the input's number.
fn run_bytes(what: &str, check_src: &str, inputs: impl Iterator<Item = Vec<u8>>) -> usize {
    let rt = LuaRuntime::new().unwrap();
    let check = rt
        .lua()
        .load(check_src)
        .eval::<luafiber::mlua::Function>()
        .unwrap();
    let mut n = 0;
    for (i, input) in inputs.enumerate() {
        let s = rt.lua().create_string(&input).unwrap();
        if let Err(e) = check.call::<()>(s) {
            panic!(
                "{what}: input {i} ({} bytes: {:02x?}): {e}",
                input.len(),
                &input[..input.len().min(64)]
            );
        }
        n += 1;
    }
    n
}

#[test]
fn fuzz_msgpack_decode() {
    let corpus = corpus("lua_bridge/tests/msgpack_corpus");
    let interesting: Vec<u8> = (0x80..=0xff).chain([0, 1, 0x7f]).collect();
    let mut rng = Rng::new(1);
    let count = inputs(30_000);
    let n = run_bytes(
        "msgpack.decode",
        r#"
        local msgpack, buffer = require('msgpack'), require('buffer')
        local buf = buffer.ibuf()
        return function(s)
            local ok, v = pcall(msgpack.decode, s)
            pcall(msgpack.decode_unchecked, s)
            buf:reset()
            buf:write(s)
            local ok2 = pcall(msgpack.decode, buf.rpos, buf:size())
            assert(ok == ok2, 'string and pointer decodes disagree')
            if ok then
                local eok, again = pcall(msgpack.encode, v)
                assert(eok or tostring(again):find('Too high nest level'), tostring(again))
                if eok then
                    assert(pcall(msgpack.decode, again), 're-encoded value does not decode')
                end
            end
        end
        "#,
        (0..count).map(|i| mutate(&mut rng, &corpus, &interesting, i)),
    );
    eprintln!("msgpack.decode: {n} inputs");
}

#[test]
fn fuzz_json_decode() {
    let corpus = corpus("tests/fuzz/json");
    let interesting = b"{}[],:\"\\-+.0123456789eEtrufalsnNIiy \t\n\x00\xff\xc3\xed";
    let mut rng = Rng::new(2);
    let count = inputs(30_000);
    let n = run_bytes(
        "json.decode",
        r#"
        local json = require('json')
        local strict = json.new()
        strict.cfg({decode_invalid_numbers = false, decode_max_depth = 16})
        return function(s)
            for _, j in ipairs({json, strict}) do
                local ok, v = pcall(j.decode, s)
                if ok then
                    local eok, again = pcall(j.encode, v)
                    if eok then
                        local dok, err = pcall(j.decode, again)
                        assert(dok, 're-encoded value does not decode: ' .. tostring(err))
                    end
                else
                    -- a message (an error object's, here)
                    assert(type(tostring(v)) == 'string' and #tostring(v) > 0,
                           'no message')
                end
            end
        end
        "#,
        (0..count).map(|i| mutate(&mut rng, &corpus, interesting, i)),
    );
    eprintln!("json.decode: {n} inputs");
}

/// What one `s:read()` asks for.
struct ReadSpec {
    /// 1 a limit, 2 one delimiter, 3 `{chunk = limit, delimiter = list}`,
    /// 4 `{delimiter = list}`.
    form: u8,
    limit: usize,
    delims: Vec<Vec<u8>>,
}

/// Tarantool's answer (`socket.lua`'s `read` with `check_limit` or
/// `check_delimiter`) to `spec` when `rest` is all that is left of the
/// stream before its end: its length.
fn model(rest: &[u8], spec: &ReadSpec) -> usize {
    if spec.limit == 0 {
        return 0;
    }
    let shortest = spec
        .delims
        .iter()
        .filter_map(|d| {
            rest.windows(d.len().max(1))
                .position(|w| w == d.as_slice())
                .map(|at| at + d.len())
        })
        .min();
    match shortest {
        Some(end) if end <= spec.limit => end,
        _ if spec.limit <= rest.len() => spec.limit,
        _ => rest.len(),
    }
}

/// The Lua side of the socket target: a writer fiber writes the fragments
/// (yielding between some), then shuts its side down; the reader makes the
/// reads; the answers come back in order (`false` for a nil answer: an
/// error or a timeout).
const SOCKET_READ: &str = r#"
local socket, fiber = require('socket'), require('fiber')
local function tcp_pair()
    local l = socket('AF_INET', 'SOCK_STREAM', 'tcp')
    assert(l:bind('127.0.0.1', 0) and l:listen())
    local c = assert(socket.tcp_connect('127.0.0.1', l:name().port, 10))
    assert(l:readable(10))
    local a = assert(l:accept())
    l:close()
    return a, c
end
function fuzz_socket_read(tcp, fragments, yields, specs)
    local a, b
    if tcp then
        a, b = tcp_pair()
    else
        a, b = socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0)
    end
    local w = fiber.new(function()
        for i, f in ipairs(fragments) do
            if not b:write(f, 10) then break end
            for _ = 1, yields[i] or 0 do fiber.yield() end
        end
        b:shutdown('W')
    end)
    w:set_joinable(true)
    local out = {}
    for i, sp in ipairs(specs) do
        local r
        if sp.form == 1 then
            r = a:read(sp.limit, 10)
        elseif sp.form == 2 then
            r = a:read(sp.delims[1], 10)
        elseif sp.form == 3 then
            r = a:read({chunk = sp.limit, delimiter = sp.delims}, 10)
        else
            r = a:read({delimiter = sp.delims}, 10)
        end
        out[i] = r or false
    end
    a:close()
    w:join()
    b:close()
    return out
end
"#;

#[test]
fn fuzz_socket_read_with_delimiters() {
    let corpus = corpus("tests/fuzz/socket_read");
    let interesting = b"\r\n\x00abx";
    let delims: [&[u8]; 8] = [
        b"\n",
        b"\r\n",
        b"\r\n\r\n",
        b"a",
        b"ab",
        b"aab",
        b"x",
        b"\xff",
    ];
    let mut rng = Rng::new(3);
    let count = inputs(1_500);
    let rt = LuaRuntime::new().unwrap();
    rt.eval(SOCKET_READ, vec![]).unwrap();
    let bytes = |b: &[u8]| Value::String(b.to_vec());
    for i in 0..count {
        let stream = mutate(&mut rng, &corpus, interesting, i);
        // Cut into writes of random sizes, some followed by yields.
        let mut fragments = Vec::new();
        let mut yields = Vec::new();
        let mut at = 0;
        while at < stream.len() {
            let most = match rng.below(3) {
                0 => 4,
                1 => 64,
                _ => 4096,
            };
            let n = 1 + rng.below(most);
            let to = (at + n).min(stream.len());
            fragments.push(bytes(&stream[at..to]));
            yields.push(Value::Integer(rng.below(3) as i64));
            at = to;
        }
        let specs: Vec<ReadSpec> = (0..1 + rng.below(12))
            .map(|_| {
                let form = 1 + rng.below(4) as u8;
                let limit = match rng.below(4) {
                    0 => rng.below(4),
                    1 => rng.below(100),
                    2 => rng.below(100_000),
                    _ => 2_147_483_647,
                };
                let k = if form == 2 { 1 } else { 1 + rng.below(3) };
                let delims = (0..k)
                    .map(|_| match rng.below(4) {
                        0 if !stream.is_empty() => {
                            // A piece of the stream itself.
                            let from = rng.below(stream.len());
                            let to = (from + 1 + rng.below(3)).min(stream.len());
                            stream[from..to].to_vec()
                        }
                        _ => delims[rng.below(delims.len())].to_vec(),
                    })
                    .collect();
                ReadSpec {
                    form,
                    limit: if form == 2 || form == 4 {
                        2_147_483_647
                    } else {
                        limit
                    },
                    delims: if form == 1 { Vec::new() } else { delims },
                }
            })
            .collect();
        let lua_specs = specs
            .iter()
            .map(|s| {
                Value::Table(vec![
                    (Value::from("form"), Value::Integer(s.form.into())),
                    (Value::from("limit"), Value::Integer(s.limit as i64)),
                    (
                        Value::from("delims"),
                        Value::from(s.delims.iter().map(|d| bytes(d)).collect::<Vec<_>>()),
                    ),
                ])
            })
            .collect::<Vec<_>>();
        let tcp = i % 2 == 1;
        let got = rt
            .call(
                "fuzz_socket_read",
                vec![
                    Value::Boolean(tcp),
                    Value::from(fragments),
                    Value::from(yields),
                    Value::from(lua_specs),
                ],
            )
            .unwrap_or_else(|e| panic!("input {i}: {e}"));
        let Some(got) = got.first().and_then(Value::as_array) else {
            panic!("input {i}: {got:?}")
        };
        let mut rest: &[u8] = &stream;
        for (k, spec) in specs.iter().enumerate() {
            let want = model(rest, spec);
            let answer = got.get(k).and_then(|v| v.as_bytes());
            assert_eq!(
                answer,
                Some(&rest[..want]),
                "input {i} ({}), read {k} (form {}, limit {}, delimiters {:?}) of a stream of {} bytes \
                 with {} left",
                if tcp { "tcp" } else { "unix" },
                spec.form,
                spec.limit,
                spec.delims,
                stream.len(),
                rest.len()
            );
            rest = &rest[want..];
        }
    }
    eprintln!("s:read(): {count} streams");
}
