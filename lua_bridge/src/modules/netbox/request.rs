//! A request in flight: what the reader fiber fills in and the waiting
//! fibers read. Bodies are kept as bytes and decoded by the fiber that
//! asks for them (`super::lib`); a failure becomes an error object
//! only there ([`push_failure`]).

use std::cell::{Cell, RefCell};

use luafiber_fiber::Cond;

use super::transport::ER_TIMEOUT;
use crate::modules::msgpack::port::{self, Options};
use crate::raw::error;
use crate::raw::{LResult, Raise, Stack};

/// How a request's answer becomes Lua values (Tarantool's
/// `method_decoder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decode {
    /// `true` (PING).
    Ping,
    /// The DATA array as multiple values (CALL, EVAL); a future's result
    /// is the array itself.
    Multi,
    /// The DATA array as one table (SELECT, CALL_16).
    Table,
    /// The first element of DATA, or nothing (INSERT, REPLACE, UPDATE,
    /// DELETE, `get`, `min`, `max`, `count`).
    First,
    /// Nothing (UPSERT).
    Nothing,
}

/// An error the server answered with, kept past its frame (the reader
/// decodes it with `luafiber_iproto::decode_response`).
#[derive(Debug, Clone, Default)]
pub(crate) struct ErrorBody {
    /// `IPROTO_ERROR_24`, or the error stack's top message.
    pub message: Vec<u8>,
    /// The error stack's top error type (`ClientError`, ...), when given.
    pub ty: Option<Vec<u8>>,
    /// The top error's payload fields (a MessagePack map), when it has any.
    pub fields: Option<Vec<u8>>,
    /// The stack's errors after the top (its `prev` chain).
    pub causes: Vec<Cause>,
}

/// One error of a reply's error stack after its top.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cause {
    pub ty: Vec<u8>,
    pub code: u32,
    pub message: Vec<u8>,
    /// Its payload fields (a MessagePack map), when it has any.
    pub fields: Option<Vec<u8>>,
}

/// Why a request failed.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// The server answered with an error: its code and body.
    Remote(u32, ErrorBody),
    /// The connection failed or closed: a code (`NO_CONNECTION`, ...) and
    /// a message.
    Local(u32, String),
}

/// The final answer of a request.
pub(crate) type Outcome = Result<Vec<u8>, Failure>;

/// The bodies of a request's pushes, one after another in one buffer: a
/// push costs no allocation of its own (the buffer grows by doubling, and
/// the first one takes room for four bodies of the first one's size).
#[derive(Default)]
pub(crate) struct Pushes {
    /// The bodies, concatenated.
    bytes: Vec<u8>,
    /// Where the first four end in `bytes`.
    first: [usize; 4],
    /// Where the others end.
    more: Vec<usize>,
    /// How many there are.
    n: usize,
}

impl Pushes {
    /// How many pushes came.
    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }

    /// The body of push `i` (from 0).
    #[inline]
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = |i: usize| match i {
            0..4 => self.first[i],
            _ => self.more[i - 4],
        };
        if i >= self.n {
            return None;
        }
        let start = if i == 0 { 0 } else { end(i - 1) };
        Some(&self.bytes[start..end(i)])
    }

    /// Adds a body.
    #[inline]
    pub fn push(&mut self, body: &[u8]) {
        if self.bytes.capacity() == 0 {
            self.bytes.reserve(body.len() * 4);
        }
        self.bytes.extend_from_slice(body);
        match self.n {
            0..4 => self.first[self.n] = self.bytes.len(),
            _ => self.more.push(self.bytes.len()),
        }
        self.n += 1;
    }
}

/// A request in flight (Tarantool's request object of `net_box.lua`).
pub(crate) struct Request {
    /// How to decode its answer.
    pub decode: Decode,
    /// Broadcast when a push or the answer comes.
    pub cond: Cond,
    /// The bodies of the pushes (IPROTO_CHUNK) so far.
    pub pushes: RefCell<Pushes>,
    /// The answer, once it came.
    pub done: RefCell<Option<Outcome>>,
    /// The sync it was sent with (0 once it is no longer in flight).
    pub sync: Cell<u64>,
    /// The per-iteration timeout of the running `pairs()`, in seconds.
    pub pairs_timeout: Cell<f64>,
}

impl Request {
    /// A request sent with `sync`.
    pub fn new(sync: u64, decode: Decode) -> Request {
        Request {
            decode,
            cond: Cond::new(),
            pushes: RefCell::new(Pushes::default()),
            done: RefCell::new(None),
            sync: Cell::new(sync),
            pairs_timeout: Cell::new(f64::INFINITY),
        }
    }

    /// Whether the answer came (or the request failed or was discarded).
    pub fn is_ready(&self) -> bool {
        self.done.borrow().is_some()
    }

    /// Ends the request with `outcome` and wakes its waiters.
    pub fn complete(&self, outcome: Outcome) {
        self.sync.set(0);
        *self.done.borrow_mut() = Some(outcome);
        self.cond.broadcast();
    }

    /// Adds a push and wakes the waiters.
    pub fn push(&self, body: &[u8]) {
        self.pushes.borrow_mut().push(body);
        self.cond.broadcast();
    }
}

/// Pushes the error object of `f`.
pub(super) fn push_failure(s: &mut Stack, f: &Failure) {
    let top = s.top();
    match f {
        Failure::Remote(code, body) => {
            let ty = body.ty.as_deref().unwrap_or(b"ClientError");
            push_remote(s, ty, *code, &body.message, body.fields.as_deref());
            // The stack's causes as the `prev` chain (master's
            // error_unpack of the MP_ERROR stack).
            let mut last = s.top();
            for c in &body.causes {
                if s.ensure(4).is_err() {
                    break;
                }
                push_remote(s, &c.ty, c.code, &c.message, c.fields.as_deref());
                let cause = s.top();
                s.push_cstr(c"prev");
                s.push_value(cause);
                if s.rawset(last).is_err() {
                    break;
                }
                last = cause;
            }
            s.settop(top + 1);
        }
        Failure::Local(code, msg) => error::push_coded(s, b"ClientError", *code, msg.as_bytes()),
    }
}

/// Pushes the error object of one error of a reply's stack, with its
/// payload `fields` (master's `error_build`: a `CustomError` takes the type
/// its `custom_type` names; the other fields are read as the error's, as
/// `box.error.new(box.error.NO_SUCH_USER, 'bob').user`). Fields that do not
/// decode, or name what every error has (`type`, `message`, ...), are left
/// out.
fn push_remote(s: &mut Stack, ty: &[u8], code: u32, message: &[u8], fields: Option<&[u8]>) {
    error::push_coded(s, ty, code, message);
    let Some(fields) = fields else { return };
    let e = s.top();
    if s.ensure(6).is_err() || port::decode_value(s, fields, Options::Cfg).is_err() {
        s.settop(e);
        return;
    }
    let map = s.top();
    if s.type_of(map) == mlua::ffi::LUA_TTABLE {
        s.push_nil();
        while let Ok(true) = s.next_checked(map) {
            let own = matches!(
                s.to_str(-2),
                Some(
                    b"type"
                        | b"message"
                        | b"code"
                        | b"prev"
                        | b"trace"
                        | b"base_type"
                        | b"errno"
                        | b"file"
                        | b"line"
                        | b"reason"
                )
            );
            if s.type_of(-2) != mlua::ffi::LUA_TSTRING || own {
                s.pop(1);
                continue;
            }
            if ty == b"CustomError"
                && s.to_str(-2) == Some(b"custom_type")
                && s.type_of(-1) == mlua::ffi::LUA_TSTRING
            {
                s.push_value(-1);
                s.set_field(e, c"type");
                s.push_cstr(c"CustomError");
                s.set_field(e, c"base_type");
            }
            s.push_value(-2);
            s.insert(-2);
            if s.rawset(e).is_err() {
                break;
            }
        }
    }
    s.settop(e);
}

/// A timeout error (Tarantool's `box.error.new(box.error.TIMEOUT)`).
pub(super) fn timed_out() -> Failure {
    Failure::Local(ER_TIMEOUT, "Timeout exceeded".into())
}

/// Raises the error object of `f`.
pub(super) fn raise_failure(s: &mut Stack, f: &Failure) -> LResult {
    s.ensure(4)?;
    push_failure(s, f);
    Err(Raise::Top)
}
