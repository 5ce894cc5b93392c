//! [`Builder`]: the settings of a several-cord [`Runtime`], and its start.

use std::io;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use crossbeam_deque::Worker;
use luafiber_fiber as fiber;

use super::runtime::Runtime;
use super::shared::{CordRef, Shared};
use super::worker::{self, CordFn, Start};

/// Settings for a several-cord [`Runtime`]: how many cords, their fibers'
/// stacks, their threads' names, and code run on each cord as it starts
/// and stops. Made by [`crate::Builder::cords`] (so
/// `Runtime::builder().stack_size(..).cords(n)` carries the stack
/// settings).
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{cord, Runtime};
/// use std::cell::Cell;
///
/// thread_local! {
///     // Per-cord state, made by the init code (a Lua state, say).
///     static GREETING: Cell<Option<&'static str>> = const { Cell::new(None) };
/// }
/// let rt = Runtime::builder()
///     .stack_size(64 * 1024)
///     .cords(2)
///     .on_cord_start(|i| GREETING.set(Some(if i == 0 { "hello" } else { "hi" })))
///     .build()
///     .unwrap();
/// let h = rt.spawn_on(1, || GREETING.get());
/// assert_eq!(h.join().unwrap(), Some("hi"));
/// ```
#[derive(Clone)]
pub struct Builder {
    cords: usize,
    config: fiber::Config,
    name: String,
    on_start: Option<CordFn>,
    on_stop: Option<CordFn>,
}

impl Builder {
    pub(crate) fn new(cords: usize, config: fiber::Config) -> Builder {
        Builder {
            cords,
            config,
            name: "luafiber-cord".into(),
            on_start: None,
            on_stop: None,
        }
    }

    /// How many cords to start (at least 1).
    pub fn cords(mut self, n: usize) -> Builder {
        self.cords = n;
        self
    }

    /// The cords' thread names: `prefix` and the cord's index
    /// (`luafiber-cord-0`, ...). Default `luafiber-cord`.
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Builder {
        self.name = prefix.into();
        self
    }

    /// Code to run on each cord's thread as it starts, given the cord's
    /// index, outside any fiber, before the cord takes any work (make the
    /// cord's Lua state here, in a thread-local). It may spawn fibers on
    /// the cord (they run once the cord serves) and use
    /// [`Handle::current`](super::Handle::current). A panic there fails
    /// [`build`](Builder::build).
    pub fn on_cord_start(mut self, f: impl Fn(usize) + Send + Sync + 'static) -> Builder {
        self.on_start = Some(Arc::new(f));
        self
    }

    /// Code to run on each cord's thread after its loop has ended (at the
    /// shutdown), outside any fiber, given the cord's index. A panic there
    /// is logged.
    pub fn on_cord_stop(mut self, f: impl Fn(usize) + Send + Sync + 'static) -> Builder {
        self.on_stop = Some(Arc::new(f));
        self
    }

    /// Starts the cords, each with its own scheduler and event loop, and
    /// runs each one's [`on_cord_start`](Builder::on_cord_start) code; returns
    /// once every cord serves.
    ///
    /// # Errors
    ///
    /// When a thread or a cord's event loop cannot be made, or a cord's
    /// start code panics (the error names the cord and gives the panic's
    /// message); the cords already started are shut down.
    ///
    /// # Panics
    ///
    /// When the number of cords is 0.
    pub fn build(self) -> io::Result<Runtime> {
        let n = self.cords;
        assert!(
            n > 0,
            "cord::Builder::build: a runtime needs at least one cord"
        );
        let (inbox_tx, inbox_rx) = mpsc::channel();
        let (init_tx, init_rx) = mpsc::channel();
        let mut threads = Vec::with_capacity(n);
        let mut shared_txs = Vec::with_capacity(n);
        let mut stealers = Vec::with_capacity(n);
        for index in 0..n {
            let worker = Worker::new_fifo();
            stealers.push(worker.stealer());
            let (shared_tx, shared_rx) = mpsc::channel();
            let start = Start {
                index,
                worker,
                config: self.config,
                on_start: self.on_start.clone(),
                on_stop: self.on_stop.clone(),
                inbox_tx: inbox_tx.clone(),
                shared_rx,
                init_tx: init_tx.clone(),
            };
            let t = thread::Builder::new()
                .name(format!("{}-{index}", self.name))
                .spawn(move || worker::main(start))?;
            threads.push(t);
            shared_txs.push(shared_tx);
        }
        drop((inbox_tx, init_tx));
        let mut inboxes = vec![None; n];
        for _ in 0..n {
            let (i, inbox) = inbox_rx
                .recv()
                .map_err(|_| io::Error::other("a cord ended as it started"))?;
            let inbox = inbox.map_err(|e| io::Error::other(format!("cord {i}: {e}")))?;
            inboxes[i] = Some(inbox);
        }
        let cords = inboxes
            .into_iter()
            .zip(stealers)
            .map(|(inbox, stealer)| {
                CordRef::new(inbox.expect("every cord sent its inbox"), stealer)
            })
            .collect();
        let shared = Arc::new(Shared::new(cords));
        for tx in shared_txs {
            let _ = tx.send(shared.clone());
        }
        let rt = Runtime::new(shared, threads);
        let mut failed = None;
        for _ in 0..n {
            match init_rx.recv() {
                Ok((_, Ok(()))) => {}
                Ok((i, Err(msg))) => {
                    failed.get_or_insert_with(|| format!("cord {i}: start code panicked: {msg}"));
                }
                Err(_) => {
                    failed.get_or_insert_with(|| "a cord ended as it started".into());
                }
            }
        }
        match failed {
            None => Ok(rt),
            Some(msg) => {
                rt.shutdown_timeout(Duration::from_secs(1));
                Err(io::Error::other(msg))
            }
        }
    }
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("cord::Builder")
            .field("cords", &self.cords)
            .field("stack_size", &self.config.stacks.stack_size)
            .field("thread_name", &self.name)
            .finish_non_exhaustive()
    }
}
