//! The userdata behind every incremental hashing or cipher object of
//! `crypto` and `digest` (master: an OpenSSL context or an `XXH*_state_t`
//! cdata): one kind, `Ctx`, holding an `Rc<RefCell<State>>`, so a method
//! clones the `Rc` out of the block (udata rule 3) and works on the state
//! with no Lua call in between (the borrow never spans a switch).

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::rc::Rc;

use super::cipher::Stream;
use super::md::{HmacState, MdState};
use crate::raw::context::Part;
use crate::raw::{lua_fn, Kind, LResult, Raise, Stack};

/// What a context object holds.
pub(crate) enum State {
    /// `crypto.digest.X.new()`: a message digest (`None` once finished,
    /// until `init` again).
    Md(MdState),
    /// `crypto.hmac.X.new(key)`.
    Hmac(HmacState),
    /// `crypto.cipher.A.M.D.new(key, iv)`.
    Cipher(Stream),
    /// `digest.xxhash32.new([seed])`.
    Xxh32(xxhash_rust::xxh32::Xxh32),
    /// `digest.xxhash64.new([seed])`.
    Xxh64(xxhash_rust::xxh64::Xxh64),
}

/// A context object's payload.
pub(crate) type Shared = Rc<RefCell<State>>;

/// Per-cord state of the context objects (a part of the cord context):
/// their kind.
#[derive(Default)]
pub(crate) struct CtxKind(Cell<Kind<Shared>>);

/// The kind, made on first use in this cord's Lua state.
fn kind(s: &mut Stack) -> Kind<Shared> {
    let k = CtxKind::with(|k| k.0.get());
    if k.metatable_ptr().is_null() {
        let k = Kind::<Shared>::new(s, c"crypto.ctx", &[], &[(c"__gc", ctx_gc)]);
        CtxKind::with(|c| c.0.set(k));
        return k;
    }
    k
}

/// Pushes a new context object holding `state`.
pub(crate) fn push(s: &mut Stack, state: State) -> LResult<()> {
    s.ensure(4)?;
    let k = kind(s);
    k.push(s, Rc::new(RefCell::new(state)));
    Ok(())
}

/// The state of the context object at `idx`, or `usage` raised as a
/// string.
pub(crate) fn get(s: &mut Stack, idx: c_int, usage: &str) -> LResult<Shared> {
    let k = kind(s);
    k.get(s, idx).ok_or_else(|| Raise::Message(usage.into()))
}

lua_fn! {
    /// `__gc`: drops the state (a key or a cipher's context with it).
    fn ctx_gc(s: &mut Stack) {
        let k = CtxKind::with(|k| k.0.get());
        // A resurrected object holds nothing any more (udata rule 2).
        drop(k.take(s, 1));
        Ok(0)
    }
}
