//! [`FiberError`]: why a fiber gave no value to its joiner.

use std::any::Any;
use std::fmt;
use std::sync::Mutex;

use luafiber_fiber::FiberId;

/// A panic payload, as [`std::panic::catch_unwind`] returns it.
type Payload = Box<dyn Any + Send + 'static>;

/// Why a fiber gave no value to its joiner; see [`FiberError::kind`].
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{spawn, ErrorKind, Runtime};
///
/// let rt = Runtime::new();
/// let h = spawn(|| ());
/// h.cancel(); // before it ever ran: its function is skipped
/// assert_eq!(h.join().unwrap_err().kind(), ErrorKind::Cancelled);
/// # drop(rt);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The fiber was cancelled before its function ran, or (a Lua fiber) its
    /// function ended with Tarantool's `FiberIsCancelled` error.
    Cancelled,
    /// A join with a timeout ran out before the fiber ended.
    TimedOut,
    /// The fiber's Lua function raised an error (set by the Lua bridge).
    LuaError,
    /// The fiber's Rust function panicked.
    Panic,
}

enum Repr {
    Cancelled,
    TimedOut,
    Lua(String),
    Panic {
        /// In a `Mutex` only so that `FiberError` is `Sync` (the payload is
        /// `Send` but not `Sync`); it is only taken out by value.
        payload: Mutex<Payload>,
        /// The payload's text, copied when the error is made.
        message: Option<String>,
    },
}

/// Why [`JoinHandle::join`](crate::JoinHandle::join) gave no value: the fiber
/// was cancelled, raised a Lua error, panicked, or the join timed out. Carries
/// the fiber's id. Modelled on tokio's `JoinError`.
///
/// `Send + Sync + 'static`, so it converts into `Box<dyn Error + Send + Sync>`.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{spawn, Runtime};
///
/// let rt = Runtime::new();
/// let err = rt.block_on(|| spawn(|| -> u32 { panic!("boom") }).join().unwrap_err());
/// assert!(err.is_panic());
/// assert_eq!(err.panic_message(), Some("boom"));
/// assert_eq!(err.to_string(), format!("fiber {} panicked: boom", err.fiber_id()));
/// ```
pub struct FiberError {
    id: FiberId,
    repr: Repr,
}

impl FiberError {
    /// The fiber `id` was cancelled (see [`ErrorKind::Cancelled`]).
    pub fn cancelled(id: FiberId) -> FiberError {
        FiberError {
            id,
            repr: Repr::Cancelled,
        }
    }

    /// A join on fiber `id` timed out.
    pub fn timed_out(id: FiberId) -> FiberError {
        FiberError {
            id,
            repr: Repr::TimedOut,
        }
    }

    /// Fiber `id` ended with a Lua error; `message` is the error as text
    /// (what Lua's `tostring` gives for it).
    pub fn lua_error(id: FiberId, message: impl Into<String>) -> FiberError {
        FiberError {
            id,
            repr: Repr::Lua(message.into()),
        }
    }

    /// Fiber `id` panicked with `payload` (as caught by
    /// [`std::panic::catch_unwind`]).
    pub fn panic(id: FiberId, payload: Box<dyn Any + Send + 'static>) -> FiberError {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned());
        FiberError {
            id,
            repr: Repr::Panic {
                payload: Mutex::new(payload),
                message,
            },
        }
    }

    /// The id of the fiber this error is about.
    pub fn fiber_id(&self) -> FiberId {
        self.id
    }

    /// Which kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self.repr {
            Repr::Cancelled => ErrorKind::Cancelled,
            Repr::TimedOut => ErrorKind::TimedOut,
            Repr::Lua(_) => ErrorKind::LuaError,
            Repr::Panic { .. } => ErrorKind::Panic,
        }
    }

    /// Whether the fiber was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// Whether the join timed out (the fiber may still be running).
    pub fn is_timeout(&self) -> bool {
        matches!(self.repr, Repr::TimedOut)
    }

    /// Whether the fiber's Lua function raised an error.
    pub fn is_lua_error(&self) -> bool {
        matches!(self.repr, Repr::Lua(_))
    }

    /// Whether the fiber's Rust function panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic { .. })
    }

    /// The Lua error's text, for [`ErrorKind::LuaError`].
    pub fn lua_message(&self) -> Option<&str> {
        match &self.repr {
            Repr::Lua(m) => Some(m),
            _ => None,
        }
    }

    /// The panic message, for a panic whose payload is a `&str` or a
    /// `String` (what `panic!` with a message gives).
    pub fn panic_message(&self) -> Option<&str> {
        match &self.repr {
            Repr::Panic { message, .. } => message.as_deref(),
            _ => None,
        }
    }

    /// The panic payload, to re-raise with [`std::panic::resume_unwind`].
    ///
    /// # Panics
    ///
    /// Panics when the error is not a panic (check [`is_panic`] first, or
    /// use [`try_into_panic`]).
    ///
    /// [`is_panic`]: FiberError::is_panic
    /// [`try_into_panic`]: FiberError::try_into_panic
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .expect("`FiberError::into_panic` on an error that is not a panic")
    }

    /// The panic payload, or the error itself when it is not a panic.
    ///
    /// # Errors
    ///
    /// Gives `self` back when the error is not [`ErrorKind::Panic`].
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, FiberError> {
        match self.repr {
            Repr::Panic { payload, .. } => {
                Ok(payload.into_inner().unwrap_or_else(|e| e.into_inner()))
            }
            repr => Err(FiberError { id: self.id, repr }),
        }
    }
}

impl fmt::Display for FiberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.id;
        match &self.repr {
            Repr::Cancelled => write!(f, "fiber {id} was cancelled"),
            Repr::TimedOut => write!(f, "timed out joining fiber {id}"),
            Repr::Lua(m) => write!(f, "fiber {id} raised a Lua error: {m}"),
            Repr::Panic { message, .. } => match message {
                Some(m) => write!(f, "fiber {id} panicked: {m}"),
                None => write!(f, "fiber {id} panicked"),
            },
        }
    }
}

/// Shows the kind, the id and the message; a panic payload that is not text
/// shows as `..`.
impl fmt::Debug for FiberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.id;
        match &self.repr {
            Repr::Cancelled => write!(f, "Cancelled({id})"),
            Repr::TimedOut => write!(f, "TimedOut({id})"),
            Repr::Lua(m) => write!(f, "LuaError({id}, {m:?})"),
            Repr::Panic { message, .. } => match message {
                Some(m) => write!(f, "Panic({id}, {m:?})"),
                None => write!(f, "Panic({id}, ..)"),
            },
        }
    }
}

impl std::error::Error for FiberError {}
