//! What the C module tests share: the test modules (`tests/cmod/*.c`),
//! built into shared objects with the C compiler (`$CC`, else `cc`) at
//! test time, and runs of the `luafiber` binary with a clean environment.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

pub const EXE: &str = env!("CARGO_BIN_EXE_luafiber");

/// The Lua version C modules are built for: "5.1" (LuaJIT) or "5.4".
pub const LUA_VERSION: &str = if cfg!(feature = "lua54") {
    "5.4"
} else {
    "5.1"
};

/// Debian's multiarch directory name.
pub const MULTIARCH: &str = if cfg!(target_arch = "aarch64") {
    "aarch64-linux-gnu"
} else {
    "x86_64-linux-gnu"
};

/// The search-path variables the binary reads, cleared for every run.
const PATH_VARS: [&str; 4] = ["LUA_PATH", "LUA_CPATH", "LUA_PATH_5_4", "LUA_CPATH_5_4"];

/// A directory of its own for one test, under the target's temp dir.
pub fn scratch(what: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cmod-{LUA_VERSION}"))
        .join(format!("{what}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds `tests/cmod/NAME.c` into `NAME.so` in a fresh directory, against
/// `include/module.h` and the test's Lua declarations; returns the
/// directory (for `LUA_CPATH=DIR/?.so`).
pub fn build(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = scratch(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(&cc);
    cmd.args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-std=c99"])
        .arg("-I")
        .arg(root.join("tests/cmod"))
        .arg("-I")
        .arg(root.join("include"))
        .arg("-o")
        .arg(dir.join(format!("{name}.so")))
        .arg(root.join(format!("tests/cmod/{name}.c")));
    if cfg!(feature = "lua54") {
        cmd.arg("-DLUA54");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        out.status.success(),
        "{cc} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// What a run of the binary gave.
pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `luafiber -e CODE` with the search-path variables cleared, then
/// `env` set.
pub fn luafiber(code: &str, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(EXE);
    for v in PATH_VARS {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied()).arg("-e").arg(code);
    let out = cmd.output().unwrap();
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `code` with the module directory `dir` first in `LUA_CPATH` and
/// asserts a clean run printing `stdout`.
pub fn assert_prints(dir: &Path, code: &str, stdout: &str) {
    let cpath = format!("{}/?.so;;", dir.display());
    let run = luafiber(code, &[("LUA_CPATH", &cpath), ("LUA_CPATH_5_4", &cpath)]);
    assert_eq!(run.stdout, stdout, "stderr: {}", run.stderr);
    assert_eq!(run.status, 0, "stderr: {}", run.stderr);
}
