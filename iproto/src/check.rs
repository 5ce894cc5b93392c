//! Every decoder over bytes a peer could send: what the fuzz target
//! (`iproto/fuzz/`) and the bounded mutation test (`tests/decode_fuzz.rs`)
//! drive.

use crate::frame::{decode_header, frame, split_header, Frame};
use crate::greeting::decode_greeting;
use crate::request::{decode_request, Array, Request};
use crate::response::{decode_id_reply, decode_response, ErrorStack, Response};

/// Runs every decoder over `bytes` as a connection's read-ahead buffer
/// (frame after frame, each header and body as a request and as a
/// response), as a greeting and as a bare MP_ERROR map; returns how many
/// whole packets it framed.
///
/// # Panics
///
/// Panics only when a decoder breaks its own contract (a frame past the
/// buffer's end, an item count that disagrees with the items, the one-pass
/// request decode disagreeing with the checked one): the invariants the
/// fuzzers check.
pub fn decode_everything(bytes: &[u8]) -> usize {
    let _ = decode_greeting(bytes);
    let _ = ErrorStack::new(bytes).map(|s| s.errors().map(|it| it.count()));
    let _ = decode_id_reply(bytes);
    let mut packets = 0;
    let mut rest = bytes;
    while let Ok(Frame::Whole { header_at, end }) = frame(rest, u64::from(u32::MAX)) {
        assert!(
            header_at <= end && end <= rest.len(),
            "a frame inside its buffer"
        );
        packets += 1;
        let packet = &rest[header_at..end];
        // The one-pass path (a server's) answers as the checked one does,
        // once the arguments it left unchecked are checked.
        let checked = decode_header(packet).and_then(|(h, b)| decode_request(&h, b));
        let one_pass = split_header(packet)
            .and_then(|(h, b)| decode_request(&h, b))
            .and_then(|r| check_args(&r).map(|()| r));
        assert_eq!(checked, one_pass, "split_header + decode_request agree");
        if let Ok((h, body)) = decode_header(packet) {
            match decode_request(&h, body) {
                Ok(Request::Call(c) | Request::Call16(c)) => check_array(&c.args),
                Ok(Request::Eval(e)) => check_array(&e.args),
                Ok(Request::Auth(a)) => {
                    let _ = a.method();
                }
                Ok(Request::Id(id)) => {
                    let _ = id.feature_ids().count();
                }
                _ => {}
            }
            match decode_response(&h, body) {
                Ok(Response::Ok { data: Some(d), .. } | Response::Chunk { data: Some(d) }) => {
                    check_array(&d)
                }
                Ok(Response::Error(e)) => {
                    if let Some(s) = e.stack {
                        let n = s.errors().map(|it| it.filter(|e| e.is_ok()).count());
                        assert!(n.is_ok(), "a checked stack reads again");
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    packets
}

/// A request's arguments checked when they were left unchecked.
fn check_args(r: &Request<'_>) -> Result<(), crate::Error> {
    match r {
        Request::Call(c) | Request::Call16(c) => c.args.check(),
        Request::Eval(e) => e.args.check(),
        _ => Ok(()),
    }
}

fn check_array(a: &Array<'_>) {
    if a.check().is_err() {
        assert!(!a.is_checked(), "a checked array checks");
        return;
    }
    assert_eq!(
        a.iter().count(),
        a.len() as usize,
        "an array's items are all there"
    );
}
