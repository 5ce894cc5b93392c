//! A [`Uri`] as a Lua table: its parts as strings (absent ones nil),
//! `ipv4`, `ipv6` or `unix` (the host, or the socket path, by the host's
//! kind) as master's `uri.parse` gives them, and `params` as an array of
//! `{name, {values...}}` in the URI's order (absent when there are none),
//! which `uri.lua` turns into master's `name -> {values...}` table once
//! the table forms' parameters are merged (a table built in master's
//! order, so `pairs` goes over it as over master's).

use std::ffi::c_int;

use luafiber_runtime::uri::{HostHint, Uri};

use crate::raw::{LResult, Stack};

/// Pushes `uri` as a table; returns its index.
pub(crate) fn push(s: &mut Stack, uri: &Uri) -> LResult<c_int> {
    s.ensure(6)?;
    let t = s.new_table(0, 10);
    let parts = [
        (c"scheme", &uri.scheme),
        (c"login", &uri.login),
        (c"password", &uri.password),
        (c"host", &uri.host),
        (c"service", &uri.service),
        (c"path", &uri.path),
        (c"query", &uri.query),
        (c"fragment", &uri.fragment),
    ];
    for (name, part) in parts {
        if let Some(v) = part {
            s.push_str(v);
            s.set_field(t, name);
        }
    }
    if !uri.params.is_empty() {
        let params = s.new_table(uri.params.len() as c_int, 0);
        for (n, p) in uri.params.iter().enumerate() {
            let param = s.new_table(2, 0);
            s.push_str(&p.name);
            s.rawseti(param, 1);
            let values = s.new_table(p.values.len() as c_int, 0);
            for (i, v) in p.values.iter().enumerate() {
                s.push_str(v);
                s.rawseti(values, i as i64 + 1);
            }
            s.rawseti(param, 2);
            s.rawseti(params, n as i64 + 1);
        }
        s.set_field(t, c"params");
    }
    let hinted = match uri.host_hint {
        HostHint::Ipv4 => Some((c"ipv4", &uri.host)),
        HostHint::Ipv6 => Some((c"ipv6", &uri.host)),
        HostHint::Unix => Some((c"unix", &uri.service)),
        HostHint::None => None,
    };
    if let Some((name, Some(v))) = hinted {
        s.push_str(v);
        s.set_field(t, name);
    }
    Ok(t)
}
