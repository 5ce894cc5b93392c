//! Percent-encoding and decoding (master's `uri_escape` and
//! `uri_unescape` in `src/lib/uri/uri.c`).

/// Which bytes [`escape`] leaves as they are: `table[b]` is true for an
/// unreserved byte `b` (Tarantool's `uri.unreserved(...)`, an
/// `unsigned char[256]`).
pub type Unreserved = [bool; 256];

/// RFC 3986's unreserved bytes: letters, digits, `-`, `.`, `_`, `~`
/// (Tarantool's `uri.RFC3986`, the default of `uri.escape`).
pub const RFC3986: Unreserved = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
        c += 1;
    }
    t
};

/// Percent-encodes `src` into `out`: each byte not in `unreserved` becomes
/// `%XX` (upper-case hex), and a space becomes `+` when `plus` is set.
///
/// ```
/// use luafiber_runtime::uri;
/// let mut out = Vec::new();
/// uri::escape(b"a b/c", &uri::RFC3986, true, &mut out);
/// assert_eq!(out, b"a+b%2Fc");
/// ```
pub fn escape(src: &[u8], unreserved: &Unreserved, plus: bool, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.reserve(src.len());
    for &c in src {
        if c == b' ' && plus {
            out.push(b'+');
        } else if unreserved[usize::from(c)] {
            out.push(c);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]]);
        }
    }
}

/// Decodes `src` into `out`: `%XX` (either case) becomes its byte, and `+`
/// a space when `plus` is set. A `%` not followed by two hex digits stays
/// as it is, as in master.
///
/// ```
/// use luafiber_runtime::uri;
/// let mut out = Vec::new();
/// uri::unescape(b"a+b%2fc%", true, &mut out);
/// assert_eq!(out, b"a b/c%");
/// ```
pub fn unescape(src: &[u8], plus: bool, out: &mut Vec<u8>) {
    fn hex(c: u8) -> Option<u8> {
        (c as char).to_digit(16).map(|d| d as u8)
    }
    out.reserve(src.len());
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        let pair = (c == b'%' && i + 2 < src.len())
            .then(|| Some((hex(src[i + 1])?, hex(src[i + 2])?)))
            .flatten();
        if let Some((hi, lo)) = pair {
            out.push(hi << 4 | lo);
            i += 3;
            continue;
        }
        out.push(if c == b'+' && plus { b' ' } else { c });
        i += 1;
    }
}
