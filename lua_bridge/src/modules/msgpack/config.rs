//! `msgpack.cfg`: the options encoding and decoding read, as Tarantool's
//! `luaL_serializer` has them.

use std::ffi::{c_int, CStr};

use mlua::ffi;

use crate::raw::{lua_fn, Raise, Stack};

/// `msgpack.cfg`: the options that encoding and decoding read.
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

/// One option of [`Config`]: its name and where it lives.
pub(super) enum Opt {
    Bool(fn(&mut Config) -> &mut bool),
    Num(fn(&mut Config) -> &mut u32),
}

pub(super) const OPTIONS: &[(&CStr, Opt)] = &[
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

/// Sets every option's value as a field of table `t`.
pub(super) fn write_cfg_fields(s: &mut Stack, t: c_int, cfg: &Config) {
    let mut cfg = *cfg;
    for (name, opt) in OPTIONS {
        match opt {
            Opt::Bool(f) => s.push_bool(*f(&mut cfg)),
            Opt::Num(f) => s.push_int(i64::from(*f(&mut cfg))),
        }
        s.set_field(t, name);
    }
}

lua_fn! {
    /// `msgpack.cfg{option = value, ...}`: changes the options (unknown
    /// names are ignored, as in Tarantool; a known one with a value of the
    /// wrong type raises).
    pub(super) fn mp_cfg(s: &mut Stack) {
        if s.type_of(2) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("Usage: msgpack.cfg({option = value, ...})"));
        }
        let mut cfg = super::state(s).cfg;
        for (name, opt) in OPTIONS {
            let t = s.rawget_field(2, name);
            if t != ffi::LUA_TNIL {
                let bad = || Raise::illegal(format!("msgpack.cfg: bad value for {}", name.to_string_lossy()));
                match opt {
                    Opt::Bool(f) if t == ffi::LUA_TBOOLEAN => *f(&mut cfg) = s.to_bool(-1),
                    Opt::Num(f) => match s.to_number(-1) {
                        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) => *f(&mut cfg) = n as u32,
                        _ => return Err(bad()),
                    },
                    _ => return Err(bad()),
                }
            }
            s.pop(1);
        }
        super::set_config(s, cfg);
        if s.type_of(1) == ffi::LUA_TTABLE {
            s.settop(1);
            write_cfg_fields(s, 1, &cfg);
        }
        Ok(0)
    }
}
