//! URIs as Tarantool reads them (master's `src/lib/uri/`): what
//! `box.cfg{listen = ...}`, `net.box.connect(...)` and the Lua `uri` module
//! take, with no Lua.
//!
//! Tarantool's URIs are RFC 3986 loosened for addresses:
//!
//! | text | fields |
//! |---|---|
//! | `3301` | service `3301` (a bare port) |
//! | `localhost:3301` | host, service |
//! | `user:secret@10.0.0.1:3301` | login, password, host (IPv4), service |
//! | `[::1]:3301` | host `::1` (IPv6), service |
//! | `/tmp/x.sock`, `unix/:/tmp/x.sock`, `unix/:./x.sock` | host `unix/`, service the socket path ([`HostHint::Unix`]) |
//! | `unix/:/tmp/x.sock:/path`, `/tmp/x.sock:/path` | the same, and path `/path` |
//! | `http://host/p?a=1&a=2&b#top` | scheme, host, path, query, [`params`](Uri::params), fragment |
//!
//! The service is a port or a service name (`host:http`); a query's
//! `name=value` pairs (split at `&`) become [`Param`]s, in order, each
//! with all its values. Strings are kept as written (no percent-decoding;
//! [`unescape`] does that).
//!
//! ```
//! use luafiber_runtime::uri::{self, HostHint};
//!
//! let u = uri::parse(b"admin:pw@[::1]:3301?transport=plain").unwrap();
//! assert_eq!(u.login.as_deref(), Some("admin"));
//! assert_eq!(u.host.as_deref(), Some("::1"));
//! assert_eq!(u.host_hint, HostHint::Ipv6);
//! assert_eq!(u.service.as_deref(), Some("3301"));
//! assert_eq!(u.param("transport", 0), Some("plain"));
//! assert_eq!(u.format(false), "admin@[::1]:3301?transport=plain");
//!
//! let unix = uri::parse(b"/tmp/tnt.sock").unwrap();
//! assert_eq!(unix.unix_path(), Some("/tmp/tnt.sock"));
//!
//! let all = uri::parse_many(b"3301, /tmp/tnt.sock").unwrap();
//! assert_eq!(all.len(), 2);
//! assert!(uri::parse(b"host:port:extra").is_err());
//! ```
//!
//! # Differences from Tarantool
//!
//! Master's parser is one Ragel machine whose overlapping alternatives all
//! run their actions; this one tries them in turn (see `grammar.rs`) and
//! gives the results of master's tests (`test/unit/uri_parser.c`,
//! `uri.c`, `app-tap/uri.test.lua`). Texts that master parses only through
//! that overlap come out cleaner here: `scheme:/path` is host `scheme`
//! and path `/path` (master also sets scheme), `name://` is scheme `name`
//! alone.

mod escape;
mod grammar;
#[cfg(test)]
mod tests;

use std::fmt;

pub use escape::{escape, unescape, Unreserved, RFC3986};

/// The host of a Unix socket URI (master's `URI_HOST_UNIX`).
pub const UNIX_HOST: &str = "unix/";

/// What the host of a [`Uri`] is (master's `host_hint`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostHint {
    /// A name (or no host).
    #[default]
    None,
    /// An IPv4 address (four groups of 1 to 3 digits; not range-checked).
    Ipv4,
    /// An IPv6 address, written in brackets (the brackets are not part of
    /// the host).
    Ipv6,
    /// A Unix socket: the host is [`UNIX_HOST`], the service the path.
    Unix,
}

/// One query parameter: a name and its values in order (none for `?name`;
/// one empty value for `?name=`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Param {
    /// The name, as written.
    pub name: String,
    /// The values, as written.
    pub values: Vec<String>,
}

/// A parsed URI (master's `struct uri`). Each part is `None` when absent;
/// `password` and `query` and `fragment` may be `Some("")` (written with
/// nothing after `:`, `?`, `#`); `service` and `path` are never empty.
#[derive(Clone, Debug, Default)]
pub struct Uri {
    /// The scheme before `://`.
    pub scheme: Option<String>,
    /// The login before `@` (and before `:password`).
    pub login: Option<String>,
    /// The password after `login:`.
    pub password: Option<String>,
    /// The host: a name, an IPv4 or IPv6 address, or [`UNIX_HOST`].
    pub host: Option<String>,
    /// The port or service name, or a Unix socket's path.
    pub service: Option<String>,
    /// The path after the host and service (or after `socket:`).
    pub path: Option<String>,
    /// The query after `?`.
    pub query: Option<String>,
    /// The fragment after `#`.
    pub fragment: Option<String>,
    /// What the host is.
    pub host_hint: HostHint,
    /// The query's parameters, in the order of their first appearance.
    pub params: Vec<Param>,
}

/// A text that is not a URI. Its message is Tarantool's: "Incorrect URI:
/// expected host:service or /unix.socket".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError;

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Incorrect URI: expected host:service or /unix.socket")
    }
}

impl std::error::Error for ParseError {}

/// Parses one URI (master's `uri_create`).
///
/// # Errors
///
/// [`ParseError`] for an empty text, a text the grammar refuses (a byte
/// outside RFC 3986's sets, a bad escape, `host:1:2`, ...), a host over
/// 1024 bytes or a service (a socket path) over 255.
pub fn parse(s: &[u8]) -> Result<Uri, ParseError> {
    grammar::parse(s).ok_or(ParseError)
}

/// Parses URIs separated by commas, each comma maybe followed by spaces
/// (master's `uri_set_create`): `"3301, /tmp/x.sock"`. An empty text
/// gives no URIs.
///
/// # Errors
///
/// [`ParseError`] if any part is not a URI (an empty part included:
/// `"a,,b"`).
pub fn parse_many(s: &[u8]) -> Result<Vec<Uri>, ParseError> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let mut uris = Vec::new();
    let mut rest = s;
    loop {
        let (part, next) = match rest.iter().position(|&c| c == b',') {
            Some(comma) => (&rest[..comma], Some(&rest[comma + 1..])),
            None => (rest, None),
        };
        uris.push(parse(part)?);
        match next {
            Some(next) => rest = &next[next.iter().take_while(|&&c| c == b' ').count()..],
            None => return Ok(uris),
        }
    }
}

impl Uri {
    /// The `idx`th value of parameter `name` (master's `uri_param`).
    pub fn param(&self, name: &str, idx: usize) -> Option<&str> {
        self.find_param(name)?.values.get(idx).map(String::as_str)
    }

    /// How many values parameter `name` has, 0 when it is absent (master's
    /// `uri_param_count`).
    pub fn param_count(&self, name: &str) -> usize {
        self.find_param(name).map_or(0, |p| p.values.len())
    }

    fn find_param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Appends `value` to parameter `name`, adding the parameter (last)
    /// when absent; `None` only adds it (master's `uri_add_param`).
    pub fn add_param(&mut self, name: &str, value: Option<&str>) {
        let i = match self.params.iter().position(|p| p.name == name) {
            Some(i) => i,
            None => {
                self.params.push(Param {
                    name: name.to_owned(),
                    values: Vec::new(),
                });
                self.params.len() - 1
            }
        };
        if let Some(v) = value {
            self.params[i].values.push(v.to_owned());
        }
    }

    /// Removes parameter `name` with its values (master's
    /// `uri_remove_param`).
    pub fn remove_param(&mut self, name: &str) {
        self.params.retain(|p| p.name != name);
    }

    /// Adds the parameters of a query text: `a=1&b&c=` (pairs split at
    /// `&`, empty pairs and pairs with an empty name skipped).
    fn add_query_params(&mut self, query: &str) {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = match pair.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (pair, None),
            };
            if !name.is_empty() {
                self.add_param(name, value);
            }
        }
    }

    /// The socket path of a Unix socket URI.
    pub fn unix_path(&self) -> Option<&str> {
        (self.host_hint == HostHint::Unix)
            .then_some(self.service.as_deref())
            .flatten()
    }

    /// Whether it names no address: no host, service or path (master's
    /// `uri_is_nil`).
    pub fn is_nil(&self) -> bool {
        self.host.is_none() && self.service.is_none() && self.path.is_none()
    }

    /// Whether both name the same address: host, service and path
    /// (master's `uri_addr_is_equal`).
    pub fn addr_eq(&self, other: &Uri) -> bool {
        self.host == other.host && self.service == other.service && self.path == other.path
    }

    /// The URI as text (master's `uri_format`): `scheme://`,
    /// `login[:password]@`, the host (an IPv6 one in brackets), `:service`
    /// (the service alone without a host), the path, `?params` and
    /// `#fragment`. The password and the parameters named `ssl_*` are
    /// written only when `write_password` is set. The query is written
    /// from [`params`](Uri::params), not from [`query`](Uri::query).
    pub fn format(&self, write_password: bool) -> String {
        let mut out = String::new();
        if let Some(scheme) = &self.scheme {
            out.push_str(scheme);
            out.push_str("://");
        }
        if let Some(login) = &self.login {
            out.push_str(login);
            if let (Some(password), true) = (&self.password, write_password) {
                out.push(':');
                out.push_str(password);
            }
            out.push('@');
        }
        if let Some(host) = &self.host {
            if self.host_hint == HostHint::Ipv6 {
                out.push('[');
                out.push_str(host);
                out.push(']');
            } else {
                out.push_str(host);
            }
        }
        if let Some(service) = &self.service {
            if self.host.is_some() {
                out.push(':');
            }
            out.push_str(service);
        }
        if let Some(path) = &self.path {
            out.push_str(path);
        }
        if !self.params.is_empty() {
            out.push('?');
            let shown = self
                .params
                .iter()
                .filter(|p| write_password || !p.name.starts_with("ssl_"));
            for (i, p) in shown.enumerate() {
                if i > 0 {
                    out.push('&');
                }
                if p.values.is_empty() {
                    out.push_str(&p.name);
                }
                for (j, v) in p.values.iter().enumerate() {
                    if j > 0 {
                        out.push('&');
                    }
                    out.push_str(&p.name);
                    out.push('=');
                    out.push_str(v);
                }
            }
        }
        if let Some(fragment) = &self.fragment {
            out.push('#');
            out.push_str(fragment);
        }
        out
    }
}

/// Master's `uri_is_equal`: the same scheme, credentials, address,
/// fragment and parameters (each with the same values in the same order;
/// the parameters themselves in any order). The query text is not
/// compared.
impl PartialEq for Uri {
    fn eq(&self, other: &Uri) -> bool {
        self.scheme == other.scheme
            && self.login == other.login
            && self.password == other.password
            && self.fragment == other.fragment
            && self.addr_eq(other)
            && self.params.len() == other.params.len()
            && self.params.iter().all(|p| {
                other
                    .find_param(&p.name)
                    .is_some_and(|q| q.values == p.values)
            })
    }
}

impl Eq for Uri {}

/// Writes [`Uri::format`] without the password.
impl fmt::Display for Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format(false))
    }
}
