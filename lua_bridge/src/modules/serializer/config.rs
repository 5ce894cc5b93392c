//! A serializer's options, as Tarantool's `luaL_serializer` has them
//! (`src/lua/serializer.c`, `OPTIONS`): what `msgpack.cfg`, `json.cfg` and
//! the per-call options of `json.encode(v, opts)` set.

use std::ffi::{c_int, CStr};

use mlua::ffi;

use crate::raw::{LResult, Raise, Stack};

/// The options that encoding and decoding read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Config {
    pub encode_max_depth: u32,
    pub encode_deep_as_nil: bool,
    pub encode_invalid_numbers: bool,
    pub encode_invalid_as_nil: bool,
    pub encode_use_tostring: bool,
    pub encode_load_metatables: bool,
    pub encode_sparse_convert: bool,
    pub encode_sparse_ratio: u32,
    pub encode_sparse_safe: u32,
    pub encode_number_precision: u32,
    pub decode_invalid_numbers: bool,
    pub decode_save_metatables: bool,
    pub decode_max_depth: u32,
}

impl Default for Config {
    /// Tarantool's defaults.
    fn default() -> Self {
        Config {
            encode_max_depth: 128,
            encode_deep_as_nil: false,
            encode_invalid_numbers: true,
            encode_invalid_as_nil: false,
            encode_use_tostring: false,
            encode_load_metatables: true,
            encode_sparse_convert: true,
            encode_sparse_ratio: 2,
            encode_sparse_safe: 10,
            encode_number_precision: 14,
            decode_invalid_numbers: true,
            decode_save_metatables: true,
            decode_max_depth: 128,
        }
    }
}

/// One option of [`Config`]: where it lives.
pub(crate) enum Opt {
    Bool(fn(&mut Config) -> &mut bool),
    Num(fn(&mut Config) -> &mut u32),
}

/// Every option of [`Config`], by name.
pub(crate) const OPTIONS: &[(&CStr, Opt)] = &[
    (c"encode_max_depth", Opt::Num(|c| &mut c.encode_max_depth)),
    (
        c"encode_deep_as_nil",
        Opt::Bool(|c| &mut c.encode_deep_as_nil),
    ),
    (
        c"encode_invalid_numbers",
        Opt::Bool(|c| &mut c.encode_invalid_numbers),
    ),
    (
        c"encode_invalid_as_nil",
        Opt::Bool(|c| &mut c.encode_invalid_as_nil),
    ),
    (
        c"encode_use_tostring",
        Opt::Bool(|c| &mut c.encode_use_tostring),
    ),
    (
        c"encode_load_metatables",
        Opt::Bool(|c| &mut c.encode_load_metatables),
    ),
    (
        c"encode_sparse_convert",
        Opt::Bool(|c| &mut c.encode_sparse_convert),
    ),
    (
        c"encode_sparse_ratio",
        Opt::Num(|c| &mut c.encode_sparse_ratio),
    ),
    (
        c"encode_sparse_safe",
        Opt::Num(|c| &mut c.encode_sparse_safe),
    ),
    (
        c"encode_number_precision",
        Opt::Num(|c| &mut c.encode_number_precision),
    ),
    (
        c"decode_invalid_numbers",
        Opt::Bool(|c| &mut c.decode_invalid_numbers),
    ),
    (
        c"decode_save_metatables",
        Opt::Bool(|c| &mut c.decode_save_metatables),
    ),
    (c"decode_max_depth", Opt::Num(|c| &mut c.decode_max_depth)),
];

/// Sets every option's value as a field of the table at `t` (raw).
pub(crate) fn write_fields(s: &mut Stack, t: c_int, cfg: &Config) {
    let t = s.abs(t);
    let mut cfg = *cfg;
    for (name, opt) in OPTIONS {
        match opt {
            Opt::Bool(f) => s.push_bool(*f(&mut cfg)),
            Opt::Num(f) => s.push_int(i64::from(*f(&mut cfg))),
        }
        s.set_field(t, name);
    }
}

/// Reads the options set in the table at `t` (raw reads) into `cfg`;
/// unknown names are ignored, as in Tarantool. `who` names the caller in
/// errors (`msgpack.cfg`).
///
/// # Errors
///
/// `IllegalParams` "WHO: bad value for NAME" for a known option with a
/// value of the wrong type or range (Tarantool converts any value); `cfg`
/// is then left as it was.
pub(crate) fn parse(s: &mut Stack, t: c_int, cfg: &mut Config, who: &str) -> LResult<()> {
    let t = s.abs(t);
    let mut new = *cfg;
    for (name, opt) in OPTIONS {
        let ty = s.rawget_field(t, name);
        let ok = match opt {
            _ if ty == ffi::LUA_TNIL => true,
            Opt::Bool(f) if ty == ffi::LUA_TBOOLEAN => {
                *f(&mut new) = s.to_bool(-1);
                true
            }
            Opt::Bool(_) => false,
            Opt::Num(f) => match s.to_number(-1) {
                Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) => {
                    *f(&mut new) = n as u32;
                    true
                }
                _ => false,
            },
        };
        s.pop(1);
        if !ok {
            return Err(Raise::illegal(format!(
                "{who}: bad value for {}",
                name.to_string_lossy()
            )));
        }
    }
    *cfg = new;
    Ok(())
}
