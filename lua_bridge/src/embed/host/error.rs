//! [`Error`]: the one error of the embedding surface, with its [`ErrorKind`]
//! and the id of the fiber it is about; how the older error types and the
//! Lua side's error objects map to it.

use std::fmt;

use luafiber_fiber::FiberId;
use luafiber_runtime::{ErrorKind as FiberErrorKind, FiberError};

use crate::embed::cords::{CallError, CallErrorKind};
use crate::embed::FnError;

/// What went wrong, as [`Error::kind`] says it. Modelled on
/// `std::io::ErrorKind`: match the kinds you handle, keep a `_` arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The call's fiber was cancelled (by another fiber, by a dropped
    /// future, or the waiting fiber itself was), or Lua raised Tarantool's
    /// `FiberIsCancelled`.
    Cancelled,
    /// A wait ran out of time (the call may go on; its results are
    /// dropped), or Lua raised a `TimedOut` error.
    TimedOut,
    /// Lua code raised an error (the message is what `tostring` gives for
    /// it; [`Error::lua_value`] has the value), or the name named no
    /// function, or the chunk did not compile.
    Lua,
    /// Rust code run for the call panicked: a closure given to
    /// [`Handle::spawn`](super::Handle::spawn), or a Rust function Lua
    /// called (its `RustPanic` error object, when Lua did not catch it).
    Panic,
    /// A value could not cross: a result MessagePack has no form for (a
    /// function, a userdata), arguments that are not one MessagePack array
    /// ([`Handle::call_raw`](super::Handle::call_raw)), no such cord, or a
    /// runtime built without Lua.
    Refused,
    /// The runtime stopped (or was dropped) before the call answered.
    Stopped,
    /// A value did not convert between Rust and MessagePack (serde): the
    /// arguments, or the results into the type asked for.
    Convert,
    /// The runtime could not be built: a thread did not start, the memory
    /// limit is too small, an init step failed.
    Build,
}

/// Why a call, a build or a registered function failed: its
/// [`kind`](Error::kind), a message, and the id of the fiber it is about
/// when there is one. `Send + Sync + 'static`, `Clone`. Every entry point
/// of [`Runtime`](super::Runtime) and [`Handle`](super::Handle) gives it,
/// and a registered Rust function returns it (Lua gets it raised as an
/// error object of the matching Tarantool type: see
/// [`CordLua::register_fn`](super::CordLua::register_fn)).
///
/// ```
/// # use luafiber_lua::host as luafiber;
/// let rt = luafiber::Builder::new().build().unwrap();
/// let err = rt.handle().eval::<()>("error('no such user')", ()).unwrap_err();
/// assert_eq!(err.kind(), luafiber::ErrorKind::Lua);
/// assert!(err.to_string().contains("no such user"));
/// assert!(err.fiber_id().is_some());
/// ```
#[derive(Clone)]
pub struct Error(Box<Inner>);

/// What an [`Error`] holds, boxed: a call's `Result` of a small value
/// stays two words as it moves up from the call's fiber to its future.
#[derive(Clone)]
struct Inner {
    kind: ErrorKind,
    message: String,
    fiber: Option<FiberId>,
    /// The Lua error value as MessagePack, when it could be encoded.
    value: Option<Vec<u8>>,
}

impl Error {
    /// An error of `kind` with `message` (for a registered function's
    /// `Err`: see [`ErrorKind`]).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error(Box::new(Inner {
            kind,
            message: message.into(),
            fiber: None,
            value: None,
        }))
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The message (for a Lua error, the string raised or what `tostring`
    /// gives for the error object).
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The id of the fiber the error is about (the call's fiber, as
    /// `fiber.id()` gives it in Lua on its cord), when known.
    pub fn fiber_id(&self) -> Option<FiberId> {
        self.0.fiber
    }

    /// Whether the kind is [`ErrorKind::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        self.0.kind == ErrorKind::Cancelled
    }

    /// The value Lua raised ([`ErrorKind::Lua`]), decoded as `T` (a
    /// string, a map for an error object: `{type = ..., message = ...}`
    /// as `box.error`'s unpack gives), when it could cross as MessagePack.
    pub fn lua_value<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        rmp_serde::from_slice(self.0.value.as_deref()?).ok()
    }

    pub(crate) fn with_fiber(mut self, fiber: Option<FiberId>) -> Error {
        self.0.fiber = self.0.fiber.or(fiber);
        self
    }

    pub(crate) fn with_value(mut self, value: Option<Vec<u8>>) -> Error {
        self.0.value = value;
        self
    }

    pub(crate) fn convert(what: &str, e: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Convert, format!("{what}: {e}"))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.0.kind)
            .field("message", &self.0.message);
        if let Some(id) = self.0.fiber {
            d.field("fiber", &id.0);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Error {}

impl From<&str> for Error {
    /// An [`ErrorKind::Lua`] error with this message: what a registered
    /// function's `Err("...")?` raises in Lua (an `IllegalParams` error
    /// object).
    fn from(m: &str) -> Error {
        Error::new(ErrorKind::Lua, m)
    }
}

impl From<String> for Error {
    /// As [`From<&str>`](#impl-From<%26str>-for-Error).
    fn from(m: String) -> Error {
        Error::new(ErrorKind::Lua, m)
    }
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Error {
        let kind = match e.kind() {
            CallErrorKind::Lua => ErrorKind::Lua,
            CallErrorKind::Refused => ErrorKind::Refused,
            CallErrorKind::Stopped => ErrorKind::Stopped,
            CallErrorKind::TimedOut => ErrorKind::TimedOut,
            CallErrorKind::Cancelled => ErrorKind::Cancelled,
        };
        Error::new(kind, e.message())
    }
}

impl From<FiberError> for Error {
    fn from(e: FiberError) -> Error {
        let kind = match e.kind() {
            FiberErrorKind::Cancelled => ErrorKind::Cancelled,
            FiberErrorKind::TimedOut => ErrorKind::TimedOut,
            FiberErrorKind::LuaError => ErrorKind::Lua,
            FiberErrorKind::Panic => ErrorKind::Panic,
            _ => ErrorKind::Lua,
        };
        Error::new(kind, e.to_string()).with_fiber(Some(e.fiber_id()))
    }
}

impl From<luafiber_fiber::Error> for Error {
    /// The fiber layer's errors about the calling fiber: a cancel and a
    /// timeout keep their kind; the rest are [`ErrorKind::Refused`].
    fn from(e: luafiber_fiber::Error) -> Error {
        let kind = match e {
            luafiber_fiber::Error::Cancelled => ErrorKind::Cancelled,
            luafiber_fiber::Error::TimedOut => ErrorKind::TimedOut,
            _ => ErrorKind::Refused,
        };
        Error::new(kind, e.to_string()).with_fiber(luafiber_fiber::current())
    }
}

impl From<crate::embed::Error> for Error {
    /// The older `LuaRuntime`'s errors: a call's fiber error keeps its
    /// kind and id; a load or a runtime error is [`ErrorKind::Lua`]; the
    /// rest are [`ErrorKind::Build`].
    fn from(e: crate::embed::Error) -> Error {
        use crate::embed::Error as Old;
        match e {
            Old::Fiber(e) => e.into(),
            Old::Load(m) | Old::Runtime(m) => Error::new(ErrorKind::Lua, m),
            e => Error::new(ErrorKind::Build, e.to_string()),
        }
    }
}

impl From<FnError> for Error {
    fn from(e: FnError) -> Error {
        let kind = match e {
            FnError::Cancelled => ErrorKind::Cancelled,
            FnError::TimedOut => ErrorKind::TimedOut,
            FnError::Host(e) => return e,
            _ => ErrorKind::Lua,
        };
        Error::new(kind, e.to_string())
    }
}

impl From<Error> for FnError {
    /// What Lua gets raised for a registered function's error: a cancel
    /// is `FiberIsCancelled`, a timeout `TimedOut`, the rest
    /// `IllegalParams`, each with the error's message.
    fn from(e: Error) -> FnError {
        FnError::Host(e)
    }
}
