//! Running one test of the current test binary alone in a child process,
//! for tests that end the process (a stack overflow), take it to a
//! process-wide limit (memory maps) where nothing else may run, or need a
//! setting read once per process (stack arenas switched off).

use std::process::{Command, Output};

/// The variable that tells the child which test it runs.
const CHILD: &str = "LUAFIBER_TEST_CHILD";

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
