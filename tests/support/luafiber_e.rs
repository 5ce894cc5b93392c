//! Runs the `luafiber` binary of this build on a chunk given with `-e`
//! (the tests that need a process of their own: exit statuses, stderr).

use std::process::Command;

/// Runs `luafiber -e code`: (exit status, stdout, stderr); the status is
/// -1 when a signal ended the process.
///
/// Panics if the binary cannot be started.
pub fn luafiber_e(code: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_luafiber"))
        .arg("-e")
        .arg(code)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
