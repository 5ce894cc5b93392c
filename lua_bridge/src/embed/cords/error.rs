//! [`CallError`]: why a call on the cords failed. `Send + Sync`, so it can
//! go wherever the call's handle went.

use std::fmt;

use crate::modules::threads::request::{FailKind, Failure};

/// What went wrong with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallErrorKind {
    /// The called code raised an error (or the name named no function, or
    /// the chunk did not compile).
    Lua,
    /// A value could not cross: arguments that are not one MessagePack
    /// array, a result that MessagePack has no form for ("cannot be sent
    /// to another cord"), no such cord.
    Refused,
    /// The cords stopped before the call answered (or cut it off as they
    /// stopped).
    Stopped,
    /// The wait ran out of time (the call goes on; its results are
    /// dropped).
    TimedOut,
    /// The waiting fiber was cancelled, or the call's own fiber was (by
    /// another fiber of its cord).
    Cancelled,
}

/// Why a call of [`LuaCords`](super::LuaCords) failed: its kind and a
/// message (for a Lua error, the string raised or the error object's
/// `message`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallError {
    kind: CallErrorKind,
    message: String,
}

impl CallError {
    pub(super) fn new(kind: CallErrorKind, message: impl Into<String>) -> CallError {
        CallError {
            kind,
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> CallErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Failure> for CallError {
    fn from(f: Failure) -> CallError {
        let kind = match f.kind {
            FailKind::Lua => CallErrorKind::Lua,
            FailKind::Refused => CallErrorKind::Refused,
            FailKind::Dropped => CallErrorKind::Stopped,
            FailKind::Cancelled => CallErrorKind::Cancelled,
        };
        CallError::new(kind, f.message)
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CallError {}
