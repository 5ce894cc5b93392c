//! Running one test of the current test binary alone in a child process,
//! for tests that end the process (a stack overflow), take it to a
//! process-wide limit (memory maps) where nothing else may run, or need a
//! setting read once per process (stack arenas switched off).

use std::process::{Command, Output};

/// The variable that tells the child which test it runs.
const CHILD: &str = "LUAFIBER_TEST_CHILD";

/// The variable that makes [`isolated`] run its body in this process
/// (`scripts/memcheck.sh` sets it: under valgrind, a child would run
/// natively, unchecked; there a crash fails the run anyway).
const INLINE: &str = "LUAFIBER_TEST_INLINE";

/// Whether [`isolated`] bodies run in this process ([`INLINE`] is set).
#[allow(dead_code)]
pub fn inline() -> bool {
    std::env::var_os(INLINE).is_some()
}

/// Whether this process is the child made by [`run_alone`] for `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|t| t == test)
}

/// Runs the test `test` of this binary alone, on one thread, in a child
/// process (in which [`is_child`] is true); returns how it ended.
#[allow(dead_code)]
pub fn run_alone(test: &str) -> Output {
    run_alone_with(test, &[])
}

/// [`run_alone`] with more variables in the child's environment.
pub fn run_alone_with(test: &str, env: &[(&str, &str)]) -> Output {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, test)
        .envs(env.iter().copied())
        .output()
        .expect("the test binary runs")
}

/// Longest a child of [`isolated`] may take before it is taken for hung
/// and killed (a guard against hanging, not a speed check: generous for a
/// loaded machine and for memcheck).
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(600);

/// [`run_alone`], killing the child if it has not ended after `patience`
/// (its output then says so).
#[allow(dead_code)]
pub fn run_alone_within(test: &str, patience: std::time::Duration) -> Output {
    use std::process::Stdio;
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, test)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary runs");
    // Read both pipes on threads of their own, so a chatty child never
    // blocks on a full pipe while we wait.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut b);
        b
    });
    let err_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut b);
        b
    });
    let start = std::time::Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waitpid") {
            break status;
        }
        if start.elapsed() > patience {
            let _ = child.kill();
            killed = true;
            break child.wait().expect("waitpid");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stdout = out_t.join().unwrap_or_default();
    let mut stderr = err_t.join().unwrap_or_default();
    if killed {
        stderr.extend_from_slice(
            format!("\n[killed: still running after {patience:?}: hung]\n").as_bytes(),
        );
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Asserts that the child's one test passed.
#[allow(dead_code)]
pub fn assert_passed(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `body` as the test `test` in a child process of its own (see
/// [`run_alone`]) and asserts that it passed there, so that an abort, a
/// hang (the child is killed after [`PATIENCE`]), or a crash fails the test
/// instead of ending the test binary. In the child, runs `body`; with
/// [`INLINE`] set, runs it here.
#[allow(dead_code)]
pub fn isolated(test: &str, body: impl FnOnce()) {
    if is_child(test) || inline() {
        body();
        return;
    }
    assert_passed(&run_alone_within(test, PATIENCE));
}
