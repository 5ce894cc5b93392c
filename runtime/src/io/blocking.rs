//! A small pool of threads for calls that block (name resolution, and any
//! the embedder has): [`run_blocking`] hands a closure to the pool and parks
//! the calling fiber until its result comes back through the cord's waker.
//! [`getaddrinfo`] runs on it, so a resolution never blocks the cord.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use luafiber_fiber as fiber;

use crate::io::error;
use crate::io::reactor;
use crate::io::source::Waiting;
use crate::io::waker::{CordWaker, JOBS};

/// Threads the pool grows to at most.
const MAX_THREADS: usize = 4;
/// How long an idle pool thread waits for work before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct PoolState {
    jobs: VecDeque<Job>,
    threads: usize,
    idle: usize,
}

#[derive(Default)]
struct Pool {
    state: Mutex<PoolState>,
    work: Condvar,
}

static POOL: OnceLock<Pool> = OnceLock::new();

impl Pool {
    fn submit(&'static self, job: Job) -> io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.jobs.push_back(job);
        if st.idle > 0 {
            self.work.notify_one();
            return Ok(());
        }
        if st.threads < MAX_THREADS {
            thread::Builder::new()
                .name("luafiber-blocking".into())
                .spawn(move || self.work_loop())
                .inspect_err(|_| drop(st.jobs.pop_back()))?;
            st.threads += 1;
        }
        Ok(())
    }

    fn work_loop(&self) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(job) = st.jobs.pop_front() {
                drop(st);
                job();
                st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                continue;
            }
            st.idle += 1;
            let (g, to) = self
                .work
                .wait_timeout(st, IDLE_EXIT)
                .unwrap_or_else(|e| e.into_inner());
            st = g;
            st.idle -= 1;
            if to.timed_out() && st.jobs.is_empty() {
                st.threads -= 1;
                return;
            }
        }
    }
}

/// Runs `f` on a thread of a small shared pool (up to 4 threads, made on
/// demand, each ending after 10 s idle) and parks the calling fiber until
/// it returns, or until `timeout` runs out (`None`: no limit); other fibers
/// run meanwhile (it always yields, however quick `f` is). Returns `f`'s
/// value. Outside any fiber, `f` runs on the caller's thread. A cancellation point: a cancelled or timed-out caller
/// returns at once, and `f` runs on to its end, its value dropped.
///
/// # Errors
///
/// [`io::ErrorKind::TimedOut`]; a cancel (see
/// [`is_cancelled`](crate::io::is_cancelled)); no thread could be made, or
/// the event loop cannot be made.
///
/// # Panics
///
/// When `f` panics: the panic goes on in the calling fiber.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{io, Runtime};
///
/// let rt = Runtime::new();
/// let v = rt.block_on(|| io::run_blocking(|| 6 * 7, None).unwrap());
/// assert_eq!(v, 42);
/// ```
pub fn run_blocking<T, F>(f: F, timeout: Option<Duration>) -> io::Result<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if fiber::current().is_none() {
        return Ok(f());
    }
    let waker: CordWaker = crate::io::waker()?;
    let cond = reactor::with(|r| r.jobs.clone())?;
    let slot: Arc<Mutex<Option<thread::Result<T>>>> = Arc::new(Mutex::new(None));
    let out = slot.clone();
    let job = move || {
        let r = panic::catch_unwind(AssertUnwindSafe(f));
        *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        waker.notify(JOBS);
    };
    POOL.get_or_init(Pool::default).submit(Box::new(job))?;
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    // The caller parks before it first looks at the slot, even when the
    // pool was quicker: the job's wake comes through the event loop, which
    // turns only once this fiber yields, so it is not missed, and the call
    // yields every time, as Tarantool's `coio_call` does (others run while
    // it waits, whatever the timing).
    let mut parked = false;
    loop {
        if parked {
            if let Some(r) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
                return match r {
                    Ok(v) => Ok(v),
                    Err(payload) => panic::resume_unwind(payload),
                };
            }
        }
        parked = true;
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left == Some(Duration::ZERO) {
            return Err(error::timed_out());
        }
        let _waiting = Waiting::new(None);
        match cond.wait(left) {
            Ok(_) => {}
            Err(fiber::Error::Cancelled) => return Err(error::cancelled()),
            Err(e) => return Err(io::Error::other(e)),
        }
    }
}

/// What [`getaddrinfo`] should look for: `ai_flags`, `ai_family`,
/// `ai_socktype` and `ai_protocol` of `getaddrinfo(3)` (libc's constants;
/// 0 for any).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hints {
    /// `AI_PASSIVE`, `AI_CANONNAME`, `AI_NUMERICHOST`, ... or 0.
    pub flags: i32,
    /// `AF_INET`, `AF_INET6`, or 0 (`AF_UNSPEC`).
    pub family: i32,
    /// `SOCK_STREAM`, `SOCK_DGRAM`, or 0.
    pub socktype: i32,
    /// `IPPROTO_TCP`, `IPPROTO_UDP`, or 0.
    pub protocol: i32,
}

/// One address [`getaddrinfo`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrInfo {
    /// `AF_INET` or `AF_INET6`.
    pub family: i32,
    /// `SOCK_STREAM`, `SOCK_DGRAM`, ...
    pub socktype: i32,
    /// `IPPROTO_TCP`, `IPPROTO_UDP`, ...
    pub protocol: i32,
    /// The address and port.
    pub addr: SocketAddr,
    /// The canonical name, when `AI_CANONNAME` asked for it (first entry).
    pub canonname: Option<String>,
}

/// The error of a failed resolution: `getaddrinfo(3)`'s code (`EAI_*`)
/// and `gai_strerror`'s message; the inner error of the [`io::Error`]
/// that [`getaddrinfo`] returns (kind [`io::ErrorKind::Other`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GaiError {
    /// The `EAI_*` code (`EAI_SYSTEM`'s errno is in the message).
    pub code: i32,
    /// The message, as `gai_strerror` gives it.
    pub message: String,
}

impl std::fmt::Display for GaiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GaiError {}

impl GaiError {
    /// `gai_strerror(3)` of the code, alone ("Name or service not known";
    /// [`message`](GaiError::message) has more words, or the errno's
    /// message for `EAI_SYSTEM`): what Tarantool puts after
    /// "getaddrinfo: ".
    pub fn strerror(&self) -> String {
        // SAFETY: gai_strerror gives a static NUL-terminated message for
        // any code.
        let m = unsafe { std::ffi::CStr::from_ptr(libc::gai_strerror(self.code)) };
        m.to_string_lossy().into_owned()
    }
}

/// Resolves `host` and `service` (a port number or a service name; either
/// may be `None`, not both) with `getaddrinfo(3)` on the
/// [`run_blocking`] pool, so the cord goes on meanwhile; the calling fiber
/// parks at most `timeout` (`None`: no limit). Outside any fiber it blocks
/// the thread. Tarantool's `coio_getaddrinfo` (Lua's `socket.getaddrinfo`).
///
/// # Errors
///
/// A [`GaiError`] inside an [`io::Error`] when resolution fails (an
/// unknown host: `EAI_NONAME`); [`io::ErrorKind::TimedOut`]; a cancel; the
/// errors of [`run_blocking`].
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{io, Runtime};
///
/// let rt = Runtime::new();
/// let hints = io::Hints { socktype: libc::SOCK_STREAM, ..Default::default() };
/// let addrs = rt.block_on(move || io::getaddrinfo(Some("127.0.0.1"), Some("80"), hints, None));
/// assert_eq!(addrs.unwrap()[0].addr, "127.0.0.1:80".parse().unwrap());
/// ```
pub fn getaddrinfo(
    host: Option<&str>,
    service: Option<&str>,
    hints: Hints,
    timeout: Option<Duration>,
) -> io::Result<Vec<AddrInfo>> {
    let (host, service) = (host.map(str::to_owned), service.map(str::to_owned));
    run_blocking(
        move || resolve(host.as_deref(), service.as_deref(), hints),
        timeout,
    )?
}

/// `getaddrinfo(3)` on the calling thread.
fn resolve(host: Option<&str>, service: Option<&str>, h: Hints) -> io::Result<Vec<AddrInfo>> {
    let hints = dns_lookup::AddrInfoHints {
        flags: h.flags,
        address: h.family,
        socktype: h.socktype,
        protocol: h.protocol,
    };
    let found = dns_lookup::getaddrinfo(host, service, Some(hints)).map_err(|e| {
        let code = e.error_num();
        let message = io::Error::from(e).to_string();
        match code {
            0 => io::Error::other(message),
            code => io::Error::other(GaiError { code, message }),
        }
    })?;
    found
        .map(|a| {
            a.map(|a| AddrInfo {
                family: a.address,
                socktype: a.socktype,
                protocol: a.protocol,
                addr: a.sockaddr,
                canonname: a.canonname,
            })
        })
        .collect()
}
