//! Saying that a test skipped. libtest captures what a test prints with
//! `println!` and `eprintln!` and shows it only when the test fails, so a
//! test that skips that way reports a silent "ok". [`skipped`] writes to
//! the process's stderr itself, past the capture: the line shows in every
//! run, next to the test's name.

use std::io::Write;

/// Reports that the calling test skips, and why (then the test returns).
pub fn skipped(why: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(std::io::stderr().lock(), "test {test} ... skipped: {why}");
}
