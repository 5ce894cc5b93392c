//! The greeting a server sends first (`greeting_encode`/`greeting_decode`
//! of `src/box/xrow.c`): 128 bytes of ASCII in two lines of 64,
//! `Tarantool <version> (Binary) <instance uuid>` and the base64 of the
//! salt, each padded with spaces and ended by `\n`.
//!
//! Clients branch on the version: below 2.10.0 every client skips ID;
//! from 2.10.0 net.box (master), tarantool-python and asynctnt send it,
//! and asynctnt fails to connect unless it is answered
//! (`notes/iproto-netbox.md`, section 3).

use base64::Engine;

use crate::consts::{GREETING_SIZE, SALT_SIZE};
use crate::error::Error;

/// Length of a UUID's text.
const UUID_LEN: usize = 36;

/// Writes a binary-protocol greeting.
///
/// `version` is printed as is (`"2.6.0"`); `uuid` is the instance's UUID
/// text (36 bytes); `salt` the random bytes chap-sha1 scrambles with.
///
/// # Panics
///
/// Panics when the first line would not fit 63 bytes (a version longer
/// than 16 bytes) or `uuid` is not 36 bytes.
///
/// ```
/// use luafiber_iproto::{decode_greeting, encode_greeting};
/// let g = encode_greeting("2.6.0", "a5cd3b43-1c71-4d7b-9c63-1234567890ab", &[7; 32]);
/// assert!(g.starts_with(b"Tarantool 2.6.0 (Binary) a5cd3b43"));
/// let back = decode_greeting(&g).unwrap();
/// assert_eq!((back.version_id, back.salt()), (0x020600, &[7u8; 32][..]));
/// ```
pub fn encode_greeting(version: &str, uuid: &str, salt: &[u8; SALT_SIZE]) -> [u8; GREETING_SIZE] {
    assert_eq!(uuid.len(), UUID_LEN, "a UUID's text is 36 bytes");
    let mut g = [b' '; GREETING_SIZE];
    let line = format!("Tarantool {version} (Binary) {uuid}");
    assert!(line.len() < 64, "the greeting's first line fits 63 bytes");
    g[..line.len()].copy_from_slice(line.as_bytes());
    g[63] = b'\n';
    let salt64 = base64::engine::general_purpose::STANDARD.encode(salt);
    g[64..64 + salt64.len()].copy_from_slice(salt64.as_bytes());
    g[127] = b'\n';
    g
}

/// What a greeting says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Greeting {
    /// `major << 16 | minor << 8 | patch` (Tarantool's `version_id`).
    pub version_id: u32,
    /// Whether the protocol is `Binary` (else a console).
    pub is_binary: bool,
    /// The instance UUID's text (binary protocol from 1.6.7 on).
    pub uuid: Option<[u8; UUID_LEN]>,
    salt: [u8; SALT_SIZE],
    salt_len: usize,
}

impl Greeting {
    /// The salt (32 bytes from a Tarantool; empty for a console).
    pub fn salt(&self) -> &[u8] {
        &self.salt[..self.salt_len]
    }

    /// The version as `(major, minor, patch)`.
    pub fn version(&self) -> (u32, u32, u32) {
        (
            self.version_id >> 16,
            (self.version_id >> 8) & 0xff,
            self.version_id & 0xff,
        )
    }
}

/// `major << 16 | minor << 8 | patch`, as Tarantool compares versions.
pub const fn version_id(major: u32, minor: u32, patch: u32) -> u32 {
    (major << 16) | (minor << 8) | patch
}

/// Reads a greeting (the first 128 bytes a server sent).
///
/// # Errors
///
/// [`Error::InvalidGreeting`] when it is shorter than 128 bytes, does not
/// start with `Tarantool `, lacks a `\n` at 63 or 127, has no
/// `major.minor.patch` version, a bad UUID or a salt that is not base64.
pub fn decode_greeting(g: &[u8]) -> Result<Greeting, Error> {
    const BAD: Error = Error::InvalidGreeting;
    let g = g.get(..GREETING_SIZE).ok_or(BAD)?;
    if !g.starts_with(b"Tarantool ") || g[63] != b'\n' || g[127] != b'\n' {
        return Err(BAD);
    }
    let line = std::str::from_utf8(&g[10..63]).map_err(|_| BAD)?;
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    let version = words.next().ok_or(BAD)?;
    let mut nums = version
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|n| n.parse::<u32>().ok().filter(|&n| n < 256));
    let (Some(Some(major)), Some(Some(minor)), Some(Some(patch))) =
        (nums.next(), nums.next(), nums.next())
    else {
        return Err(BAD);
    };
    let version_id = version_id(major, minor, patch);
    let mut out = Greeting {
        version_id,
        is_binary: true,
        uuid: None,
        salt: [0; SALT_SIZE],
        salt_len: 0,
    };
    match words.next() {
        Some(p) if p.starts_with('(') => {
            out.is_binary = p == "(Binary)";
            if !out.is_binary {
                return Ok(out);
            }
            if version_id >= self::version_id(1, 6, 7) {
                let uuid = words.next().ok_or(BAD)?;
                let ok = uuid.len() == UUID_LEN
                    && uuid.bytes().enumerate().all(|(i, b)| {
                        if matches!(i, 8 | 13 | 18 | 23) {
                            b == b'-'
                        } else {
                            b.is_ascii_hexdigit()
                        }
                    });
                if !ok {
                    return Err(BAD);
                }
                let mut u = [0; UUID_LEN];
                u.copy_from_slice(uuid.as_bytes());
                out.uuid = Some(u);
            }
        }
        _ if version_id < self::version_id(1, 6, 7) => {}
        _ => return Err(BAD),
    }
    let salt64 = g[64..127].trim_ascii();
    let salt = base64::engine::general_purpose::STANDARD
        .decode(salt64)
        .map_err(|_| BAD)?;
    if salt.len() > SALT_SIZE {
        return Err(BAD);
    }
    out.salt[..salt.len()].copy_from_slice(&salt);
    out.salt_len = salt.len();
    Ok(out)
}
