//! The cord's reactor: one `mio::Poll` per thread, its table of fd records,
//! its waker, and the idle-wait hook that runs it from the scheduler loop.
//!
//! Made on first use (the first registration, wait or waker on the
//! thread), which also installs [`turn`] as the thread's idle-wait hook
//! ([`luafiber_fiber::idle`]): a thread that never does I/O never polls.
//! Nothing here runs inside a fiber except registration: events are taken
//! only by [`turn`], between the scheduler's batches, so a fiber's syscall
//! and the clearing of its ready bit happen with no event in between.

use std::cell::{Cell, OnceCell, RefCell};
use std::io;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use luafiber_fiber as fiber;
use mio::unix::SourceFd;
use mio::{Events, Poll, Token};

use crate::io::inbox::{Inbox, Msg};
use crate::io::source::Source;
use crate::io::waker::{self, Shared};

/// The waker's token (no table key reaches it).
const WAKER: Token = Token(usize::MAX);
/// Events taken by one poll.
const EVENTS: usize = 1024;
/// The longest a cord spins before it sleeps (see [`Reactor::spin`]).
pub(crate) const SPIN: Duration = Duration::from_micros(20);
/// After `k` spins in a row that ran out, a cord skips the spin of its
/// next `2^k` blocking polls, `k` at most this.
const MAX_BACKOFF: u32 = 6;

pub(crate) struct Reactor {
    poll: RefCell<Poll>,
    events: RefCell<Events>,
    /// Every registered fd's record, indexed by the fd, which is also its
    /// token (an fd is deregistered before it is closed, so no event of a
    /// closed fd reaches the record of a new fd with its number).
    sources: RefCell<Vec<Option<Rc<Source>>>>,
    /// What other threads hold to wake this cord.
    pub shared: Arc<Shared>,
    /// Fibers in [`crate::io::wait_woken`].
    pub woken: Rc<fiber::Cond>,
    /// A wake that came while no fiber waited for it: the next
    /// [`crate::io::wait_woken`] takes it.
    pub permit: Cell<bool>,
    /// Fibers waiting for a job of [`crate::io::run_blocking`].
    pub jobs: Rc<fiber::Cond>,
    /// Fibers in [`crate::io::watch`] (they do not count as waiters).
    pub watchers: Rc<fiber::Cond>,
    /// A watchers' wake that came while none watched.
    pub watch_permit: Cell<bool>,
    /// The ids of the fibers in [`crate::io::watch`] now.
    pub watching: RefCell<Vec<fiber::FiberId>>,
    /// What other threads hand to this cord ([`crate::io::inbox`]).
    pub inbox: Arc<Inbox>,
    /// The drained messages' vector, kept for its capacity.
    spare: RefCell<Vec<Msg>>,
    /// Set by a drain that found messages, cleared by the next blocking
    /// poll: another thread posted here since, so it may again soon.
    posted: Cell<bool>,
    /// Spins in a row that ran out (capped at [`MAX_BACKOFF`]).
    spin_fails: Cell<u32>,
    /// Blocking polls left to make without a spin, after one ran out.
    spin_skips: Cell<u32>,
}

thread_local! {
    static REACTOR: OnceCell<Reactor> = const { OnceCell::new() };
    /// Fibers parked in the event loop (fd waits, wake and job waits).
    static WAITERS: Cell<usize> = const { Cell::new(0) };
    /// Fibers parked for a wake through the inbox (`crate::park`): they
    /// keep the loop going, but need no poll while the loop is awake.
    static REMOTE_WAITERS: Cell<usize> = const { Cell::new(0) };
    /// Set by a blocking poll, cleared by the next poll of a batch.
    static JUST_POLLED: Cell<bool> = const { Cell::new(false) };
}

/// Counts a fiber that parks in the event loop (`true`) or leaves it. The
/// first to park asks the scheduler to poll within a few switches (the
/// running batch may have begun with none waiting, when the loop polls
/// only every 64).
pub(crate) fn add_waiter(parks: bool) {
    let before = WAITERS.with(|w| w.replace(if parks { w.get() + 1 } else { w.get() - 1 }));
    if parks && before == 0 {
        fiber::poll_soon();
    }
}

/// Fibers parked in the event loop now.
pub(crate) fn waiters() -> usize {
    WAITERS.with(Cell::get)
}

/// Counts a fiber that parks for a wake through the inbox (`true`) or
/// leaves.
pub(crate) fn add_remote_waiter(parks: bool) {
    REMOTE_WAITERS.with(|w| w.set(if parks { w.get() + 1 } else { w.get() - 1 }));
}

/// Fibers parked in the event loop or for a wake through the inbox.
pub(crate) fn all_waiters() -> usize {
    waiters() + REMOTE_WAITERS.with(Cell::get)
}

/// Runs `f` on this thread's reactor, made (and the idle hook installed)
/// on first use.
///
/// # Errors
///
/// When the reactor cannot be made (`epoll_create`, `eventfd`), or the
/// thread is ending.
pub(crate) fn with<R>(f: impl FnOnce(&Reactor) -> R) -> io::Result<R> {
    REACTOR
        .try_with(|cell| {
            if cell.get().is_none() {
                let r = Reactor::new()?;
                let _ = cell.set(r);
                fiber::set_idle_hook(Some(turn));
            }
            Ok(f(cell.get().expect("the reactor was just made")))
        })
        .unwrap_or_else(|_| Err(io::Error::other("the thread's event loop is gone")))
}

/// Runs `f` on this thread's reactor if it exists (and the thread is not
/// ending).
pub(crate) fn with_existing<R>(f: impl FnOnce(&Reactor) -> R) -> Option<R> {
    REACTOR.try_with(|c| c.get().map(f)).ok().flatten()
}

impl Reactor {
    fn new() -> io::Result<Reactor> {
        let poll = Poll::new()?;
        let shared = Arc::new(Shared::new(mio::Waker::new(poll.registry(), WAKER)?));
        let inbox = Arc::new(Inbox::new(shared.clone()));
        Ok(Reactor {
            inbox,
            spare: RefCell::new(Vec::new()),
            posted: Cell::new(false),
            spin_fails: Cell::new(0),
            spin_skips: Cell::new(0),
            poll: RefCell::new(poll),
            events: RefCell::new(Events::with_capacity(EVENTS)),
            sources: RefCell::new(Vec::new()),
            shared,
            woken: Rc::new(fiber::Cond::new()),
            permit: Cell::new(false),
            jobs: Rc::new(fiber::Cond::new()),
            watchers: Rc::new(fiber::Cond::new()),
            watch_permit: Cell::new(false),
            watching: RefCell::new(Vec::new()),
        })
    }

    /// The record of `fd`, with one more reference: registered
    /// (edge-triggered, both directions) when it has none yet.
    pub fn acquire(&self, fd: RawFd) -> io::Result<Rc<Source>> {
        let i = usize::try_from(fd).map_err(|_| crate::io::error::closed())?;
        let mut sources = self.sources.borrow_mut();
        if let Some(Some(src)) = sources.get(i) {
            src.refs.set(src.refs.get() + 1);
            return Ok(src.clone());
        }
        self.poll.borrow().registry().register(
            &mut SourceFd(&fd),
            Token(i),
            mio::Interest::READABLE | mio::Interest::WRITABLE,
        )?;
        if sources.len() <= i {
            sources.resize(i + 1, None);
        }
        let src = Rc::new(Source::new(fd));
        sources[i] = Some(src.clone());
        Ok(src)
    }

    /// Drops a reference to the record; the last one takes it out of the
    /// table and the fd out of the poll (the fd stays open).
    pub fn release(&self, src: &Source) {
        src.refs.set(src.refs.get() - 1);
        if src.refs.get() == 0 {
            self.deregister(src);
        }
    }

    /// Takes the record out of the table and its fd out of the poll (the
    /// fd stays open), whatever its references: before the fd is closed.
    /// An fd closed behind the reactor's back is no error.
    pub fn deregister(&self, src: &Source) {
        let fd = src.fd();
        let mut sources = self.sources.borrow_mut();
        let slot = sources.get_mut(fd as usize);
        if let Some(slot) = slot.filter(|s| s.as_deref().is_some_and(|s| std::ptr::eq(s, src))) {
            *slot = None;
            let _ = self.poll.borrow().registry().deregister(&mut SourceFd(&fd));
        }
    }

    /// Waits for events at most `timeout` (`None`: until one) and hands
    /// them out.
    fn poll_events(&self, timeout: Option<Duration>) {
        let mut events = self.events.borrow_mut();
        if let Err(e) = self.poll.borrow_mut().poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                tracing::error!(error = %e, "event loop poll failed");
            }
            return;
        }
        let sources = self.sources.borrow();
        for ev in events.iter() {
            if ev.token() == WAKER {
                waker::on_wake(self);
            } else if let Some(Some(src)) = sources.get(ev.token().0) {
                src.on_event(ev);
            }
        }
    }
}

/// The idle-wait hook (see [`luafiber_fiber::idle`]): drains the inbox,
/// polls the event loop for at most `timeout`, and says whether fibers
/// still wait on it (for a zero timeout: whether fibers wait for events of
/// the poll, fds or jobs, so that the scheduler polls again within a few
/// yields). With no fiber waiting, no event could wake anyone: it
/// only sleeps out the timeout (a timer's deadline), without a syscall for
/// a zero one.
///
/// The zero-timeout poll of a batch that follows a blocking poll at once
/// (the fibers it woke are that batch) is skipped: nothing ran since.
pub(crate) fn turn(timeout: Option<Duration>) -> bool {
    // What the inbox made ready runs first.
    let timeout = match with_existing(Reactor::drain_inbox) {
        Some(true) => Some(Duration::ZERO),
        _ => timeout,
    };
    if all_waiters() == 0 {
        if let Some(t) = timeout.filter(|t| !t.is_zero()) {
            // A watcher (`io::watch`) is woken through the poll: sleep in it.
            let watched = with_existing(|r| {
                let w = r.watchers.waiters() > 0;
                if w {
                    r.turn(Some(t), || false, || false);
                }
                w
            });
            if watched != Some(true) {
                std::thread::sleep(t);
            }
        }
        return false;
    }
    with_existing(|r| r.turn(timeout, || false, || false));
    match timeout == Some(Duration::ZERO) {
        true => waiters() > 0,
        false => all_waiters() > 0,
    }
}

/// Whether a zero-timeout [`turn`] would do anything: a message waits in
/// the inbox, or fibers wait on fds (which a poll may have made ready).
pub(crate) fn has_events() -> bool {
    waiters() > 0 || with_existing(|r| r.inbox.has_msgs()) == Some(true)
}

/// The turn of a cord of a several-cord runtime ([`crate::cord`]), after
/// its [`drain_inbox`]: as [`turn`], but it waits in the event loop even
/// when no fiber is parked there (other threads wake it through its
/// inbox), and does not block while `pending()` says other threads left
/// work for it (the injector); before it blocks it may [spin](Reactor::spin)
/// while `peers_awake()` says another cord of its runtime is awake.
pub(crate) fn turn_cord(
    timeout: Option<Duration>,
    pending: impl Fn() -> bool,
    peers_awake: impl Fn() -> bool,
) {
    with_existing(|r| r.turn(timeout, pending, peers_awake));
}

/// Acts on every message in this thread's inbox (outside any fiber);
/// returns whether there was any (it may have made fibers ready).
pub(crate) fn drain_inbox() -> bool {
    with_existing(Reactor::drain_inbox).unwrap_or(false)
}

impl Reactor {
    /// Polls with `timeout`; a blocking poll first [spins](Reactor::spin)
    /// when it may, then goes through the inbox's sleep handshake (so a
    /// message posted meanwhile wakes it, or keeps it from blocking) and
    /// drains the inbox after.
    fn turn(
        &self,
        timeout: Option<Duration>,
        pending: impl Fn() -> bool,
        peers_awake: impl Fn() -> bool,
    ) {
        let just_polled = JUST_POLLED.replace(false);
        if timeout == Some(Duration::ZERO) {
            if waiters() > 0 && !just_polled {
                self.poll_events(timeout);
            }
            return;
        }
        if self.spin(timeout, &pending, &peers_awake) {
            // A message or work came while it spun: a zero poll (for the
            // fds' events), and the loop runs what the drain made ready.
            if waiters() > 0 {
                self.poll_events(Some(Duration::ZERO));
            }
            self.drain_inbox();
            return;
        }
        let timeout = match self.inbox.sleep(&pending) {
            true => timeout,
            false => Some(Duration::ZERO),
        };
        self.poll_events(timeout);
        self.inbox.woke();
        JUST_POLLED.set(timeout != Some(Duration::ZERO));
        // The loop runs what this made ready before its next turn.
        self.drain_inbox();
    }

    /// Before a blocking poll: when another thread posted here since the
    /// last one and `peers_awake()` (another cord runs, spins, or is being
    /// woken), polls the inbox (and `pending`) while that lasts, for at
    /// most [`SPIN`] (or `timeout`, when shorter); says whether something
    /// came. While it spins the cord is not marked asleep, so posters do
    /// not write its `eventfd`: two cords that exchange messages hand them
    /// over with no syscall and no sleep on either side (a wake through
    /// the `eventfd` costs tens of microseconds of CPU on a VM, most of it
    /// the IPI that wakes the sleeping CPU).
    ///
    /// An idle cord does not spin (nothing was posted since it last
    /// slept), nor one whose peers all sleep (a reply would come only after
    /// their own wake). A spin that runs out costs its time for nothing
    /// (the peer computes, or has no core to run on: on an oversubscribed
    /// machine spinning takes the core the peer waits for), so after `k` in
    /// a row the next `2^k` blocking polls (`k` at most [`MAX_BACKOFF`])
    /// skip it; one that catches a message starts over.
    fn spin(
        &self,
        timeout: Option<Duration>,
        pending: &impl Fn() -> bool,
        peers_awake: &impl Fn() -> bool,
    ) -> bool {
        if !self.posted.replace(false) {
            return false;
        }
        if self.spin_skips.get() > 0 {
            self.spin_skips.set(self.spin_skips.get() - 1);
            return false;
        }
        if !peers_awake() {
            return false;
        }
        let end = Instant::now() + timeout.map_or(SPIN, |t| t.min(SPIN));
        loop {
            for _ in 0..16 {
                if self.inbox.has_msgs() {
                    self.spin_fails.set(0);
                    return true;
                }
                std::hint::spin_loop();
            }
            if pending() {
                self.spin_fails.set(0);
                return true;
            }
            if !peers_awake() {
                return false;
            }
            if Instant::now() >= end {
                let fails = (self.spin_fails.get() + 1).min(MAX_BACKOFF);
                self.spin_fails.set(fails);
                self.spin_skips.set(1 << fails);
                return false;
            }
        }
    }

    /// Acts on every message in the inbox (outside any fiber); returns
    /// whether there was any.
    fn drain_inbox(&self) -> bool {
        if !self.inbox.has_msgs() {
            return false;
        }
        self.posted.set(true);
        let mut spare = self.spare.take();
        self.inbox.drain(&mut spare);
        self.spare.replace(spare);
        true
    }
}
