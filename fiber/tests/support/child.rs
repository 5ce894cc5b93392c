//! Running one test of the current test binary alone in a child process,
//! for tests that end the process (a stack overflow) or take it to a
//! process-wide limit (memory maps) where nothing else may run.

use std::process::{Command, Output};

/// The variable that tells the child which test it runs.
const CHILD: &str = "LUAFIBER_TEST_CHILD";

/// Whether this process is the child made by [`run_alone`] for `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|t| t == test)
}

/// Runs the test `test` of this binary alone, on one thread, in a child
/// process (in which [`is_child`] is true); returns how it ended.
pub fn run_alone(test: &str) -> Output {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, test)
        .output()
        .expect("the test binary runs")
}
