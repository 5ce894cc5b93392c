//! The protocol's numbers: header and body keys, request and response
//! types, select iterators, ID features and sizes (Tarantool's
//! `src/box/iproto_constants.h` and `iproto_features.h`, master).

/// Keys of the header and body maps (`enum iproto_key`).
pub mod key {
    /// Header: request type, or in a response its status.
    pub const REQUEST_TYPE: u8 = 0x00;
    /// Header: the request's id, echoed by its responses.
    pub const SYNC: u8 = 0x01;
    /// Header: the schema version the peer knows (u32 in 2.6, u64 in master).
    pub const SCHEMA_VERSION: u8 = 0x05;
    /// Header: a stream's id (master; streams are not served here).
    pub const STREAM_ID: u8 = 0x0a;
    /// Body: space id.
    pub const SPACE_ID: u8 = 0x10;
    /// Body: index id.
    pub const INDEX_ID: u8 = 0x11;
    /// Body: select limit.
    pub const LIMIT: u8 = 0x12;
    /// Body: select offset.
    pub const OFFSET: u8 = 0x13;
    /// Body: select iterator ([`super::iterator`]).
    pub const ITERATOR: u8 = 0x14;
    /// Body: field numbers' base in UPDATE/UPSERT operations.
    pub const INDEX_BASE: u8 = 0x15;
    /// Body: a key (array).
    pub const KEY: u8 = 0x20;
    /// Body: a tuple, or the arguments of CALL/EVAL, or AUTH's
    /// `[method, scramble]` (array).
    pub const TUPLE: u8 = 0x21;
    /// Body: CALL's function name.
    pub const FUNCTION_NAME: u8 = 0x22;
    /// Body: AUTH's user name.
    pub const USER_NAME: u8 = 0x23;
    /// Body: EVAL's expression.
    pub const EXPR: u8 = 0x27;
    /// Body: UPSERT's operations (array).
    pub const OPS: u8 = 0x28;
    /// Response body: the data (array).
    pub const DATA: u8 = 0x30;
    /// Response body: the error message (string, "ERROR_24").
    pub const ERROR_24: u8 = 0x31;
    /// Response body: the error stack (an MP_ERROR map).
    pub const ERROR: u8 = 0x52;
    /// ID: protocol version.
    pub const VERSION: u8 = 0x54;
    /// ID: feature ids (array).
    pub const FEATURES: u8 = 0x55;
    /// ID: authentication method name.
    pub const AUTH_TYPE: u8 = 0x5b;
    /// WATCH, UNWATCH, WATCH_ONCE, EVENT: the notification key (string).
    pub const EVENT_KEY: u8 = 0x57;
    /// EVENT: the key's value (any MessagePack; absent for none).
    pub const EVENT_DATA: u8 = 0x58;
}

/// Request types and response statuses (`enum iproto_type`).
pub mod kind {
    /// Response: success.
    pub const OK: u32 = 0;
    /// SELECT.
    pub const SELECT: u32 = 1;
    /// INSERT.
    pub const INSERT: u32 = 2;
    /// REPLACE.
    pub const REPLACE: u32 = 3;
    /// UPDATE.
    pub const UPDATE: u32 = 4;
    /// DELETE.
    pub const DELETE: u32 = 5;
    /// CALL with Tarantool 1.6's result wrapping (every return a tuple).
    pub const CALL_16: u32 = 6;
    /// AUTH.
    pub const AUTH: u32 = 7;
    /// EVAL.
    pub const EVAL: u32 = 8;
    /// UPSERT.
    pub const UPSERT: u32 = 9;
    /// CALL (results as they are).
    pub const CALL: u32 = 10;
    /// SQL EXECUTE (not served here).
    pub const EXECUTE: u32 = 11;
    /// PING.
    pub const PING: u32 = 64;
    /// ID: protocol version and features (master).
    pub const ID: u32 = 73;
    /// WATCH (master).
    pub const WATCH: u32 = 74;
    /// UNWATCH (master).
    pub const UNWATCH: u32 = 75;
    /// EVENT, sent by a server for a watched key (master).
    pub const EVENT: u32 = 76;
    /// WATCH_ONCE: a key's value, answered like a SELECT (master).
    pub const WATCH_ONCE: u32 = 77;
    /// Response: a push (`box.session.push`), not the final answer.
    pub const CHUNK: u32 = 128;
    /// Response: this bit plus an error code ([`crate::errcode`]).
    pub const TYPE_ERROR: u32 = 0x8000;

    /// The name Tarantool gives a request type (`iproto_type_name`), or
    /// `None` for one it does not name.
    pub fn name(kind: u32) -> Option<&'static str> {
        Some(match kind {
            OK => "OK",
            SELECT => "SELECT",
            INSERT => "INSERT",
            REPLACE => "REPLACE",
            UPDATE => "UPDATE",
            DELETE => "DELETE",
            CALL_16 => "CALL_16",
            AUTH => "AUTH",
            EVAL => "EVAL",
            UPSERT => "UPSERT",
            CALL => "CALL",
            EXECUTE => "EXECUTE",
            PING => "PING",
            ID => "ID",
            WATCH => "WATCH",
            UNWATCH => "UNWATCH",
            EVENT => "EVENT",
            WATCH_ONCE => "WATCH_ONCE",
            CHUNK => "CHUNK",
            _ => return None,
        })
    }
}

/// Select iterators (`enum iterator_type`).
pub mod iterator {
    /// Equal (the default).
    pub const EQ: u32 = 0;
    /// Reverse equal.
    pub const REQ: u32 = 1;
    /// Every tuple.
    pub const ALL: u32 = 2;
    /// Less than.
    pub const LT: u32 = 3;
    /// Less or equal.
    pub const LE: u32 = 4;
    /// Greater or equal.
    pub const GE: u32 = 5;
    /// Greater than.
    pub const GT: u32 = 6;
}

/// Feature ids of ID (`enum iproto_feature_id`, master).
pub mod feature {
    /// Streams.
    pub const STREAMS: u32 = 0;
    /// Interactive transactions.
    pub const TRANSACTIONS: u32 = 1;
    /// MP_ERROR values in results.
    pub const ERROR_EXTENSION: u32 = 2;
    /// WATCH/UNWATCH/EVENT.
    pub const WATCHERS: u32 = 3;
    /// Select pagination.
    pub const PAGINATION: u32 = 4;
    /// Space and index names in requests.
    pub const SPACE_AND_INDEX_NAMES: u32 = 5;
    /// WATCH_ONCE.
    pub const WATCH_ONCE: u32 = 6;
}

/// Bytes of the greeting (two 64-byte lines).
pub const GREETING_SIZE: usize = 128;
/// Bytes of the random salt a greeting carries (base64 in its second line).
pub const SALT_SIZE: usize = 32;
/// Bytes of a chap-sha1 scramble (a SHA-1 digest).
pub const SCRAMBLE_SIZE: usize = 20;
/// The largest packet Tarantool takes (`IPROTO_PACKET_SIZE_MAX`, 2 GiB):
/// a size prefix above it is an error, not a wait for more bytes.
pub const PACKET_SIZE_MAX: u64 = 2_147_483_648;
/// Bytes of a response header as Tarantool writes it (`IPROTO_HEADER_LEN`):
/// the 5-byte size prefix and `{TYPE: u32, SYNC: u64, SCHEMA_VERSION: u32}`
/// with fixed-width values.
pub const REPLY_HEADER_LEN: usize = 28;
/// [`REPLY_HEADER_LEN`] plus `{DATA: array32}`'s 7 bytes
/// (`IPROTO_SELECT_HEADER_LEN`).
pub const REPLY_DATA_HEADER_LEN: usize = REPLY_HEADER_LEN + 7;
/// The protocol version a box-less server or a client states in ID.
pub const PROTOCOL_VERSION: u64 = 3;
/// The schema version a box-less server sends in every header: constant,
/// so no client ever re-fetches its schema.
pub const SCHEMA_VERSION: u64 = 1;
