//! luafiber's `net.box` against a real Tarantool 2.6 server that each test
//! starts (`tests/netbox/server.lua`: spaces with a secondary index,
//! functions that push, a user with a password), on loopback, on a port
//! chosen free. Skipped, saying so, when `tarantool` is not installed
//! (`scripts/setup.sh` installs it).
//!
//! The same suite against luafiber's own IPROTO server waits for that
//! server (the `iproto` issue's phase B).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

#[path = "../fiber/tests/support/skip.rs"]
mod skip;

const EXE: &str = env!("CARGO_BIN_EXE_luafiber");

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/netbox")
}

/// Whether `tarantool` runs here.
fn have_tarantool() -> bool {
    Command::new("tarantool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A port no one listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Tarantool server, killed on drop.
struct Server {
    child: Child,
    /// A port on 127.0.0.1, or `unix/:PATH`.
    listen: String,
    dir: PathBuf,
}

impl Server {
    /// Starts `server.lua` on `port` in `dir` and waits (bounded) until it
    /// listens.
    fn start(port: u16, dir: &Path) -> Server {
        Server::start_at(&port.to_string(), dir)
    }

    /// Starts `server.lua` listening on `listen` (a port, or `unix/:PATH`)
    /// in `dir` and waits (bounded) until it listens.
    fn start_at(listen: &str, dir: &Path) -> Server {
        std::fs::create_dir_all(dir).unwrap();
        let mut child = Command::new("tarantool")
            .arg(scripts().join("server.lua"))
            .arg(listen)
            .arg(dir)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let lines = lines_of(out);
        let line = lines.recv_timeout(Duration::from_secs(60));
        assert!(
            matches!(&line, Ok(l) if l.starts_with("PORT")),
            "the server did not start: {line:?}"
        );
        Server {
            child,
            listen: listen.to_owned(),
            dir: dir.to_owned(),
        }
    }

    fn uri(&self) -> String {
        if self.listen.starts_with("unix/:") {
            self.listen.clone()
        } else {
            format!("127.0.0.1:{}", self.listen)
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The lines of `r`, read on a thread, so reads can be bounded.
fn lines_of(r: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A fresh directory for a server of test `name`.
fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("netbox-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs a client script with `args`, bounded; its status and output.
fn run_client(script: &str, args: &[&str]) -> (i32, String, String) {
    let child = Command::new("timeout")
        .arg("120")
        .arg(EXE)
        .arg(scripts().join(script))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_client_suite_against_tarantool() {
    if !have_tarantool() {
        skip::skipped("tarantool is not installed (scripts/setup.sh installs it)");
        return;
    }
    let server = Server::start(free_port(), &workdir("suite"));
    let (status, out, err) = run_client("client.lua", &[&server.uri()]);
    assert_eq!(status, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.trim_end().starts_with("ok "), "{out}");
    if !cfg!(feature = "luajit") {
        eprintln!("note: on Lua 5.4 the buffer checks read the ibuf without ffi");
    }
}

/// The same suite with `unix/:PATH` URIs (Tarantool's form of a Unix
/// socket's address), the server listening on that socket.
#[test]
fn the_client_suite_over_a_unix_socket() {
    if !have_tarantool() {
        skip::skipped("tarantool is not installed (scripts/setup.sh installs it)");
        return;
    }
    let dir = workdir("unix");
    let listen = format!("unix/:{}", dir.join("tarantool.sock").display());
    let server = Server::start_at(&listen, &dir);
    let (status, out, err) = run_client("client.lua", &[&server.uri()]);
    assert_eq!(status, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.trim_end().starts_with("ok "), "{out}");
}

#[test]
fn a_reconnect_after_the_server_is_killed_and_started_again() {
    if !have_tarantool() {
        skip::skipped("tarantool is not installed (scripts/setup.sh installs it)");
        return;
    }
    let dir = workdir("reconnect");
    let mut server = Server::start(free_port(), &dir);
    let listen = server.listen.clone();
    let mut client = Command::new("timeout")
        .arg("120")
        .arg(EXE)
        .arg(scripts().join("reconnect.lua"))
        .arg(server.uri())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let lines = lines_of(client.stdout.take().unwrap());
    let next = || {
        lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_default()
    };
    assert_eq!(next(), "READY");
    server.kill();
    assert_eq!(next(), "DOWN");
    let _server = Server::start_at(&listen, &server.dir);
    assert_eq!(next(), "ok");
    assert!(client.wait().unwrap().success());
}

#[test]
fn a_pairs_loop_allocates_nothing_beyond_its_messages() {
    if !have_tarantool() {
        skip::skipped("tarantool is not installed (scripts/setup.sh installs it)");
        return;
    }
    let server = Server::start(free_port(), &workdir("pairs"));
    let (status, out, err) = run_client("pairs_alloc.lua", &[&server.uri()]);
    assert_eq!(status, 0, "stdout: {out}\nstderr: {err}");
    // Tarantool 2.6 prints 83 here (its iterator's state table and more).
    assert!(out.contains("pairs_bytes 0\n"), "{out}");
}

/// A connect that fails before any socket (a number host, arguments the
/// transport refuses) ends in state `error` with the reason, never stays
/// `initial` with its worker fiber dead; no server needed.
#[test]
fn a_connect_that_fails_early_reports_the_error() {
    let code = r#"
        local net = require('net.box')
        local clock = require('clock')
        -- A number host is text, as Tarantool's tostring makes it.
        local t0 = clock.monotonic()
        local c = net.connect(3321, 5, {connect_timeout = 2})
        assert(c.host == '3321', tostring(c.host))
        assert(c.state == 'error' and type(c.error) == 'string',
               tostring(c.state) .. ' ' .. tostring(c.error))
        assert(clock.monotonic() - t0 < 30)
        assert(not c:is_connected())
        -- An error raised by the worker's connect step: state `error`
        -- with that error.
        c = net.connect(true, 3301, {wait_connected = 10})
        assert(c.state == 'error', tostring(c.state))
        assert(c.error:find('Usage: lib.connect', 1, true), tostring(c.error))
        assert(c:wait_connected(1) == false)
        local ok, e = pcall(c.ping, c)
        assert(not ok or e == false, tostring(e))
        c:close()
        print('ok')
        os.exit(0)
    "#;
    run_e_ok(code, "");
}

/// Against Tarantool 2.6 (greeting below 2.10.0) net.box sends no ID: the
/// peer has protocol version 0 and no features, `conn:watch` registers a
/// watcher that never runs (nothing is sent, as master's), and
/// `watch_once` gets 2.6's error 48.
#[test]
fn watchers_against_tarantool_26_stay_quiet() {
    if !have_tarantool() {
        skip::skipped("tarantool is not installed (scripts/setup.sh installs it)");
        return;
    }
    let server = Server::start(free_port(), &workdir("watch26"));
    let code = r#"
        local net = require('net.box')
        local fiber = require('fiber')
        local c = net.connect(os.getenv('URI'))
        assert(c.state == 'active', tostring(c.error))
        assert(c.peer_protocol_version == 0)
        assert(c.peer_protocol_features.watchers == false)
        local ran = 0
        local w = c:watch('k', function() ran = ran + 1 end)
        fiber.sleep(0.1)
        assert(ran == 0 and c.state == 'active')
        local ok, e = pcall(c.watch_once, c, 'k')
        assert(not ok and e.code == 48, tostring(e))
        w:unregister()
        assert(c:ping())
        c:close()
        print('ok')
        os.exit(0)
    "#;
    run_e_ok(code, &server.uri());
}

/// Runs `luafiber -e code` (at most 120 s) with `URI` set to `uri` in its
/// environment; it must exit 0 having printed `ok`.
fn run_e_ok(code: &str, uri: &str) {
    let out = Command::new("timeout")
        .arg("120")
        .arg(EXE)
        .arg("-e")
        .arg(code)
        .env("URI", uri)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("ok"),
        "status {:?}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
}
