//! The URI grammar of Tarantool master's `src/lib/uri/uri_parser.rl`
//! (RFC 3986 loosened: no scheme needed, a bare port, `login:password`,
//! Unix socket paths), as a hand-written parser over bytes.
//!
//! Master's grammar is one Ragel machine whose alternatives overlap (a host
//! name is also a scheme, a path is also a socket path); the DFA runs the
//! actions of every alternative still alive. Here the alternatives are
//! tried one after another, in the order that gives master's documented
//! results (its `test/unit/uri_parser.c` cases):
//!
//! 1. a bare port: digits only;
//! 2. `scheme://` (a letter, then letters, digits, `+`, `-`, `.`) when
//!    what follows parses, else the whole text without a scheme;
//! 3. `login[:password]@` when the text before the first `@` is one;
//! 4. `unix/:SOCKET[:PATH]`;
//! 5. `SOCKET:PATH` (a socket path starts with `/` or `./` and has no
//!    empty segment and no `:`);
//! 6. `host[:service][PATH]`, the host a name, an IPv4 address or an IPv6
//!    address in brackets, the service digits or letters;
//! 7. without a scheme: a bare socket path (`/tmp/x.sock`), or, with
//!    neither query nor fragment, any absolute path (`/`, `/a//b:c`), as
//!    a Unix socket;
//! 8. without login: an absolute or rootless path alone, or nothing.
//!
//! Then `?query` and `#fragment`. Texts master parses only through the
//! overlap of its alternatives may come out differently here (the module
//! docs list them).

use super::{HostHint, Uri};

/// The longest host master accepts is `NI_MAXHOST - 1` bytes.
const MAX_HOST: usize = 1024;
/// The longest service (port or socket path) master accepts is
/// `_POSIX_PATH_MAX - 1` bytes.
const MAX_SERVICE: usize = 255;

/// The byte classes of RFC 3986 the grammar uses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `unreserved | pct-encoded | sub-delims`: a host name, a login, a
    /// password.
    Name,
    /// `pchar` without `:` (Name and `@`): a socket path's segment.
    PcharNc,
    /// `pchar` (PcharNc, `:` and, as master has it, `|`): a path segment.
    Pchar,
    /// `pchar | "/" | "?"`: a query, a fragment.
    Query,
}

fn is_unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'~' | b'.')
}

fn is_sub_delim(c: u8) -> bool {
    matches!(
        c,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
    )
}

/// Whether `c` (not `%`) is in `class`.
fn in_class(c: u8, class: Class) -> bool {
    if is_unreserved(c) || is_sub_delim(c) {
        return true;
    }
    match class {
        Class::Name => false,
        Class::PcharNc => c == b'@',
        Class::Pchar => matches!(c, b'@' | b':' | b'|'),
        Class::Query => matches!(c, b'@' | b':' | b'|' | b'/' | b'?'),
    }
}

/// The length of the percent-escape at the start of `s` (which starts with
/// `%`): `%%`, `%X`, `%XX` or `%uXXXX` (X a hex digit), as master's
/// grammar takes them; 0 when there is none.
fn pct_len(s: &[u8]) -> usize {
    let hex = |i: usize| s.get(i).is_some_and(u8::is_ascii_hexdigit);
    match s.get(1) {
        Some(b'%') => 2,
        Some(b'u') if (2..6).all(hex) => 6,
        Some(_) if hex(1) => {
            if hex(2) {
                3
            } else {
                2
            }
        }
        _ => 0,
    }
}

/// The length of the longest run of `class` units (bytes or escapes) at
/// the start of `s`.
fn run(s: &[u8], class: Class) -> usize {
    let mut i = 0;
    while i < s.len() {
        let step = if s[i] == b'%' {
            pct_len(&s[i..])
        } else {
            usize::from(in_class(s[i], class))
        };
        if step == 0 {
            break;
        }
        i += step;
    }
    i
}

/// Whether all of `s` is `class` units.
fn all(s: &[u8], class: Class) -> bool {
    run(s, class) == s.len()
}

/// `path-abempty`: empty, or `/` then path bytes (`pchar` and `/`).
fn is_path_abempty(s: &[u8]) -> bool {
    s.is_empty() || (s[0] == b'/' && is_path_tail(&s[1..]))
}

/// `pchar` and `/` units only.
fn is_path_tail(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'/' {
            i += 1;
            continue;
        }
        let n = run(&s[i..], Class::Pchar);
        if n == 0 {
            return false;
        }
        i += n;
    }
    true
}

/// `path-absolute`: `/`, or `/` then a non-empty segment and path bytes.
fn is_path_absolute(s: &[u8]) -> bool {
    s.first() == Some(&b'/') && s.get(1) != Some(&b'/') && is_path_tail(&s[1..])
}

/// `path-rootless`: one `pchar` unit without `:`, then nothing or `/` and
/// path bytes.
fn is_path_rootless(s: &[u8]) -> bool {
    let first = match s.first() {
        Some(b'%') => pct_len(s),
        Some(&c) => usize::from(in_class(c, Class::PcharNc)),
        None => 0,
    };
    first > 0 && (first == s.len() || (s[first] == b'/' && is_path_tail(&s[first + 1..])))
}

/// The length of the socket path at the start of `s` (`/seg/seg` or
/// `./seg/seg`, segments non-empty and without `:`), 0 if none.
fn socket_path_len(s: &[u8]) -> usize {
    let mut i = usize::from(s.first() == Some(&b'.'));
    let start = i;
    while s.get(i) == Some(&b'/') {
        let n = run(&s[i + 1..], Class::PcharNc);
        if n == 0 {
            break;
        }
        i += 1 + n;
    }
    if i == start {
        0
    } else {
        i
    }
}

/// `digit{1,3} ("." digit{1,3}){3}`: master's IPv4 form (no range check).
fn is_ipv4(s: &[u8]) -> bool {
    let parts: Vec<&[u8]> = s.split(|&c| c == b'.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| (1..=3).contains(&p.len()) && p.iter().all(u8::is_ascii_digit))
}

/// Master's IPv6 form (inside the brackets): 2 to 9 groups of 0 to 4 hex
/// digits joined by `:`, or `::ffff:` and an IPv4 address.
fn is_ipv6(s: &[u8]) -> bool {
    if let Some(v4) = s.strip_prefix(b"::") {
        if v4.len() > 5 && v4[..4].eq_ignore_ascii_case(b"ffff") && v4[4] == b':' {
            return is_ipv4(&v4[5..]);
        }
    }
    let groups = s.split(|&c| c == b':');
    let mut n = 0;
    for g in groups {
        n += 1;
        if g.len() > 4 || !g.iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
    }
    (2..=9).contains(&n)
}

fn text(s: &[u8]) -> String {
    // Every byte the grammar accepts is ASCII.
    String::from_utf8_lossy(s).into_owned()
}

fn non_empty(s: &[u8]) -> Option<String> {
    (!s.is_empty()).then(|| text(s))
}

/// Parses `s` as one URI (master's `uri_raw_parse` + `uri_create`).
pub(super) fn parse(s: &[u8]) -> Option<Uri> {
    if s.is_empty() {
        return None;
    }
    if s.iter().all(u8::is_ascii_digit) {
        return Some(Uri {
            service: Some(text(s)).filter(|v| v.len() <= MAX_SERVICE),
            ..Uri::default()
        })
        .filter(|u| u.service.is_some());
    }
    let body_end = s
        .iter()
        .position(|&c| c == b'?' || c == b'#')
        .unwrap_or(s.len());
    let (body, mut tail) = s.split_at(body_end);
    let mut query = None;
    let mut fragment = None;
    if let Some(rest) = tail.strip_prefix(b"?") {
        let end = rest.iter().position(|&c| c == b'#').unwrap_or(rest.len());
        if !all(&rest[..end], Class::Query) {
            return None;
        }
        query = Some(text(&rest[..end]));
        tail = &rest[end..];
    }
    if let Some(rest) = tail.strip_prefix(b"#") {
        if !all(rest, Class::Query) {
            return None;
        }
        fragment = Some(text(rest));
    }
    let bare = query.is_none() && fragment.is_none();
    let mut uri = with_scheme(body, bare).or_else(|| hier_part(body, false, bare))?;
    if uri.host.as_ref().is_some_and(|h| h.len() > MAX_HOST)
        || uri.service.as_ref().is_some_and(|v| v.len() > MAX_SERVICE)
    {
        return None;
    }
    uri.query = query;
    uri.fragment = fragment;
    if let Some(q) = uri.query.clone() {
        uri.add_query_params(&q);
    }
    Some(uri)
}

/// `scheme "://" hier-part`.
fn with_scheme(body: &[u8], bare: bool) -> Option<Uri> {
    let sep = body.windows(3).position(|w| w == b"://")?;
    let scheme = &body[..sep];
    let ok = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
    if !ok {
        return None;
    }
    let mut uri = hier_part(&body[sep + 3..], true, bare)?;
    uri.scheme = Some(text(scheme));
    Some(uri)
}

/// What follows the scheme (or the whole text without one): steps 3 to 8
/// of the module doc. `bare` is true when no query or fragment follows.
fn hier_part(s: &[u8], has_scheme: bool, bare: bool) -> Option<Uri> {
    let mut uri = Uri::default();
    let mut rest = s;
    if let Some(at) = s.iter().position(|&c| c == b'@') {
        let info = &s[..at];
        let (login, password) = match info.iter().position(|&c| c == b':') {
            Some(colon) => (&info[..colon], Some(&info[colon + 1..])),
            None => (info, None),
        };
        if !login.is_empty()
            && all(login, Class::Name)
            && password.is_none_or(|p| all(p, Class::Name))
        {
            uri.login = Some(text(login));
            uri.password = password.map(text);
            rest = &s[at + 1..];
        }
    }
    let has_login = uri.login.is_some();
    // 4. unix/:SOCKET[:PATH]
    if let Some(r) = rest.strip_prefix(b"unix/:") {
        let n = socket_path_len(r);
        if n > 0 && (n == r.len() || (r[n] == b':' && is_path_abempty(&r[n + 1..]))) {
            let path = if n == r.len() { &[][..] } else { &r[n + 1..] };
            return Some(unix(uri, &r[..n], path));
        }
    }
    // 5. SOCKET:PATH
    let n = socket_path_len(rest);
    if n > 0 && rest.get(n) == Some(&b':') && is_path_abempty(&rest[n + 1..]) {
        return Some(unix(uri, &rest[..n], &rest[n + 1..]));
    }
    // 6. host[:service][PATH]
    if let Some(u) = authority(uri.clone(), rest) {
        return Some(u);
    }
    if !has_scheme {
        // 7. a bare socket path
        if (!has_login && n > 0 && n == rest.len()) || (bare && is_path_absolute(rest)) {
            return Some(unix(uri, rest, &[]));
        }
    }
    // 8. a path alone
    if has_login {
        return None;
    }
    if rest.is_empty() || is_path_absolute(rest) || is_path_rootless(rest) {
        uri.path = non_empty(rest);
        return Some(uri);
    }
    None
}

fn unix(mut uri: Uri, socket: &[u8], path: &[u8]) -> Uri {
    uri.host = Some(super::UNIX_HOST.to_owned());
    uri.service = Some(text(socket));
    uri.path = non_empty(path);
    uri.host_hint = HostHint::Unix;
    uri
}

/// `host [":" service] path-abempty`.
fn authority(mut uri: Uri, s: &[u8]) -> Option<Uri> {
    let (host_end, hint) = if s.first() == Some(&b'[') {
        let close = s.iter().position(|&c| c == b']')?;
        if !is_ipv6(&s[1..close]) {
            return None;
        }
        uri.host = Some(text(&s[1..close]));
        (close + 1, HostHint::Ipv6)
    } else {
        let n = run(s, Class::Name);
        if n == 0 {
            return None;
        }
        uri.host = Some(text(&s[..n]));
        let hint = if is_ipv4(&s[..n]) {
            HostHint::Ipv4
        } else {
            HostHint::None
        };
        (n, hint)
    };
    uri.host_hint = hint;
    let mut rest = &s[host_end..];
    if let Some(r) = rest.strip_prefix(b":") {
        let end = r.iter().position(|&c| c == b'/').unwrap_or(r.len());
        let service = &r[..end];
        if !(service.iter().all(u8::is_ascii_digit) || service.iter().all(u8::is_ascii_alphabetic))
        {
            return None;
        }
        uri.service = non_empty(service);
        rest = &r[end..];
    }
    if !is_path_abempty(rest) {
        return None;
    }
    uri.path = non_empty(rest);
    Some(uri)
}
