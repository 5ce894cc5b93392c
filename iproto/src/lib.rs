//! Tarantool's binary protocol (IPROTO), without Lua: what a server and a
//! client of it both need.
//!
//! - [`frame`](fn@frame) finds a whole packet in a connection's read-ahead bytes
//!   (size prefix, size limit); [`decode_header`] splits it into its
//!   [`Header`] (type or status, sync, schema version, stream id) and body;
//! - [`decode_request`] reads a request's body by type ([`Request`]:
//!   CALL/CALL_16 name and raw arguments, EVAL, AUTH, SELECT, DML, ID),
//!   [`decode_response`] a response's ([`Response`]: DATA, CHUNK, errors
//!   with the `0x52` MP_ERROR stack), [`decode_greeting`] a greeting:
//!   all in place, every string and array a slice of the input;
//! - [`encode`] writes replies (OK with DATA the caller encodes, errors as
//!   `0x31` + a well-formed MP_ERROR map, CHUNK), the greeting
//!   ([`encode_greeting`]) and every request a client sends into an
//!   [`Ibuf`](luafiber_runtime::ibuf::Ibuf);
//! - [`auth`] is chap-sha1 (scramble, double SHA-1, check);
//! - [`kind`], [`key`], [`errcode`], [`iterator`], [`feature`] are the
//!   numbers.
//!
//! Nothing here panics on what a peer sends: malformed, truncated or
//! oversized input is an [`Error`], which names the Tarantool error a
//! server answers with ([`Error::code`], `Display`). The layouts follow
//! Tarantool 2.6 byte for byte (replies as `iproto.cc` writes them,
//! requests as 2.6's net.box writes them); `tests/data/` holds packets
//! real Tarantool 2.6 programs produced, and the tests compare with them.
//!
//! # Example
//!
//! A server's loop over one connection's bytes: frame, decode, answer.
//!
//! ```
//! use luafiber_iproto::encode::{self, ErrorInfo};
//! use luafiber_iproto::{decode_header, decode_request, errcode, frame, Frame, Request};
//! use luafiber_runtime::ibuf::Ibuf;
//!
//! // What a client sent: PING (sync 1), then CALL 'echo' (sync 2) with [1, 2].
//! let mut input = Ibuf::new();
//! encode::encode_ping(&mut input, 1).unwrap();
//! encode::encode_call(&mut input, 2, b"echo", &[0x92, 0x01, 0x02]).unwrap();
//!
//! let mut out = Ibuf::new();
//! loop {
//!     let Frame::Whole { header_at, end } = frame(input.data(), 1 << 20).unwrap() else { break };
//!     let (header, body) = decode_header(&input.data()[header_at..end]).unwrap();
//!     match decode_request(&header, body) {
//!         Ok(Request::Ping) => encode::encode_ok(&mut out, header.sync, 1).unwrap(),
//!         Ok(Request::Call(call)) if call.name == b"echo" => {
//!             // echo returns its arguments: DATA is the argument items.
//!             encode::encode_data_reply(&mut out, 0, header.sync, 1, call.args.items_raw(), call.args.len())
//!                 .unwrap();
//!         }
//!         Ok(_) => {
//!             let e = ErrorInfo::client(errcode::UNKNOWN_REQUEST_TYPE, b"Unknown request type");
//!             encode::encode_error(&mut out, header.sync, 1, &e).unwrap();
//!         }
//!         Err(e) => {
//!             let msg = e.to_string();
//!             encode::encode_error(&mut out, header.sync, 1, &ErrorInfo::client(e.code(), msg.as_bytes())).unwrap();
//!         }
//!     }
//!     input.consume(end);
//! }
//! // Two replies: PING's (29 bytes) and CALL's (35 + 2).
//! assert_eq!(out.used(), 29 + 37);
//! println!("{} bytes to send", out.used());
//! ```
//!
//! prints
//!
//! ```text
//! 66 bytes to send
//! ```

#![deny(unsafe_code)]

pub mod auth;
mod check;
mod consts;
pub mod encode;
pub mod errcode;
mod errcode_table;
mod error;
mod frame;
mod greeting;
pub mod mp;
mod request;
mod response;
mod watch;

pub use check::decode_everything;
pub use consts::{
    feature, iterator, key, kind, GREETING_SIZE, PACKET_SIZE_MAX, PROTOCOL_VERSION,
    REPLY_DATA_HEADER_LEN, REPLY_HEADER_LEN, SALT_SIZE, SCHEMA_VERSION, SCRAMBLE_SIZE,
};
pub use error::{key_name, Error};
pub use frame::{decode_header, frame, split_header, Frame, Header};
pub use greeting::{decode_greeting, encode_greeting, version_id, Greeting};
pub use request::{decode_request, Array, Auth, AuthMethod, Call, Dml, Eval, Id, Request, Select};
pub use response::{
    decode_id_reply, decode_response, mp_error_key, ErrorStack, IdReply, MpError, RemoteError,
    Response, MP_ERROR_STACK,
};
pub use watch::{decode_watch, encode_event, encode_watch, Watch};
