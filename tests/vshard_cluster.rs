//! vshard's router on a real cluster (issue 28): 2 replica sets x 2
//! Tarantool storages (`tests/vshard/storage.lua`, config in
//! `tests/vshard/cluster.lua`) on loopback, and a router running
//! `tests/vshard/router_test.lua` on an interpreter given as a parameter:
//! `tarantool` (proves the harness) or `luafiber`.
//!
//! The router script walks the API (cfg, bootstrap, callrw, callro, callbro,
//! callre, route, routeall, info, discovery_wakeup, bucket_count,
//! map_callrw), then asks this driver to kill replica set 1's master and to
//! start it again (`@@kill NAME` / `@@start NAME` on its stdout, answered by
//! an ack file) and checks reads through the replica, failing writes and the
//! recovery. Its `step NAME MS DETAILS` lines are printed here.
//!
//! Needs `VSHARD_PATH` (a checkout of github.com/tarantool/vshard at a tag,
//! README "vshard") and `tarantool` on `PATH`; without them each test prints
//! `skipped: ...` and passes. The luafiber half first runs
//! `tests/vshard/probe.lua` on the binary and skips, naming what is missing,
//! while luafiber cannot load `vshard.router` yet.
//!
//! Processes: every storage and router is a child of this test, with
//! `PR_SET_PDEATHSIG` (killed if the test thread dies) and killed on drop
//! (failure, panic or timeout); every wait is bounded.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "../fiber/tests/support/skip.rs"]
mod skip;

/// The storages, in the order of `VSHARD_PORTS` (cluster.lua).
const NAMES: [&str; 4] = ["s1a", "s1b", "s2a", "s2b"];

/// The bound of one router run, all steps together.
const ROUTER_TIMEOUT: Duration = Duration::from_secs(240);

/// The bound of a storage's start (vshard.storage.cfg and schema).
const STORAGE_TIMEOUT: Duration = Duration::from_secs(60);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What the cluster needs, or why the test skips.
fn prerequisites() -> Result<PathBuf, String> {
    let vshard = match std::env::var_os("VSHARD_PATH") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            return Err(
                "VSHARD_PATH is unset (a checkout of github.com/tarantool/vshard \
                 at a tag; README, \"vshard\")"
                    .into(),
            )
        }
    };
    if !vshard.join("vshard/router/init.lua").is_file() {
        return Err(format!(
            "VSHARD_PATH={} has no vshard/router/init.lua",
            vshard.display()
        ));
    }
    match Command::new("tarantool").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(vshard),
        _ => Err("tarantool is not installed (scripts/setup.sh)".into()),
    }
}

/// Four free loopback ports: each bound to port 0 and released together.
fn free_ports() -> [u16; 4] {
    let ls: Vec<TcpListener> = (0..4)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let mut ports = [0; 4];
    for (p, l) in ports.iter_mut().zip(&ls) {
        *p = l.local_addr().unwrap().port();
    }
    ports
}

/// A command that dies with the thread that spawned it (the test's).
fn child_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    // SAFETY: the closure runs in the forked child before exec and calls
    // only prctl(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// Kills and reaps a child (it may have exited already).
fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The last lines of a log file, for failure messages.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The four storages; each killed on drop.
struct Cluster {
    dir: PathBuf,
    vshard: PathBuf,
    ports: [u16; 4],
    storages: HashMap<&'static str, Child>,
}

impl Cluster {
    /// A fresh directory and free ports; no process yet.
    fn new(what: &str, vshard: PathBuf) -> Cluster {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("vshard")
            .join(format!("{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Cluster {
            dir,
            vshard,
            ports: free_ports(),
            storages: HashMap::new(),
        }
    }

    fn ports_env(&self) -> String {
        let p: Vec<String> = self.ports.iter().map(u16::to_string).collect();
        p.join(",")
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("VSHARD_PATH", &self.vshard)
            .env("VSHARD_PORTS", self.ports_env())
            .env("VSHARD_DIR", &self.dir);
    }

    /// Starts storage `name` (its log: DIR/NAME.log, appended).
    fn spawn(&mut self, name: &'static str) {
        let _ = std::fs::remove_file(self.dir.join(name).join("ready"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{name}.log")))
            .unwrap();
        let mut cmd = child_command("tarantool");
        cmd.arg(root().join("tests/vshard/storage.lua"))
            .arg(name)
            .arg(self.dir.join(name))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        self.env(&mut cmd);
        let child = cmd.spawn().expect("spawn tarantool");
        self.storages.insert(name, child);
    }

    /// Waits (bounded) until storage `name` wrote its ready file.
    fn wait_ready(&mut self, name: &str) {
        let ready = self.dir.join(name).join("ready");
        let deadline = Instant::now() + STORAGE_TIMEOUT;
        while !ready.exists() {
            let child = self.storages.get_mut(name).unwrap();
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "storage {name} exited ({status}):\n{}",
                    tail(&self.dir.join(format!("{name}.log")), 20)
                );
            }
            assert!(
                Instant::now() < deadline,
                "storage {name} not ready within {STORAGE_TIMEOUT:?}:\n{}",
                tail(&self.dir.join(format!("{name}.log")), 20)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the four storages and waits until each is ready.
    fn start_all(&mut self) {
        for name in NAMES {
            self.spawn(name);
        }
        for name in NAMES {
            self.wait_ready(name);
        }
    }

    /// Kills storage `name` (SIGKILL) and reaps it.
    fn kill(&mut self, name: &str) {
        if let Some(mut child) = self.storages.remove(name) {
            stop(&mut child);
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, mut child) in self.storages.drain() {
            stop(&mut child);
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A router process; killed on drop.
struct Router(Child);

impl Drop for Router {
    fn drop(&mut self) {
        stop(&mut self.0);
    }
}

/// One `step` line of the router: name, milliseconds, details.
struct Step {
    name: String,
    ms: f64,
    detail: String,
}

/// Runs router_test.lua on `interpreter` against a started cluster, serving
/// its kill and start commands; returns its steps. Panics (after killing
/// everything through the guards) on a failure or after ROUTER_TIMEOUT.
fn run_router(cluster: &mut Cluster, interpreter: &Path) -> Vec<Step> {
    let log_path = cluster.dir.join("router.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut cmd = child_command(interpreter);
    cmd.arg(root().join("tests/vshard/router_test.lua"))
        .current_dir(&cluster.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    cluster.env(&mut cmd);
    let mut router = Router(cmd.spawn().expect("spawn the router"));
    let stdout = router.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let s1a_log = cluster.dir.join("s1a.log");
    let failure = |why: String| -> ! {
        panic!(
            "router on {}: {why}\nrouter log:\n{}\ns1a log:\n{}",
            interpreter.display(),
            tail(&log_path, 40),
            tail(&s1a_log, 10)
        )
    };
    let deadline = Instant::now() + ROUTER_TIMEOUT;
    let mut steps = Vec::new();
    let mut acks = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                failure(format!("no end within {ROUTER_TIMEOUT:?}"))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = router.0.wait().unwrap();
                failure(format!("exited ({status}) before `done`"))
            }
        };
        if line == "done" {
            break;
        }
        if let Some(rest) = line.strip_prefix("step ") {
            let mut it = rest.splitn(3, ' ');
            let name = it.next().unwrap_or_default().to_string();
            let ms = it.next().and_then(|m| m.parse().ok()).unwrap_or(-1.0);
            let detail = it.next().unwrap_or_default().to_string();
            eprintln!("  {name:<18} {ms:>9.1} ms  {detail}");
            steps.push(Step { name, ms, detail });
        } else if let Some(cmd) = line.strip_prefix("@@") {
            let (what, name) = cmd.split_once(' ').unwrap_or((cmd, ""));
            let name = *NAMES
                .iter()
                .find(|n| **n == name)
                .unwrap_or_else(|| failure(format!("unknown storage in {line:?}")));
            match what {
                "kill" => cluster.kill(name),
                "start" => {
                    cluster.spawn(name);
                    cluster.wait_ready(name);
                }
                _ => failure(format!("unknown command {line:?}")),
            }
            acks += 1;
            std::fs::write(cluster.dir.join(format!("ack.{acks}")), "").unwrap();
        } else {
            eprintln!("  router: {line}");
        }
    }
    // `done` was printed: the router exits by itself (bounded).
    let exit_deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = router.0.try_wait().unwrap() {
            assert!(status.success(), "router exited with {status}");
            break;
        }
        if Instant::now() > exit_deadline {
            failure("did not exit after `done`".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    steps
}

/// The steps every router must pass, in order.
const STEPS: [&str; 18] = [
    "cfg",
    "bootstrap",
    "bucket_count",
    "discovery_wakeup",
    "callrw",
    "callro",
    "callbro",
    "callre",
    "route",
    "routeall",
    "info",
    "map_callrw",
    "kill_master",
    "callro_after_kill",
    "callrw_fails",
    "restart_master",
    "callrw_recovers",
    "info_after",
];

fn cluster_test(what: &str, interpreter: &Path) {
    let vshard = match prerequisites() {
        Ok(v) => v,
        Err(why) => {
            skip::skipped(&why);
            return;
        }
    };
    let started = Instant::now();
    let mut cluster = Cluster::new(what, vshard);
    cluster.start_all();
    eprintln!(
        "vshard cluster ({what} router): 4 storages ready in {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    let steps = run_router(&mut cluster, interpreter);
    let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, STEPS, "the router's steps");
    assert!(steps.iter().all(|s| s.ms >= 0.0 && !s.detail.is_empty()));
    eprintln!(
        "vshard cluster ({what} router): passed in {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
}

/// The harness proven with Tarantool's own router.
#[test]
fn tarantool_router() {
    cluster_test("tarantool", Path::new("tarantool"));
}

/// Why luafiber cannot run vshard's router yet (probe.lua's answer), or
/// None when it can.
fn luafiber_missing(exe: &Path, vshard: &Path) -> Option<String> {
    let out = child_command(exe)
        .arg(root().join("tests/vshard/probe.lua"))
        .env("VSHARD_PATH", vshard)
        .stdin(Stdio::null())
        .output()
        .expect("run luafiber");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && stdout.trim_end().ends_with("ok") {
        return None;
    }
    let mut why: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("missing: "))
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if why.is_empty() {
        why.push(stderr.trim());
    }
    Some(why.join("; "))
}

/// vshard's router, unchanged, on luafiber.
#[test]
fn luafiber_router() {
    let exe = Path::new(env!("CARGO_BIN_EXE_luafiber"));
    if let Ok(vshard) = prerequisites() {
        if let Some(why) = luafiber_missing(exe, &vshard) {
            skip::skipped(&format!("luafiber cannot run vshard.router yet: {why}"));
            return;
        }
    }
    cluster_test("luafiber", exe);
}
