//! An fd's record in the cord's event loop: its ready bits and the fibers
//! that wait for them.
//!
//! A record is made when its fd is registered (edge-triggered, for both
//! directions) and shared (`Rc`) by its owner and the reactor's table, so
//! it never moves while fibers wait on it: its two [`Cond`]s hold the
//! waiter records, which live in the waiting fibers' frames (fiber state
//! rule 5). An event sets ready bits and wakes the waiters of that
//! direction; a waiter that found the fd not ready (`EAGAIN`) cleared the
//! bit first, with no switch in between, so no edge is lost.
//!
//! A new record has both bits set: nothing is known yet, so the first call
//! tries its syscall. A third bit, [`HUP`], remembers that an event said
//! the peer hung up or the fd has an error; it is never cleared, and while
//! it is set [`Source::drained`] keeps the readable bit (that event's edge
//! is gone, and only a syscall can tell the end of stream now).

use std::cell::Cell;
use std::ops::BitOr;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};
use std::{fmt, io};

use luafiber_fiber::{self as fiber, Cond};

use crate::io::error;
use crate::io::reactor;

/// What a wait is for: [`READABLE`](Interest::READABLE),
/// [`WRITABLE`](Interest::WRITABLE), or both (`READABLE | WRITABLE`: the
/// first of the two).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Interest(u8);

impl Interest {
    /// Data to read, a connection to accept, or the peer's end of stream.
    pub const READABLE: Interest = Interest(1);
    /// Room to write, or a connect that finished.
    pub const WRITABLE: Interest = Interest(2);

    /// Whether the interest includes reading.
    pub fn is_readable(self) -> bool {
        self.0 & 1 != 0
    }

    /// Whether the interest includes writing.
    pub fn is_writable(self) -> bool {
        self.0 & 2 != 0
    }

    /// The `poll(2)` events of this interest.
    pub(crate) fn poll_events(self) -> libc::c_short {
        let mut ev = 0;
        if self.is_readable() {
            ev |= libc::POLLIN;
        }
        if self.is_writable() {
            ev |= libc::POLLOUT;
        }
        ev
    }
}

impl BitOr for Interest {
    type Output = Interest;
    fn bitor(self, rhs: Interest) -> Interest {
        Interest(self.0 | rhs.0)
    }
}

impl fmt::Debug for Interest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.is_readable(), self.is_writable()) {
            (true, true) => f.write_str("READABLE | WRITABLE"),
            (true, false) => f.write_str("READABLE"),
            _ => f.write_str("WRITABLE"),
        }
    }
}

/// What a wait found: the directions of its [`Interest`] that are ready.
/// An error or a hang-up on the fd counts as ready in both directions (the
/// next call reports it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ready(u8);

impl Ready {
    /// No direction.
    pub const NONE: Ready = Ready(0);

    /// Every direction of `interest`.
    pub fn all(interest: Interest) -> Ready {
        Ready(interest.0)
    }

    /// Whether reading is ready.
    pub fn is_readable(self) -> bool {
        self.0 & 1 != 0
    }

    /// Whether writing is ready.
    pub fn is_writable(self) -> bool {
        self.0 & 2 != 0
    }

    pub(crate) fn from_poll(revents: libc::c_short, want: Interest) -> Ready {
        let mut bits = 0;
        let broken = revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0;
        if revents & libc::POLLIN != 0 || broken {
            bits |= 1;
        }
        if revents & libc::POLLOUT != 0 || broken {
            bits |= 2;
        }
        Ready(bits & want.0)
    }
}

/// The ready bit of an fd whose peer hung up or that has an error.
const HUP: u8 = 4;

/// An fd's record (see the [module docs](self)).
pub(crate) struct Source {
    fd: RawFd,
    /// Set when the fd's owner closed it.
    closed: Cell<bool>,
    /// Owners ([`crate::io::Fd`]) and fibers in [`crate::io::wait_fd`]
    /// that hold the record; the last one to go deregisters it.
    pub refs: Cell<u32>,
    /// Ready bits: 1 readable, 2 writable, and [`HUP`].
    ready: Cell<u8>,
    readers: Cond,
    writers: Cond,
    /// Waiters for both directions; they queue on `readers`, which a
    /// writable event then wakes too.
    both: Cell<u32>,
}

impl Source {
    /// A record with one reference, ready both ways until a syscall says
    /// otherwise.
    pub fn new(fd: RawFd) -> Source {
        Source {
            fd,
            closed: Cell::new(false),
            refs: Cell::new(1),
            ready: Cell::new(3),
            readers: Cond::new(),
            writers: Cond::new(),
            both: Cell::new(0),
        }
    }

    /// The fd (closed or not).
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Whether the fd's owner closed it.
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    /// Marks the record closed and wakes every waiter (each gets `EBADF`).
    pub fn close(&self) {
        self.closed.set(true);
        self.readers.broadcast();
        self.writers.broadcast();
    }

    /// An event for this fd: sets its ready bits and wakes their waiters.
    pub fn on_event(&self, ev: &mio::event::Event) {
        let broken = ev.is_error();
        let read = ev.is_readable() || ev.is_read_closed() || broken;
        let write = ev.is_writable() || ev.is_write_closed() || broken;
        let hup = if ev.is_read_closed() || broken {
            HUP
        } else {
            0
        };
        self.ready
            .set(self.ready.get() | u8::from(read) | (u8::from(write) << 1) | hup);
        if read || (write && self.both.get() > 0) {
            self.readers.broadcast();
        }
        if write {
            self.writers.broadcast();
        }
    }

    /// Clears the ready bits of `interest` (the fd said `EAGAIN`).
    pub fn clear(&self, interest: Interest) {
        self.ready.set(self.ready.get() & !interest.0);
    }

    /// Clears the ready bits of `interest` unless a hang-up or an error
    /// was seen (see the module docs): the caller's read found the fd
    /// empty without an `EAGAIN`.
    pub fn drained(&self, interest: Interest) {
        if self.ready.get() & HUP == 0 {
            self.clear(interest);
        }
    }

    /// Whether a ready bit of `interest` is set.
    pub fn is_ready(&self, interest: Interest) -> bool {
        self.ready.get() & interest.0 != 0
    }

    /// Parks the current fiber until a ready bit of `interest` is set, the
    /// record is closed, `deadline` passes or the fiber is cancelled.
    pub fn wait(&self, interest: Interest, deadline: Option<Instant>) -> io::Result<Ready> {
        self.wait_for(interest, deadline, true)
    }

    /// [`Source::wait`], but woken by an event of `interest` it returns
    /// even when another waiter took the readiness first (the ready bits
    /// then hold none of `interest`): for a caller that shares more than
    /// the fd with the other waiters (a read-ahead buffer another reader
    /// filled) and must look again, as every waiter of a level-triggered
    /// loop would.
    pub fn wait_event(&self, interest: Interest, deadline: Option<Instant>) -> io::Result<Ready> {
        self.wait_for(interest, deadline, false)
    }

    fn wait_for(
        &self,
        interest: Interest,
        deadline: Option<Instant>,
        until_ready: bool,
    ) -> io::Result<Ready> {
        let both = interest.is_readable() && interest.is_writable();
        let cond = match interest.is_readable() {
            true => &self.readers,
            false => &self.writers,
        };
        loop {
            if self.closed.get() {
                return Err(error::closed());
            }
            let have = self.ready.get() & interest.0;
            if have != 0 {
                return Ok(Ready(have));
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return Err(error::timed_out());
            }
            let _waiting = Waiting::new(both.then_some(&self.both));
            match cond.wait(left) {
                Ok(true) if !until_ready && !self.closed.get() => {
                    return Ok(Ready(self.ready.get() & interest.0));
                }
                Ok(true) => {}
                Ok(false) => return Err(error::timed_out()),
                Err(fiber::Error::Cancelled) => return Err(error::cancelled()),
                Err(e) => return Err(io::Error::other(e)),
            }
        }
    }
}

/// A fiber parked in the event loop: counted while it waits, so the
/// scheduler loop goes on while any does (see [`reactor::waiters`]).
pub(crate) struct Waiting<'a> {
    both: Option<&'a Cell<u32>>,
}

impl<'a> Waiting<'a> {
    pub fn new(both: Option<&'a Cell<u32>>) -> Waiting<'a> {
        reactor::add_waiter(true);
        if let Some(b) = both {
            b.set(b.get() + 1);
        }
        Waiting { both }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        reactor::add_waiter(false);
        if let Some(b) = self.both {
            b.set(b.get() - 1);
        }
    }
}
