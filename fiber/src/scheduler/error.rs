//! The one error type of the fiber layer.

use std::fmt;

use super::id::FiberId;
use crate::stack::StackError;

/// What a fiber operation can fail with. The messages are Tarantool's, so the
/// Lua layer can show them unchanged.
#[derive(Debug)]
pub enum Error {
    /// The current fiber was cancelled; seen at cancellation points
    /// (`sleep`, `yield`, `testcancel`, blocking channel and cond waits).
    Cancelled,
    /// A wait with a timeout ran out.
    TimedOut,
    /// The fiber has finished (or was never there).
    Dead(FiberId),
    /// `join` on a fiber that is not joinable.
    NotJoinable(FiberId),
    /// `join` on the calling fiber itself.
    JoinSelf,
    /// `join` on a fiber another fiber is already joining.
    JoinedConcurrently(FiberId),
    /// The operation must run inside a fiber.
    NotInFiber,
    /// A fiber name longer than [`crate::MAX_NAME_LEN`] bytes.
    NameTooLong,
    /// No stack could be made for a new fiber.
    Stack(StackError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Cancelled => f.write_str("fiber is cancelled"),
            Error::TimedOut => f.write_str("timed out"),
            Error::Dead(_) => f.write_str("the fiber is dead"),
            Error::NotJoinable(_) => f.write_str("the fiber is not joinable"),
            Error::JoinSelf => f.write_str("cannot join itself"),
            Error::JoinedConcurrently(_) => {
                f.write_str("the fiber is already joined by concurrent fiber:join()")
            }
            Error::NotInFiber => f.write_str("not in a fiber"),
            Error::NameTooLong => f.write_str("Fiber name is too long"),
            Error::Stack(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<StackError> for Error {
    fn from(e: StackError) -> Error {
        Error::Stack(e)
    }
}
