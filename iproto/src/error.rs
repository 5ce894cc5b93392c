//! The one error type of decoding: what was wrong, as the Tarantool error
//! a server answers with (code and message).

use std::fmt;

use crate::errcode;

/// What made a packet, a body or a greeting undecodable. Every decoder
/// returns it instead of panicking, whatever the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Bad MessagePack or a value of the wrong type; the text names the
    /// part, as Tarantool's `ER_INVALID_MSGPACK` does ("packet length",
    /// "packet header", "packet body", "packet end", ...).
    InvalidMsgpack(&'static str),
    /// A size prefix above the limit given to [`crate::frame`](fn@crate::frame).
    TooBig(u64),
    /// A request without a field it needs (the key, see [`crate::key`]).
    MissingField(u8),
    /// A greeting that is not Tarantool's binary protocol greeting.
    InvalidGreeting,
}

impl Error {
    /// The Tarantool error code a server answers this with
    /// (`ER_INVALID_MSGPACK`, `ER_MISSING_REQUEST_FIELD`); 0 for a bad
    /// greeting, which only a client sees.
    pub fn code(&self) -> u32 {
        match self {
            Error::InvalidMsgpack(_) | Error::TooBig(_) => errcode::INVALID_MSGPACK,
            Error::MissingField(_) => errcode::MISSING_REQUEST_FIELD,
            Error::InvalidGreeting => errcode::UNKNOWN,
        }
    }
}

/// The name Tarantool prints for a body key in "Missing mandatory field".
pub fn key_name(key: u8) -> &'static str {
    use crate::key::*;
    match key {
        REQUEST_TYPE => "REQUEST_TYPE",
        SYNC => "SYNC",
        SCHEMA_VERSION => "SCHEMA_VERSION",
        SPACE_ID => "SPACE_ID",
        INDEX_ID => "INDEX_ID",
        LIMIT => "LIMIT",
        OFFSET => "OFFSET",
        ITERATOR => "ITERATOR",
        INDEX_BASE => "INDEX_BASE",
        KEY => "KEY",
        TUPLE => "TUPLE",
        FUNCTION_NAME => "FUNCTION_NAME",
        USER_NAME => "USER_NAME",
        EXPR => "EXPR",
        OPS => "OPS",
        DATA => "DATA",
        ERROR_24 => "ERROR_24",
        ERROR => "ERROR",
        VERSION => "VERSION",
        FEATURES => "FEATURES",
        AUTH_TYPE => "AUTH_TYPE",
        EVENT_KEY => "EVENT_KEY",
        EVENT_DATA => "EVENT_DATA",
        _ => "?",
    }
}

/// The message Tarantool gives this error.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidMsgpack(what) => write!(f, "Invalid MsgPack - {what}"),
            Error::TooBig(n) => write!(
                f,
                "Invalid MsgPack - too big packet size in the header: {n}"
            ),
            Error::MissingField(k) => {
                write!(f, "Missing mandatory field '{}' in request", key_name(*k))
            }
            Error::InvalidGreeting => f.write_str("Invalid greeting"),
        }
    }
}

impl std::error::Error for Error {}
