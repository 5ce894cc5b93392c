//! The harness both sides of benches/embed_tokio share (included with
//! `#[path]`): the load (tokio tasks with calls in flight), the Rust async
//! function Lua awaits, and the measures (calls/s, process CPU per call
//! from `getrusage`).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

/// Tokio tasks making calls.
pub const TASKS: usize = 4;
/// Calls in flight per task.
pub const IN_FLIGHT: usize = 64;
/// The Lua code both sides load.
pub const HANDLERS: &str = include_str!("handlers.lua");

static TOKIO: OnceLock<tokio::runtime::Handle> = OnceLock::new();

/// How [`host_wait`] waits, from `EMBED_TOKIO_WAIT`.
#[derive(Clone, Copy, PartialEq)]
enum Wait {
    /// `spawn` (the default): a new tokio task answers through a oneshot.
    Spawn,
    /// `service`: one long-lived service task answers requests sent to it
    /// over an mpsc channel, each through a oneshot.
    Service,
    /// `yield`: `tokio::task::yield_now` once (a wait with no other task).
    Yield,
}

fn wait_kind() -> Wait {
    static KIND: OnceLock<Wait> = OnceLock::new();
    *KIND.get_or_init(|| match std::env::var("EMBED_TOKIO_WAIT").as_deref() {
        Ok("service") => Wait::Service,
        Ok("yield") => Wait::Yield,
        Ok("spawn") | Err(_) => Wait::Spawn,
        Ok(other) => panic!("EMBED_TOKIO_WAIT={other}: spawn, service or yield"),
    })
}

/// A request to the service task: `x` and where its answer goes.
type Request = (i64, tokio::sync::oneshot::Sender<i64>);

static SERVICE: OnceLock<tokio::sync::mpsc::UnboundedSender<Request>> = OnceLock::new();

/// Keeps `rt`'s handle for [`host_wait`]; with `EMBED_TOKIO_WAIT=service`,
/// starts the service task on it.
fn keep(rt: tokio::runtime::Runtime) -> tokio::runtime::Runtime {
    let _ = TOKIO.set(rt.handle().clone());
    if wait_kind() == Wait::Service {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Request>();
        rt.spawn(async move {
            while let Some((x, answer)) = rx.recv().await {
                let _ = answer.send(x);
            }
        });
        let _ = SERVICE.set(tx);
    }
    rt
}

/// What the workers run before they park (tokio's `on_thread_park`), set
/// by a side before [`tokio_rt`]: luafiber's local calls drive their
/// worker's cord there.
pub static ON_PARK: OnceLock<fn()> = OnceLock::new();

/// The tokio runtime of the bench: 2 worker threads.
pub fn tokio_rt() -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.worker_threads(2).enable_all();
    if let Some(&f) = ON_PARK.get() {
        b.on_thread_park(f);
    }
    keep(b.build().expect("tokio starts"))
}

/// A current-thread tokio runtime, for the `*_instr` binaries: the calls
/// and the tasks `host_wait` spawns all run on the calling thread, so
/// callgrind counts the same work from run to run.
pub fn tokio_rt_current() -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_current_thread();
    b.enable_all();
    if let Some(&f) = ON_PARK.get() {
        b.on_thread_park(f);
    }
    keep(b.build().expect("tokio starts"))
}

/// Makes `n` calls of `call` on `rt` from one task, [`IN_FLIGHT`] at a
/// time, checking each answer with `expect`; returns how many answered
/// (the `*_instr` binaries' fixed amount of work).
pub fn run_calls<F, Fut>(
    rt: &tokio::runtime::Runtime,
    n: i64,
    call: F,
    expect: fn(i64) -> i64,
) -> i64
where
    F: Fn(i64) -> Fut,
    Fut: Future<Output = i64>,
{
    rt.block_on(async {
        let mut flight = FuturesUnordered::new();
        let (mut next, mut done) = (0i64, 0i64);
        while done < n {
            while next < n && flight.len() < IN_FLIGHT {
                let x = next;
                next += 1;
                let c = call(x);
                flight.push(async move { (x, c.await) });
            }
            let (x, r) = flight.next().await.expect("calls in flight");
            assert_eq!(r, expect(x), "call {x}");
            done += 1;
        }
        done
    })
}

/// The Rust async function Lua's `host_wait` awaits (a handler that waits
/// on a service, once): `x` goes to a new tokio task, which answers through
/// a oneshot; with `EMBED_TOKIO_WAIT=service`, to the one service task; with
/// `EMBED_TOKIO_WAIT=yield`, it yields to tokio once and answers itself.
pub async fn host_wait(x: i64) -> i64 {
    let kind = wait_kind();
    if kind == Wait::Yield {
        tokio::task::yield_now().await;
        return x;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    if kind == Wait::Service {
        let service = SERVICE.get().expect("tokio_rt made");
        service.send((x, tx)).expect("the service runs");
    } else {
        TOKIO.get().expect("tokio_rt made").spawn(async move {
            let _ = tx.send(x);
        });
    }
    rx.await.expect("the task answers")
}

/// User + system CPU of the process so far, in seconds.
pub fn cpu_secs() -> f64 {
    // SAFETY: `getrusage` fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs [`TASKS`] tokio tasks, each keeping [`IN_FLIGHT`] calls of `call`
/// in flight, for about `secs`; checks each answer with `expect`. Returns
/// calls/s and the process CPU per call in microseconds.
pub fn load<F, Fut>(
    rt: &tokio::runtime::Runtime,
    secs: f64,
    call: F,
    expect: fn(i64) -> i64,
) -> (f64, f64)
where
    F: Fn(i64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = i64> + Send + 'static,
{
    let calls = Arc::new(AtomicU64::new(0));
    let (cpu0, start) = (cpu_secs(), Instant::now());
    let until = start + Duration::from_secs_f64(secs);
    rt.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let (call, calls) = (call.clone(), calls.clone());
                tokio::spawn(async move {
                    let mut n = 0u64;
                    let mut next = (t * 1_000_000) as i64;
                    let mut flight = FuturesUnordered::new();
                    let mut go = true;
                    loop {
                        while go && flight.len() < IN_FLIGHT {
                            let x = next;
                            next += 1;
                            let c = call(x);
                            flight.push(async move { (x, c.await) });
                        }
                        let Some((x, r)) = flight.next().await else {
                            break;
                        };
                        assert_eq!(r, expect(x), "call {x}");
                        n += 1;
                        if n % 64 == 0 && Instant::now() >= until {
                            go = false;
                        }
                    }
                    calls.fetch_add(n, Ordering::Relaxed);
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("a load task");
        }
    });
    let (cpu, wall) = (cpu_secs() - cpu0, start.elapsed().as_secs_f64());
    let n = calls.load(Ordering::Relaxed) as f64;
    (n / wall, cpu * 1e6 / n)
}

/// What `wait_call(x)` returns.
pub fn wait_expect(x: i64) -> i64 {
    x + 1
}

/// What `work_call(x)` returns.
pub fn work_expect(x: i64) -> i64 {
    (1..=100).map(|i| (i * x).rem_euclid(7)).sum()
}

/// Requests served by the HTTP service.
pub static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// The HTTP service: serves `app` on 127.0.0.1:PORT (the first argument,
/// default 8080) for SECONDS (the second, default 10), then prints
/// `SIDE http REQUESTS CPU_US_PER_REQUEST` (process CPU from `getrusage`).
pub fn serve(side: &str, app: axum::Router) {
    let (port, secs): (u16, f64) = (arg(1, 8080), arg(2, 10.0));
    tokio_rt().block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind");
        let cpu0 = cpu_secs();
        tokio::select! {
            r = axum::serve(listener, app) => r.expect("serve"),
            _ = tokio::time::sleep(Duration::from_secs_f64(secs)) => {}
        }
        let n = REQUESTS.load(Ordering::Relaxed);
        let cpu = cpu_secs() - cpu0;
        println!("{side} http {n} {:.3}", cpu * 1e6 / n.max(1) as f64);
    });
}

/// The `n`th command-line argument, or `default`.
pub fn arg<T: std::str::FromStr>(n: usize, default: T) -> T {
    std::env::args()
        .nth(n)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs case (a) and (b) with the side's calls for the seconds of the
/// first argument (default 3) each, printing one line each:
/// `SIDE CASE calls/s cpu_us_per_call`.
pub fn bench<FA, FutA, FB, FutB>(side: &str, wait: FA, work: FB)
where
    FA: Fn(i64) -> FutA + Clone + Send + 'static,
    FutA: Future<Output = i64> + Send + 'static,
    FB: Fn(i64) -> FutB + Clone + Send + 'static,
    FutB: Future<Output = i64> + Send + 'static,
{
    let secs = arg(1, 3.0);
    let rt = &tokio_rt();
    // A short warm-up of each (the JIT, the pools).
    load(rt, 0.2, wait.clone(), wait_expect);
    load(rt, 0.2, work.clone(), work_expect);
    let (rate, cpu) = load(rt, secs, wait, wait_expect);
    println!("{side} a_wait {rate:.0} {cpu:.3}");
    let (rate, cpu) = load(rt, secs, work, work_expect);
    println!("{side} b_work {rate:.0} {cpu:.3}");
}
