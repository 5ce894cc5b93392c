//! Every IPROTO decoder on arbitrary bytes (as a connection's read-ahead
//! buffer, a greeting, an MP_ERROR map): an error value or a decoded
//! packet, never a panic, never a read past the input.
//!
//! ```text
//! cd iproto/fuzz && cargo +nightly fuzz run decode
//! ```
//! A crasher goes into `iproto/tests/decode_fuzz.rs` as a fixed case.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    luafiber_iproto::decode_everything(data);
});
