//! [`LuaRuntime::register_fn`]: Rust functions Lua calls that may block
//! their fiber.
//!
//! `mlua` callbacks must not switch fibers (mlua keeps one "current state"
//! per Lua instance, restored in LIFO order), so blocking Rust functions are
//! registered here instead: a raw C closure converts the arguments to
//! [`Value`]s, calls the Rust function (which may `sleep`, wait on a channel,
//! ...), and pushes its results. Conversion runs no metamethod and raises
//! nothing.

use std::cell::RefCell;
use std::ffi::{c_int, CString};
use std::rc::Rc;

use luafiber_runtime::{ErrorKind as ErrorKindRt, FiberError};

use super::value::{self, Value};
use super::{Error, LuaRuntime};
use crate::raw::context::Part;
use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, Raise, Stack};

/// A registered blocking function: arguments in, results or an error out.
enum RustFn {
    /// Through [`Value`]s ([`LuaRuntime::register_fn`]).
    Values(Box<ValuesFn>),
    /// Reading its arguments and pushing its results itself (the typed
    /// functions of [`crate::host`], through its `lua_serde`).
    Typed(Box<TypedFn>),
}

/// A registered function with its name, shared by the runtime's list and
/// the calls that run it (one `Rc` clone per call: a call may outlive the
/// list, which the runtime's end clears while a parked call still runs).
struct Registered {
    f: RustFn,
    name: Box<str>,
}

/// A function of [`Value`]s.
type ValuesFn = dyn Fn(Vec<Value>) -> Result<Vec<Value>, FnError>;

/// A function of MessagePack arrays: the arguments in, the results out
/// (what a [`TypedFn`] falls back to for a value that does not go
/// straight across: [`call_msgpack_fn`]).
pub(crate) type MsgpackFn = dyn Fn(&[u8]) -> Result<Vec<u8>, FnError>;

/// A function given the stack of its C closure's call (its arguments from
/// 1 to the top) and its name: it reads the arguments, pushes its results
/// and returns how many, or the error Lua gets raised.
pub(crate) type TypedFn = dyn Fn(&mut Stack, &str) -> crate::raw::LResult<c_int>;

/// Why a function registered with [`LuaRuntime::register_fn`] failed: what
/// Lua gets raised, as an error object whose `type` follows the variant and
/// whose message is `"NAME: MESSAGE"`.
///
/// `?` makes one from a message (`&str`, `String`), from the fiber layer's
/// errors ([`luafiber_fiber::Error`], [`FiberError`]) and from the errors
/// of [`LuaHandle`](crate::LuaHandle) calls ([`Error`]); a cancel or a
/// timeout of the calling fiber keeps its kind.
#[derive(Debug)]
#[non_exhaustive]
pub enum FnError {
    /// A bad argument or call: `IllegalParams` with this message.
    Illegal(String),
    /// The calling fiber was cancelled: `FiberIsCancelled` ("fiber is
    /// cancelled").
    Cancelled,
    /// A wait ran out of time: `TimedOut` ("timed out").
    TimedOut,
    /// A host's [`crate::embed::host::Error`], message kept: its kind picks the
    /// type (a cancel `FiberIsCancelled`, a timeout `TimedOut`, the rest
    /// `IllegalParams`).
    Host(crate::embed::host::Error),
}

impl std::fmt::Display for FnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FnError::Illegal(m) => f.write_str(m),
            FnError::Cancelled => write!(f, "{}", luafiber_fiber::Error::Cancelled),
            FnError::TimedOut => write!(f, "{}", luafiber_fiber::Error::TimedOut),
            FnError::Host(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for FnError {}

impl From<String> for FnError {
    fn from(m: String) -> FnError {
        FnError::Illegal(m)
    }
}

impl From<&str> for FnError {
    fn from(m: &str) -> FnError {
        FnError::Illegal(m.to_owned())
    }
}

impl From<luafiber_fiber::Error> for FnError {
    /// A cancel or a timeout keeps its kind (the fiber layer's errors are
    /// about the calling fiber); the rest are `Illegal`.
    fn from(e: luafiber_fiber::Error) -> FnError {
        match e {
            luafiber_fiber::Error::Cancelled => FnError::Cancelled,
            luafiber_fiber::Error::TimedOut => FnError::TimedOut,
            e => FnError::Illegal(e.to_string()),
        }
    }
}

impl From<FiberError> for FnError {
    /// A cancel of the calling fiber, or a timeout, keeps its kind; a cancel
    /// of another fiber (one it joined) and the rest are `Illegal`.
    fn from(e: FiberError) -> FnError {
        match e.kind() {
            ErrorKindRt::Cancelled if luafiber_fiber::current() == Some(e.fiber_id()) => {
                FnError::Cancelled
            }
            ErrorKindRt::TimedOut => FnError::TimedOut,
            _ => FnError::Illegal(e.to_string()),
        }
    }
}

impl From<Error> for FnError {
    /// As [`FnError::from`] a [`FiberError`] for [`Error::Fiber`]; the rest
    /// are `Illegal`.
    fn from(e: Error) -> FnError {
        match e {
            Error::Fiber(e) => e.into(),
            e => FnError::Illegal(e.to_string()),
        }
    }
}

impl FnError {
    /// What Lua gets raised for this error of the function `name`.
    pub(crate) fn raise(self, name: &str) -> Raise {
        let kind = match self {
            FnError::Illegal(_) => ErrorKind::IllegalParams,
            FnError::Cancelled => ErrorKind::FiberIsCancelled,
            FnError::TimedOut => ErrorKind::TimedOut,
            FnError::Host(ref e) => match e.kind() {
                crate::embed::host::ErrorKind::Cancelled => ErrorKind::FiberIsCancelled,
                crate::embed::host::ErrorKind::TimedOut => ErrorKind::TimedOut,
                _ => ErrorKind::IllegalParams,
            },
        };
        Raise::Error(kind, format!("{name}: {self}"))
    }
}

/// Per-cord state of registered functions (a part of the cord context):
/// the functions registered on the cord's runtime, with their names.
#[derive(Default)]
pub(crate) struct RustFns(RefCell<Vec<Rc<Registered>>>);

/// Forgets the functions of this thread's runtime (it is going).
pub(super) fn clear() {
    // Dropped outside the closure (context rule 2): a function may own
    // anything.
    let fns = RustFns::try_with(|f| std::mem::take(&mut *f.0.borrow_mut()));
    drop(fns);
}

impl LuaRuntime {
    /// Makes the Rust function `f` the Lua global `name`. Unlike an `mlua`
    /// callback, `f` may block its fiber (`fiber::sleep`, waiting on a channel,
    /// ...): only the calling fiber waits. Arguments and results convert
    /// through [`Value`] (functions, userdata and threads arrive as `Nil`);
    /// an `Err` is raised in Lua as an error object of the [`FnError`]'s
    /// kind whose message is `"name: message"`. Inside a fiber, a call from
    /// a `__gc` finalizer or under an mlua callback raises instead of
    /// calling `f`.
    ///
    /// `f` is kept for the runtime's whole life; registering `name` again
    /// replaces the global (the old function stays allocated). A panic in
    /// `f` is caught and raised in Lua as a `RustPanic` error object.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when `name` contains a NUL byte.
    pub fn register_fn(
        &self,
        name: &str,
        f: impl Fn(Vec<Value>) -> Result<Vec<Value>, FnError> + 'static,
    ) -> Result<(), Error> {
        self.register(name, RustFn::Values(Box::new(f)))
    }

    /// Makes `f` the Lua global `name`, as [`register_fn`](LuaRuntime::register_fn)
    /// does, `f` reading its arguments off the stack and pushing its
    /// results itself ([`TypedFn`]): the typed functions of [`crate::host`].
    pub(crate) fn register_typed_fn(&self, name: &str, f: Box<TypedFn>) -> Result<(), Error> {
        self.register(name, RustFn::Typed(f))
    }

    fn register(&self, name: &str, f: RustFn) -> Result<(), Error> {
        let cname = CString::new(name).map_err(|_| Error::Load(format!("bad name {name:?}")))?;
        let idx = RustFns::with(|fns| {
            let mut fns = fns.0.borrow_mut();
            fns.push(Rc::new(Registered {
                f,
                name: name.into(),
            }));
            fns.len()
        });
        let s = &mut self.main_stack();
        s.push_globals();
        // Its position in the list from 1, as a light userdata: one
        // `lua_touserdata` per call reads it (no userdata made).
        s.push_light(std::ptr::without_provenance_mut(idx));
        s.push_closure(call_rust_fn, 1);
        s.set_field(-2, &cname);
        s.pop(1);
        Ok(())
    }
}

/// The message of a conversion's error.
fn message(r: Raise) -> String {
    match r {
        Raise::Error(_, m) | Raise::Message(m) => m,
        Raise::Top => "cannot convert".into(),
    }
}

lua_fn! {
    /// The C closure behind every registered function (upvalue 1: its
    /// position from 1 in the runtime's function list, as a light
    /// userdata).
    fn call_rust_fn(s: &mut Stack) {
        let pos = s.to_userdata(Stack::upvalue(1)).addr();
        let reg = RustFns::try_with(|fns| {
            pos.checked_sub(1).and_then(|i| fns.0.try_borrow().ok()?.get(i).cloned())
        })
        .flatten()
        .ok_or_else(|| Raise::illegal("a registered function of another runtime"))?;
        let name = &*reg.name;
        if luafiber_fiber::current().is_some() {
            crate::fiber::check_switch(s, name)?;
        }
        s.ensure(8)?;
        let f = match &reg.f {
            RustFn::Values(f) => f,
            RustFn::Typed(f) => return f(s, name),
        };
        let args = (1..=s.top()).map(|i| value::read(s, i, 0)).collect::<Result<Vec<_>, _>>()?;
        let results = f(args).map_err(|e| e.raise(name))?;
        let n = results.len() as c_int;
        let top = s.top();
        let pushed = results.iter().enumerate().try_for_each(|(i, v)| {
            value::push(s, v)
                .map_err(|e| Raise::illegal(format!("{name}: result {}: {}", i + 1, message(e))))
        });
        value::drop_flat(results);
        if let Err(e) = pushed {
            s.settop(top);
            return Err(e);
        }
        Ok(n)
    }
}

/// Calls a function of MessagePack arrays with the arguments on `s` and
/// pushes its results (the `msgpack` module's encoder and decoder).
pub(crate) fn call_msgpack_fn(
    s: &mut Stack,
    f: &MsgpackFn,
    name: &str,
) -> crate::raw::LResult<c_int> {
    use crate::modules::msgpack::port;
    let args = port::encode_array(s, 1, name, "argument")?;
    let results = f(&args).map_err(|e| e.raise(name))?;
    s.settop(0);
    port::push_array(s, &results, "decode")
}
