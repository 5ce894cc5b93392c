//! The Lua `yaml` module: Tarantool master's `yaml`
//! (`third_party/lua-yaml/lyaml.cc` over `src/lua/serializer.c` and
//! Tarantool's fork of libyaml).
//!
//! - `yaml.encode(value [, {tag_handle = h, tag_prefix = p}])`: a YAML
//!   document (`---` ... `...`), with a `%TAG h p` directive when asked;
//!   `nil, problem` when the emitter refuses (a tag handle not ending in
//!   `!`).
//! - `yaml.decode(text [, {tag_only = true}])`: the value of each document
//!   of `text` (one result per document), or with `tag_only` the first
//!   document's `%TAG` handle and prefix (nothing when it has none; `nil,
//!   err` for several).
//! - `yaml.new()`, `yaml.cfg{...}`, `yaml.cfg.NAME`, `yaml.NULL`,
//!   `yaml.array_mt`, `yaml.map_mt`: as `json`'s, the options those of the
//!   shared serializer ([`Config`](crate::modules::serializer::Config)).
//!
//! Tables are block collections; `__serialize = 'seq'` or `'map'` makes
//! one a flow collection (`[1, 2]`, `{'k': 'v'}`), `'sequence'`, `'array'`
//! and `'mapping'` a block one; a table met twice gets an anchor (`&0`) and
//! aliases (`*0`), also when `__serialize` functions return it. Strings
//! that would read back as another type (`'true'`, `'null'`, `'10'`) and
//! every string inside a flow collection are single-quoted; a string with a
//! line break is a literal block (`|-`), as master's default
//! `compat.yaml_pretty_multiline = 'new'`.
//!
//! How it is built: `yaml.lua` walks the value as lyaml's `dump_node` and
//! `find_references` do (with the serializer's `luaL_checkfield` rules and
//! its reference table of `__serialize` results) into a flat list of
//! events, which [`yaml_emit`] hands to the `libyaml-safer` crate's emitter;
//! decoding ([`decode`]) reads the crate's parser events as lyaml's
//! `load_node` does. `libyaml-safer` is libyaml 0.2.5 translated into safe
//! Rust line by line (it keeps libyaml's emitter rules, so the text is
//! libyaml's, and its parser's error messages), where `unsafe-libyaml`
//! keeps libyaml's C API and unsafe pointers everywhere and `yaml-rust2`
//! emits another layout: the safe port matches Tarantool's output with no C
//! build and no unsafe code here.
//!
//! Differences from Tarantool (whose libyaml fork changed three things):
//!
//! - A string that is not valid UTF-8 is encoded as `!!binary` base64 (as
//!   Tarantool 2.x did; master writes it double-quoted with `\xNN`
//!   escapes); `!!binary` decodes to a string (master: a `varbinary`,
//!   which luafiber does not have).
//! - The double-quoted escapes of U+0080..U+00FF read `\xNN` (the fork:
//!   `\u00NN`), and a `"\xNN"` escape above 0x7F decodes to the UTF-8 of
//!   U+00NN (the fork: the single byte).
//! - Printable characters are libyaml's set (the fork asks ICU's
//!   `u_isprint`): a few unassigned or format code points print raw here.
//! - Errors of the value walk (`unsupported Lua type`, `invalid
//!   __serialize value`) are strings, as are the usage errors.

mod decode;

use std::ffi::c_int;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use libyaml_safer::{
    Break, Emitter, Encoding, Event, EventData, MappingStyle, ScalarStyle, SequenceStyle,
    TagDirective,
};
use mlua::ffi;

use crate::modules::ext;
use crate::raw::{lua_fn, Raise, Reg, Stack};

const CHUNK: &str = include_str!("yaml.lua");

/// The tag of base64 binary data.
const BINARY_TAG: &str = "tag:yaml.org,2002:binary";

/// The functions `yaml.lua` builds on.
const INTERNAL: &[Reg] = &[(c"emit", yaml_emit), (c"decode", decode::yaml_decode)];

lua_fn! {
    /// The `yaml` module's loader (`package.preload.yaml`); the chunk
    /// requires `msgpack` (for `NULL` and the metatables).
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        s.load(CHUNK, c"@builtin/yaml.lua").map_err(|()| Raise::Top)?;
        let internal = s.new_table(0, INTERNAL.len() as c_int);
        s.set_funcs(internal, INTERNAL);
        // classify's upvalue: the C type id of ctype objects (LuaJIT's
        // `CTID_CTYPEID`), learnt from one.
        let ctypeid = ctypeid(s);
        s.push_int(ctypeid);
        s.push_closure(yaml_classify, 1);
        s.set_field(internal, c"classify");
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}

/// The C type id of ctype objects (LuaJIT's `CTID_CTYPEID`), learnt from
/// `ffi.typeof('int')`; `u16::MAX` when there is none (Lua 5.4).
fn ctypeid(s: &mut Stack) -> i64 {
    #[cfg(feature = "luajit")]
    {
        let top = s.top();
        let mut id = None;
        if s.load("return require('ffi').typeof('int')", c"=yaml")
            .is_ok()
            && s.pcall(0, 1).is_ok()
        {
            id = crate::luajit::cdata::ctype_id_at(s, -1);
        }
        s.settop(top);
        if let Some(id) = id {
            return i64::from(id);
        }
    }
    let _ = s;
    i64::from(u16::MAX)
}

/// 2^63 and 2^64 as floats.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_64: f64 = 2.0 * TWO_63;

/// Pushes the class of a Lua number as `luaL_tofield` sees it: `int` with
/// its text for an integral value in the 64-bit range, else `double`.
fn push_number_class(s: &mut Stack, n: f64) -> c_int {
    if n.is_finite() && n.fract() != 0.0 {
        s.push_str("double");
        s.push_number(n);
    } else if (0.0..TWO_64).contains(&n) {
        s.push_str("int");
        s.push_str(&(n as u64).to_string());
    } else if (-TWO_63..TWO_63).contains(&n) {
        s.push_str("int");
        s.push_str(&(n as i64).to_string());
    } else {
        s.push_str("double");
        s.push_number(n);
    }
    2
}

/// Whether a string would read back as a null, a boolean or a number
/// (lyaml's `yaml_is_null`, `yaml_is_bool`, `yaml_is_number`), so that
/// it must be quoted.
fn needs_quotes(s: &mut Stack, idx: c_int, b: &[u8]) -> bool {
    if b.is_empty() {
        return false;
    }
    if matches!(b, b"~" | b"null" | b"true" | b"false" | b"yes" | b"no") {
        return true;
    }
    if s.to_number_coerced(idx).is_some() {
        return true;
    }
    strtod_full(b).is_some()
}

/// `strtod` of the whole of `b` (C locale), or `None` when some of it is
/// left (Tarantool's `fpconv_strtod` with the `endptr` check).
pub(super) fn strtod_full(b: &[u8]) -> Option<f64> {
    let c = std::ffi::CString::new(b).ok()?;
    let mut end = std::ptr::null_mut();
    // SAFETY: `c` is NUL-terminated; `end` receives a pointer into it.
    let v = unsafe { libc::strtod(c.as_ptr(), &mut end) };
    let used = (end as usize).wrapping_sub(c.as_ptr() as usize);
    (used == b.len()).then_some(v)
}

lua_fn! {
    /// `internal.classify(v)`: what `luaL_tofield` makes of a value other
    /// than a table: `nil`; `bool, b`; `int, text`; `double, n`; `str,
    /// quote` (whether it reads back as another type); `ext, text` (a
    /// decimal or uuid); `table`; `udata`, `cdata` (may have a
    /// `__serialize`); `unknown`.
    fn yaml_classify(s: &mut Stack) {
        let t = s.type_of(1);
        match t {
            ffi::LUA_TNIL | ffi::LUA_TNONE => s.push_str("nil"),
            ffi::LUA_TBOOLEAN => {
                s.push_str("bool");
                s.push_bool(s.to_bool(1));
                return Ok(2);
            }
            ffi::LUA_TNUMBER => {
                if cfg!(not(feature = "luajit")) && s.is_integer(1) {
                    s.push_str("int");
                    s.push_str(&s.to_integer(1).unwrap_or_default().to_string());
                    return Ok(2);
                }
                return Ok(push_number_class(s, s.to_number(1).unwrap_or_default()));
            }
            ffi::LUA_TSTRING => {
                let b = s.to_str(1).unwrap_or_default().to_vec();
                let q = needs_quotes(s, 1, &b);
                s.push_str("str");
                s.push_bool(q);
                return Ok(2);
            }
            ffi::LUA_TTABLE => s.push_str("table"),
            ffi::LUA_TLIGHTUSERDATA if s.to_userdata(1).is_null() => s.push_str("nil"),
            ffi::LUA_TUSERDATA | crate::luajit::obj::LUA_TCDATA => {
                if let Some(e) = ext::read(s, 1) {
                    s.push_str("ext");
                    s.push_bytes(&e.text());
                    return Ok(2);
                }
                #[cfg(feature = "luajit")]
                if t == crate::luajit::obj::LUA_TCDATA {
                    return Ok(classify_cdata(s));
                }
                s.push_str(if t == ffi::LUA_TUSERDATA { "udata" } else { "unknown" });
            }
            _ => s.push_str("unknown"),
        }
        Ok(1)
    }
}

/// [`yaml_classify`] of the cdata at 1.
#[cfg(feature = "luajit")]
fn classify_cdata(s: &mut Stack) -> c_int {
    use crate::luajit::cdata::{self, Scalar};
    let ctypes = crate::luajit::layout().ctypes;
    match ctypes.and_then(|ct| ct.read_at(s, 1)) {
        Some(Scalar::Nil) => s.push_str("nil"),
        Some(Scalar::Bool(b)) => {
            s.push_str("bool");
            s.push_bool(b);
            return 2;
        }
        Some(Scalar::Int(i)) => {
            s.push_str("int");
            s.push_str(&i.to_string());
            return 2;
        }
        Some(Scalar::Uint(u)) => {
            s.push_str("int");
            s.push_str(&u.to_string());
            return 2;
        }
        Some(Scalar::F32(f)) => {
            s.push_str("double");
            s.push_number(f64::from(f));
            return 2;
        }
        Some(Scalar::F64(f)) => {
            s.push_str("double");
            s.push_number(f);
            return 2;
        }
        // Cdata of C type ids above `CTID_CTYPEID` (the upvalue) may have
        // a `__serialize` (gh-1226).
        None if cdata::ctype_id_at(s, 1).map(i64::from) > s.to_integer(Stack::upvalue(1)) => {
            s.push_str("cdata")
        }
        None => s.push_str("unknown"),
    }
    1
}

/// The event kinds of the list `yaml.lua` builds (4 slots an event).
const EV_SCALAR: i64 = 1;
const EV_SEQ: i64 = 2;
const EV_SEQ_END: i64 = 3;
const EV_MAP: i64 = 4;
const EV_MAP_END: i64 = 5;
const EV_ALIAS: i64 = 6;

/// The string at `idx`, or `None` (false, nil).
fn opt_string(s: &Stack, idx: c_int) -> Option<String> {
    if s.type_of(idx) != ffi::LUA_TSTRING {
        return None;
    }
    s.to_str(idx)
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

/// Reads event `i` (0-based) of the list at 1: slots `4i+1..=4i+4`.
fn read_event(s: &mut Stack, i: i64) -> Option<Event> {
    let base = (i * 4) as c_int;
    for k in 1..=4 {
        s.rawgeti(1, base + k);
    }
    let kind = s.to_integer(-4).unwrap_or(0);
    let anchor = opt_string(s, -3);
    let flow = s.to_bool(-2);
    let ev = match kind {
        EV_SCALAR => {
            let style = match s.to_integer(-2).unwrap_or(0) {
                1 => ScalarStyle::Plain,
                2 => ScalarStyle::SingleQuoted,
                4 => ScalarStyle::Literal,
                _ => ScalarStyle::Any,
            };
            let b = s.to_str(-3).unwrap_or_default();
            match std::str::from_utf8(b) {
                Ok(text) => Event::scalar(None, None, text, true, true, style),
                Err(_) => {
                    let text = STANDARD.encode(b);
                    Event::scalar(
                        None,
                        Some(BINARY_TAG),
                        &text,
                        false,
                        false,
                        ScalarStyle::Any,
                    )
                }
            }
        }
        EV_SEQ => {
            let style = if flow {
                SequenceStyle::Flow
            } else {
                SequenceStyle::Block
            };
            Event::sequence_start(anchor.as_deref(), None, true, style)
        }
        EV_SEQ_END => Event::sequence_end(),
        EV_MAP => {
            let style = if flow {
                MappingStyle::Flow
            } else {
                MappingStyle::Block
            };
            Event::mapping_start(anchor.as_deref(), None, true, style)
        }
        EV_MAP_END => Event::mapping_end(),
        EV_ALIAS => Event::alias(anchor.as_deref().unwrap_or_default()),
        _ => {
            s.pop(4);
            return None;
        }
    };
    s.pop(4);
    Some(ev)
}

/// A `%TAG handle prefix` directive. The crate's `TagDirective` has no
/// constructor (it is `non_exhaustive`), so one is parsed from a tiny
/// document and its public fields set.
fn tag_directive(handle: String, prefix: String) -> Option<TagDirective> {
    let mut input: &[u8] = b"%TAG !t! p\n--- 1\n";
    let mut p = libyaml_safer::Parser::new();
    p.set_input_string(&mut input);
    for _ in 0..2 {
        if let EventData::DocumentStart { tag_directives, .. } = p.parse().ok()?.data {
            let mut t = tag_directives.into_iter().next()?;
            t.handle = handle;
            t.prefix = prefix;
            return Some(t);
        }
    }
    None
}

lua_fn! {
    /// `internal.emit(events, n, handle, prefix)`: the YAML text of one
    /// document of the `n` events, or `nil, problem` when libyaml refuses.
    fn yaml_emit(s: &mut Stack) {
        let n = s.to_integer(2).unwrap_or(0);
        let tags = match (opt_string(s, 3), opt_string(s, 4)) {
            (Some(handle), Some(prefix)) => tag_directive(handle, prefix).into_iter().collect(),
            _ => Vec::new(),
        };
        let mut out = Vec::new();
        let r = {
            let mut e = Emitter::new();
            e.set_output_string(&mut out);
            e.set_unicode(true);
            e.set_indent(2);
            e.set_width(2);
            e.set_break(Break::Ln);
            let mut go = || -> Result<(), libyaml_safer::Error> {
                e.emit(Event::stream_start(Encoding::Utf8))?;
                e.emit(Event::document_start(None, &tags, false))?;
                for i in 0..n {
                    if let Some(ev) = read_event(s, i) {
                        e.emit(ev)?;
                    }
                }
                e.emit(Event::document_end(false))?;
                e.emit(Event::stream_end())?;
                e.flush()
            };
            go()
        };
        match r {
            Ok(()) => {
                s.push_bytes(&out);
                Ok(1)
            }
            Err(err) => {
                s.push_nil();
                s.push_str(err.problem());
                Ok(2)
            }
        }
    }
}
