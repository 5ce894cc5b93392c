//! Tarantool's error codes: the ones this layer and the server answer with
//! as constants, and the whole table ([`ERRCODES`]: name, number, message
//! format) for `box.error`'s fields and for naming a peer's code.

pub use crate::errcode_table::{Row, ERRCODES};

/// `ER_UNKNOWN`: no code.
pub const UNKNOWN: u32 = 0;
/// `ER_ILLEGAL_PARAMS`.
pub const ILLEGAL_PARAMS: u32 = 1;
/// `ER_MEMORY_ISSUE`.
pub const MEMORY_ISSUE: u32 = 2;
/// `ER_UNSUPPORTED`: "%s does not support %s".
pub const UNSUPPORTED: u32 = 5;
/// `ER_INVALID_MSGPACK`: "Invalid MsgPack - %s".
pub const INVALID_MSGPACK: u32 = 20;
/// `ER_PROC_LUA`: a Lua error in CALL/EVAL.
pub const PROC_LUA: u32 = 32;
/// `ER_NO_SUCH_PROC`: "Procedure '%s' is not defined".
pub const NO_SUCH_PROC: u32 = 33;
/// `ER_NO_SUCH_SPACE`: "Space '%s' does not exist".
pub const NO_SUCH_SPACE: u32 = 36;
/// `ER_ACCESS_DENIED`: "%s access to %s '%s' is denied for user '%s'".
pub const ACCESS_DENIED: u32 = 42;
/// `ER_NO_SUCH_USER`: "User '%s' is not found".
pub const NO_SUCH_USER: u32 = 45;
/// `ER_CREDS_MISMATCH` (2.6: `ER_PASSWORD_MISMATCH`): "User not found or
/// supplied credentials are invalid".
pub const CREDS_MISMATCH: u32 = 47;
/// `ER_UNKNOWN_REQUEST_TYPE`: "Unknown request type %u".
pub const UNKNOWN_REQUEST_TYPE: u32 = 48;
/// `ER_MISSING_REQUEST_FIELD`: "Missing mandatory field '%s' in request".
pub const MISSING_REQUEST_FIELD: u32 = 69;
/// `ER_UNKNOWN_AUTH_METHOD`: "Unknown authentication method '%s'".
pub const UNKNOWN_AUTH_METHOD: u32 = 249;

/// The row of `code`, or `None` for a code Tarantool does not have.
///
/// ```
/// use luafiber_iproto::errcode;
/// assert_eq!(errcode::find(47).map(|r| r.0), Some("CREDS_MISMATCH"));
/// ```
pub fn find(code: u32) -> Option<&'static Row> {
    ERRCODES
        .binary_search_by_key(&code, |r| r.1)
        .ok()
        .map(|i| &ERRCODES[i])
}

/// The code named `name` (without `ER_`, as `box.error.NAME`), or `None`.
/// 2.6's `PASSWORD_MISMATCH` names 47 too.
///
/// ```
/// use luafiber_iproto::errcode;
/// assert_eq!(errcode::by_name("NO_SUCH_PROC"), Some(33));
/// ```
pub fn by_name(name: &str) -> Option<u32> {
    if name == "PASSWORD_MISMATCH" {
        return Some(CREDS_MISMATCH);
    }
    ERRCODES.iter().find(|r| r.0 == name).map(|r| r.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_agrees_with_the_constants() {
        assert!(ERRCODES.windows(2).all(|w| w[0].1 < w[1].1));
        for (code, name) in [
            (PROC_LUA, "PROC_LUA"),
            (NO_SUCH_PROC, "NO_SUCH_PROC"),
            (NO_SUCH_SPACE, "NO_SUCH_SPACE"),
            (ACCESS_DENIED, "ACCESS_DENIED"),
            (NO_SUCH_USER, "NO_SUCH_USER"),
            (CREDS_MISMATCH, "CREDS_MISMATCH"),
            (UNKNOWN_REQUEST_TYPE, "UNKNOWN_REQUEST_TYPE"),
            (MISSING_REQUEST_FIELD, "MISSING_REQUEST_FIELD"),
            (INVALID_MSGPACK, "INVALID_MSGPACK"),
            (UNKNOWN_AUTH_METHOD, "UNKNOWN_AUTH_METHOD"),
            (UNSUPPORTED, "UNSUPPORTED"),
        ] {
            assert_eq!(find(code).map(|r| r.0), Some(name), "{code}");
        }
    }
}
