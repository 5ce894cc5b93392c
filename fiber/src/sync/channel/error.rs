//! What a channel operation fails with: [`PutError`] (which gives the value
//! back) and [`GetError`], and the failure a blocking wait reports before
//! its value is attached.

use std::fmt;

/// Why [`Channel::put`](super::Channel::put) failed; each variant gives the value back.
#[derive(Clone, PartialEq, Eq)]
pub enum PutError<T> {
    /// The channel is closed (or was closed while the writer waited).
    Closed(T),
    /// The timeout ran out (or, for [`Channel::try_put`](super::Channel::try_put), the channel is
    /// full).
    TimedOut(T),
    /// The fiber is cancelled (Tarantool's `FiberIsCancelled`).
    Cancelled(T),
    /// The put would block outside a fiber.
    NotInFiber(T),
}

impl<T> PutError<T> {
    /// The value that was not put.
    pub fn into_inner(self) -> T {
        match self {
            PutError::Closed(v)
            | PutError::TimedOut(v)
            | PutError::Cancelled(v)
            | PutError::NotInFiber(v) => v,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            PutError::Closed(_) => "Closed",
            PutError::TimedOut(_) => "TimedOut",
            PutError::Cancelled(_) => "Cancelled",
            PutError::NotInFiber(_) => "NotInFiber",
        }
    }

    fn message(&self) -> &'static str {
        match self {
            PutError::Closed(_) => "channel is closed",
            PutError::TimedOut(_) => "timed out",
            PutError::Cancelled(_) => "fiber is cancelled",
            PutError::NotInFiber(_) => "not in a fiber",
        }
    }
}

/// Shows the variant only, so any `T` can be unwrapped.
impl<T> fmt::Debug for PutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(..)", self.kind())
    }
}

impl<T> fmt::Display for PutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl<T> std::error::Error for PutError<T> {}

/// Why [`Channel::get`](super::Channel::get) failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetError {
    /// The channel is closed and its buffer is drained.
    Closed,
    /// The timeout ran out (or, for [`Channel::try_get`](super::Channel::try_get), the channel is
    /// empty).
    TimedOut,
    /// The fiber is cancelled (Tarantool's `FiberIsCancelled`).
    Cancelled,
    /// The get would block outside a fiber.
    NotInFiber,
}

impl fmt::Display for GetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GetError::Closed => "channel is closed",
            GetError::TimedOut => "timed out",
            GetError::Cancelled => "fiber is cancelled",
            GetError::NotInFiber => "not in a fiber",
        })
    }
}

impl std::error::Error for GetError {}

/// Why a blocking operation failed, before its value is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fail {
    Closed,
    TimedOut,
    Cancelled,
    NotInFiber,
}

impl Fail {
    pub(super) fn with<T, E: FromFail<T>>(self, v: T) -> E {
        E::from_fail(self, v)
    }
}

pub(super) trait FromFail<T> {
    fn from_fail(fail: Fail, v: T) -> Self;
}

impl<T> FromFail<T> for PutError<T> {
    fn from_fail(fail: Fail, v: T) -> Self {
        match fail {
            Fail::Closed => PutError::Closed(v),
            Fail::TimedOut => PutError::TimedOut(v),
            Fail::Cancelled => PutError::Cancelled(v),
            Fail::NotInFiber => PutError::NotInFiber(v),
        }
    }
}

impl FromFail<()> for GetError {
    fn from_fail(fail: Fail, (): ()) -> Self {
        match fail {
            Fail::Closed => GetError::Closed,
            Fail::TimedOut => GetError::TimedOut,
            Fail::Cancelled => GetError::Cancelled,
            Fail::NotInFiber => GetError::NotInFiber,
        }
    }
}
