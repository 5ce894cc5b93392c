//! YAML text to Lua values: lyaml's `l_load`, `load_node` and
//! `load_scalar` over the `libyaml-safer` parser's events.

use std::ffi::c_int;

use libyaml_safer::{Event, EventData, Parser, ScalarStyle};
use mlua::ffi;

use crate::capi::lua;
use crate::modules::digest::base64;
use crate::modules::serializer;
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// The tag prefix of YAML's core types.
const TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// Tarantool's `DBL_INT_MAX` (`src/lua/utils.c`): decoded integers beyond
/// it are 64-bit cdata on LuaJIT.
const DBL_INT_MAX: i64 = 100_000_000_000_000 - 1;

/// The usage error of `yaml.decode`.
const USAGE: &str = "Usage: yaml.decode(document, [{tag_only = boolean}])";

/// Stack slots of the arguments of `internal.decode`.
const ARG_TEXT: c_int = 1;
const ARG_OPTS: c_int = 2;
const ARG_SAVE_MT: c_int = 3;
const ARG_INVALID_NUMBERS: c_int = 4;
const ARG_ARRAY_MT: c_int = 5;
const ARG_MAP_MT: c_int = 6;
const ARG_NULL: c_int = 7;

struct Loader<'a> {
    parser: Parser<&'a mut &'a [u8]>,
    documents: i32,
    /// The anchors table's slot.
    anchors: c_int,
    save_mt: bool,
    invalid_numbers: bool,
}

/// What one node gave.
enum Node {
    /// A value was pushed.
    Value,
    /// The end of the enclosing collection or document.
    End,
}

impl Loader<'_> {
    /// The next event, or the error message Tarantool's
    /// `generate_error_message` writes.
    fn next(&mut self) -> LResult<Event> {
        self.parser.parse().map_err(|e| {
            let mut m = format!("{} at document: {}", e.problem(), self.documents);
            match e.problem_mark() {
                Some(p) if p.line != 0 || p.column != 0 => {
                    m += &format!(", line: {}, column: {}\n", p.line + 1, p.column + 1);
                }
                _ => m.push('\n'),
            }
            if let (Some(c), Some(cm)) = (e.context(), e.context_mark()) {
                m += &format!("{c} at line: {}, column: {}\n", cm.line + 1, cm.column + 1);
            }
            Raise::Message(m)
        })
    }

    fn node(&mut self, s: &mut Stack) -> LResult<Node> {
        let ev = self.next()?;
        match ev.data {
            EventData::DocumentEnd { .. } | EventData::MappingEnd | EventData::SequenceEnd => {
                Ok(Node::End)
            }
            EventData::MappingStart { anchor, .. } => {
                self.open_table(s, 0, 5, ARG_MAP_MT, anchor)?;
                loop {
                    if let Node::End = self.node(s)? {
                        break;
                    }
                    if let Node::End = self.node(s)? {
                        return Err(Raise::Message("unanticipated END event".into()));
                    }
                    s.rawset(-3)?;
                }
                Ok(Node::Value)
            }
            EventData::SequenceStart { anchor, .. } => {
                self.open_table(s, 5, 0, ARG_ARRAY_MT, anchor)?;
                let mut i = 1;
                while let Node::Value = self.node(s)? {
                    s.rawseti(-2, i);
                    i += 1;
                }
                Ok(Node::Value)
            }
            EventData::Scalar {
                anchor,
                tag,
                value,
                style,
                ..
            } => {
                if self.scalar(s, tag.as_deref(), &value, style)? {
                    self.anchor(s, anchor)?;
                }
                Ok(Node::Value)
            }
            EventData::Alias { anchor } => {
                s.push_str(&anchor);
                s.rawget(self.anchors);
                if s.is_none_or_nil(-1) {
                    return Err(Raise::Message(format!("invalid reference: {anchor}")));
                }
                Ok(Node::Value)
            }
            _ => Err(Raise::Message("invalid event".into())),
        }
    }

    /// Pushes a new collection's table (with the metatable at slot `mt`
    /// when `decode_save_metatables`), under its anchor.
    fn open_table(
        &mut self,
        s: &mut Stack,
        narr: c_int,
        nrec: c_int,
        mt: c_int,
        anchor: Option<String>,
    ) -> LResult<()> {
        self.level(s)?;
        s.new_table(narr, nrec);
        if self.save_mt {
            s.push_value(mt);
            s.set_metatable(-2);
        }
        self.anchor(s, anchor)
    }

    /// Room for one more collection level (Lua slots, machine stack).
    fn level(&mut self, s: &mut Stack) -> LResult<()> {
        if !serializer::stack_ok() {
            return Err(Raise::Message(
                "yaml.decode: nesting is too deep for the fiber's stack".into(),
            ));
        }
        s.ensure(8)
    }

    /// Records the value on top under `anchor` (lyaml's `handle_anchor`).
    fn anchor(&mut self, s: &mut Stack, anchor: Option<String>) -> LResult<()> {
        if let Some(a) = anchor {
            s.push_str(&a);
            s.push_value(-2);
            s.rawset(self.anchors)?;
        }
        Ok(())
    }

    fn check_finite(&self, v: f64) -> LResult<()> {
        if !self.invalid_numbers && !v.is_finite() {
            return Err(Raise::Message("number must not be NaN or Inf".into()));
        }
        Ok(())
    }

    /// Pushes a scalar's value (lyaml's `load_scalar`); true when it is
    /// the string itself, whose anchor lyaml records.
    fn scalar(
        &mut self,
        s: &mut Stack,
        tag: Option<&str>,
        value: &str,
        style: ScalarStyle,
    ) -> LResult<bool> {
        let b = value.as_bytes();
        if let Some(t) = tag.and_then(|t| t.strip_prefix(TAG_PREFIX)) {
            match t {
                "str" => {
                    s.push_bytes(b);
                    return Ok(false);
                }
                "int" => {
                    let c = std::ffi::CString::new(b).unwrap_or_default();
                    // SAFETY: `c` is NUL-terminated; no end pointer asked.
                    let v = unsafe { libc::strtol(c.as_ptr(), std::ptr::null_mut(), 10) };
                    push_lua_integer(s, v as i64);
                    return Ok(false);
                }
                "float" => {
                    let v = strtod_prefix(b);
                    self.check_finite(v)?;
                    s.push_number(v);
                    return Ok(false);
                }
                "bool" => {
                    s.push_bool(matches!(b, b"true" | b"yes"));
                    return Ok(false);
                }
                "binary" => {
                    s.push_bytes(&base64::decode(b));
                    return Ok(false);
                }
                _ => {}
            }
        }
        if style == ScalarStyle::Plain {
            match b {
                b"" => {
                    s.push_str("");
                    return Ok(false);
                }
                b"~" | b"null" => {
                    s.push_value(ARG_NULL);
                    return Ok(false);
                }
                b"true" | b"yes" => {
                    s.push_bool(true);
                    return Ok(false);
                }
                b"false" | b"no" => {
                    s.push_bool(false);
                    return Ok(false);
                }
                _ => {}
            }
            if let Some(pushed) = self.number(s, b)? {
                return Ok(pushed);
            }
        }
        s.push_bytes(b);
        Ok(true)
    }

    /// A plain scalar that reads whole as a number (`strtoll`, `strtoull`,
    /// `strtod`, as lyaml): pushes it and gives `Some(false)`.
    fn number(&mut self, s: &mut Stack, b: &[u8]) -> LResult<Option<bool>> {
        let Ok(c) = std::ffi::CString::new(b) else {
            return Ok(None);
        };
        let start = c.as_ptr();
        let mut end = std::ptr::null_mut();
        let whole = |end: *mut libc::c_char| (end as usize).wrapping_sub(start as usize) == b.len();
        // SAFETY: `c` is NUL-terminated; `end` receives a pointer into it.
        let i = unsafe { libc::strtoll(start, &mut end, 10) };
        if whole(end) && i != i64::MAX {
            lua::push_int64_within(s, i as u64, false, DBL_INT_MAX)?;
            return Ok(Some(false));
        }
        // SAFETY: as above.
        let u = unsafe { libc::strtoull(start, &mut end, 10) };
        if whole(end) {
            lua::push_int64_within(s, u, true, DBL_INT_MAX)?;
            return Ok(Some(false));
        }
        if let Some(d) = super::strtod_full(b) {
            self.check_finite(d)?;
            s.push_number(d);
            return Ok(Some(false));
        }
        Ok(None)
    }
}

/// `lua_pushinteger`: an integer on Lua 5.4, a number on LuaJIT.
fn push_lua_integer(s: &mut Stack, v: i64) {
    if cfg!(feature = "lua54") {
        s.push_int(v);
    } else {
        s.push_number(v as f64);
    }
}

/// `strtod` of the longest prefix of `b` that reads as a number (0 when
/// none).
fn strtod_prefix(b: &[u8]) -> f64 {
    let c = std::ffi::CString::new(b).unwrap_or_default();
    // SAFETY: `c` is NUL-terminated; no end pointer asked.
    unsafe { libc::strtod(c.as_ptr(), std::ptr::null_mut()) }
}

/// The first document's `%TAG` directive: pushes handle and prefix (2), or
/// nothing (`nil`, 1), or `nil, err`.
fn load_tag(s: &mut Stack, l: &mut Loader) -> LResult<c_int> {
    let ev = match l.next() {
        Ok(ev) => ev,
        Err(Raise::Message(m)) => {
            s.push_nil();
            s.push_str(&m);
            return Ok(2);
        }
        Err(e) => return Err(e),
    };
    if !matches!(ev.data, EventData::StreamStart { .. }) {
        s.push_nil();
        s.push_str("expected STREAM_START_EVENT");
        return Ok(2);
    }
    let ev = match l.next() {
        Ok(ev) => ev,
        Err(Raise::Message(m)) => {
            s.push_nil();
            s.push_str(&m);
            return Ok(2);
        }
        Err(e) => return Err(e),
    };
    let EventData::DocumentStart { tag_directives, .. } = ev.data else {
        s.push_nil();
        return Ok(1);
    };
    match tag_directives.as_slice() {
        [] => {
            s.push_nil();
            Ok(1)
        }
        [t] => {
            s.push_str(&t.handle);
            s.push_str(&t.prefix);
            Ok(2)
        }
        _ => {
            s.push_nil();
            s.push_str("can not decode multiple tags");
            Ok(2)
        }
    }
}

/// Every document of the text: pushes their values.
fn load(s: &mut Stack, l: &mut Loader) -> LResult<c_int> {
    let ev = l.next()?;
    if !matches!(ev.data, EventData::StreamStart { .. }) {
        return Err(Raise::Message("expected STREAM_START_EVENT".into()));
    }
    loop {
        let ev = l.next()?;
        if matches!(ev.data, EventData::StreamEnd) {
            return Ok(l.documents);
        }
        l.documents += 1;
        s.ensure(4)?;
        if let Node::End = l.node(s)? {
            return Err(Raise::Message("unexpected END event".into()));
        }
        let ev = l.next()?;
        if !matches!(ev.data, EventData::DocumentEnd { .. }) {
            return Err(Raise::Message("expected DOCUMENT_END_EVENT".into()));
        }
        s.new_table(0, 0);
        s.replace(l.anchors);
    }
}

lua_fn! {
    /// `internal.decode(text, opts, save_mt, invalid_numbers, array_mt,
    /// map_mt, NULL)`: `yaml.decode`'s work (lyaml's `l_load`).
    pub(super) fn yaml_decode(s: &mut Stack) {
        let t = s.type_of(ARG_TEXT);
        if t != ffi::LUA_TSTRING && t != ffi::LUA_TNUMBER {
            return Err(Raise::Message(USAGE.into()));
        }
        let tag_only = match s.type_of(ARG_OPTS) {
            ffi::LUA_TNONE | ffi::LUA_TNIL => false,
            ffi::LUA_TTABLE => {
                s.rawget_field(ARG_OPTS, c"tag_only");
                let b = s.type_of(-1) == ffi::LUA_TBOOLEAN && s.to_bool(-1);
                s.pop(1);
                b
            }
            _ => return Err(Raise::Message(USAGE.into())),
        };
        let text = s.coerce_str(ARG_TEXT).unwrap_or_default().to_vec();
        s.settop(ARG_NULL);
        s.new_table(0, 0);
        let anchors = s.top();
        let mut input: &[u8] = &text;
        let mut parser = Parser::new();
        parser.set_input_string(&mut input);
        let mut l = Loader {
            parser,
            documents: 0,
            anchors,
            save_mt: s.to_bool(ARG_SAVE_MT),
            invalid_numbers: s.to_bool(ARG_INVALID_NUMBERS),
        };
        if tag_only {
            load_tag(s, &mut l)
        } else {
            load(s, &mut l)
        }
    }
}
