//! The command line: `-e` chunks run before the script, in its main fiber;
//! everything after the script is the script's; `-` reads the script from
//! stdin. Each expected output is what `tarantool` 2.6 prints for the same
//! command line, unless the test says otherwise.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const EXE: &str = env!("CARGO_BIN_EXE_luafiber");

/// What a run of the binary gave.
struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

/// Runs `luafiber args...` with `stdin` as its standard input.
fn luafiber(args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(EXE)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A failed write is a child that did not read its stdin.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Writes a script named `name` (unique per test) and returns its path.
fn script(name: &str, code: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, code).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Asserts a clean run with exactly `stdout`.
fn assert_ok(run: &Run, stdout: &str) {
    assert_eq!(run.stdout, stdout, "stderr: {}", run.stderr);
    assert_eq!(run.stderr, "");
    assert_eq!(run.status, 0);
}

/// Asserts a failed run: status 1, exactly `stdout`, `stderr` containing
/// each of `messages`.
fn assert_fails(run: &Run, stdout: &str, messages: &[&str]) {
    assert_eq!(run.stdout, stdout, "stderr: {}", run.stderr);
    for m in messages {
        assert!(
            run.stderr.contains(m),
            "{m:?} not in stderr: {}",
            run.stderr
        );
    }
    assert_eq!(run.status, 1, "stderr: {}", run.stderr);
}

#[test]
fn e_runs_before_the_script_which_gets_the_args() {
    let s = script("e_runs_before.lua", "print('s', ...)\n");
    let run = luafiber(&["-e", "print('e', ...)", &s, "a", "b"], "");
    assert_ok(&run, "e\ns\ta\tb\n");
}

#[test]
fn e_sees_the_scripts_arg_table_but_no_varargs() {
    let s = script("e_sees_arg.lua", "");
    let run = luafiber(
        &[
            "-e",
            "print(select('#', ...), arg[-1], arg[0], arg[1], arg[2], arg[3])",
            &s,
            "a",
            "b",
        ],
        "",
    );
    // Tarantool's arg[-1] is its resolved path; luafiber's is its argv[0].
    assert_ok(&run, &format!("0\t{EXE}\t{s}\ta\tb\tnil\n"));
}

#[test]
fn e_twice_runs_both_in_order() {
    let s = script("e_twice.lua", "print('s', ...)\n");
    let run = luafiber(
        &[
            "-e",
            "print('e1') X = 1",
            "-e",
            "print('e2', X, ...)",
            &s,
            "a",
        ],
        "",
    );
    assert_ok(&run, "e1\ne2\t1\ns\ta\n");
}

#[test]
fn e_alone_runs_in_a_fiber_named_e_with_arg0_the_interpreter() {
    let run = luafiber(
        &[
            "-e",
            "X = 1",
            "-e",
            "print(X, select('#', ...), arg[-1], arg[0], arg[1], require('fiber').name())",
        ],
        "",
    );
    // Tarantool names this fiber "interactive" (it goes on to its console).
    assert_ok(&run, &format!("1\t0\t{EXE}\t{EXE}\tnil\t-e\n"));
}

#[test]
fn e_and_the_script_share_the_main_fiber() {
    let show = "local f = require('fiber') print(f.name(), f.id() == ID, f.self().storage.x)";
    let s = script("shared_fiber.lua", show);
    let e = "ID = require('fiber').id() require('fiber').self().storage.x = 'kept'";
    let run = luafiber(&["-e", e, "-e", show, &s], "");
    assert_ok(
        &run,
        "shared_fiber.lua\ttrue\tkept\nshared_fiber.lua\ttrue\tkept\n",
    );
}

#[test]
fn fibers_made_ready_by_e_start_before_the_script() {
    let s = script("ready_before.lua", "print('s')\n");
    let e = "require('fiber').new(function() print('bg') end) print('e')";
    let run = luafiber(&["-e", e, &s], "");
    assert_ok(&run, "e\nbg\ns\n");
}

#[test]
fn everything_after_the_script_is_its_args() {
    let s = script("args_after.lua", "print('s', ...)\n");
    let run = luafiber(&[&s, "-e", "print(1)", "--version", "--", "x"], "");
    assert_ok(&run, "s\t-e\tprint(1)\t--version\t--\tx\n");
}

#[test]
fn dash_reads_the_script_from_stdin() {
    let run = luafiber(&["-", "x", "y"], "print('stdin', ...)\n");
    assert_ok(&run, "stdin\tx\ty\n");
}

#[test]
fn stdin_script_has_arg0_and_fiber_name_dash() {
    let run = luafiber(
        &["-", "x"],
        "print(arg[0], arg[1], require('fiber').name())\n",
    );
    assert_ok(&run, "-\tx\t-\n");
}

#[test]
fn e_runs_before_a_stdin_script() {
    let run = luafiber(
        &["-e", "print('e', ...)", "-", "1"],
        "print('stdin', ...)\n",
    );
    assert_ok(&run, "e\nstdin\t1\n");
}

#[test]
fn error_in_e_exits_before_the_script() {
    let s = script("after_e_error.lua", "print('s')\n");
    let run = luafiber(&["-e", "print('e1')", "-e", "error('e2 failed')", &s], "");
    // Tarantool 2.6 prints the error, then hangs instead of exiting.
    assert_fails(
        &run,
        "e1\n",
        &[
            "(after_e_error.lua): (command line):1: e2 failed",
            "stack traceback",
        ],
    );
}

#[test]
fn e_that_does_not_compile_runs_nothing() {
    let s = script("after_e_syntax.lua", "print('s')\n");
    let run = luafiber(&["-e", "print('e1')", "-e", "x = = 1", &s], "");
    // Differs from Tarantool, which runs the first chunk before it loads
    // the second: luafiber loads every chunk and the script before running.
    assert_fails(
        &run,
        "",
        &["luafiber: (command line):1: unexpected symbol near '='"],
    );
}

#[test]
fn error_in_the_script_after_e() {
    let s = script("script_error.lua", "local x = 1\nerror('script failed')\n");
    let run = luafiber(&["-e", "print('e')", &s], "");
    assert_fails(&run, "e\n", &["script_error.lua:2: script failed"]);
}

#[test]
fn missing_script_after_e_runs_nothing() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli/no_such_script.lua");
    let run = luafiber(&["-e", "print('e')", missing.to_str().unwrap()], "");
    assert_fails(&run, "", &["luafiber: cannot open", "no_such_script.lua"]);
}

#[test]
fn error_in_a_stdin_script() {
    let run = luafiber(&["-", "x"], "print('in')\nerror('from stdin')\n");
    assert_fails(
        &run,
        "in\n",
        &["(-): stdin:2: from stdin", "stack traceback"],
    );
}

#[test]
fn stdin_script_that_does_not_compile() {
    let run = luafiber(&["-"], "x = = 1\n");
    assert_fails(&run, "", &["luafiber: stdin:1: unexpected symbol near '='"]);
}

#[test]
fn neither_script_nor_e_reads_a_script_from_a_piped_stdin() {
    // Tarantool runs a script on stdin when it is not a terminal (and its
    // console on one: tests/console.rs).
    let run = luafiber(&[], "print('read', arg[0], require('fiber').name())\n");
    assert_ok(&run, "read\t-\t-\n");
}

/// Issue 13, item 3: a main fiber that nothing can ever wake (no fiber is
/// ready, sleeping or waiting on I/O) is reported with every blocked fiber
/// and where it waits, and the process exits 1 instead of 0 with the work
/// after the wait not done. Fibers still blocked after the main fiber is
/// done do not keep the process or fail it.
#[test]
fn main_fiber_blocked_forever_is_reported() {
    let path = script(
        "blocked_forever.lua",
        "local fiber = require('fiber')\n\
         fiber.create(function() fiber.cond():wait() end)\n\
         print('before')\n\
         fiber.channel():get()\n\
         print('after')\n",
    );
    let run = luafiber(&[&path], "");
    assert_fails(
        &run,
        "before\n",
        &[
            "the main fiber can never be woken",
            "fiber 101 (blocked_forever.lua), the main fiber",
            "get",
            "blocked_forever.lua:4: in main chunk",
            "fiber 103 (lua)",
            "wait",
            "blocked_forever.lua:2:",
        ],
    );
    let run = luafiber(
        &[
            "-e",
            "require('fiber').create(function() require('fiber').channel():get() end)",
        ],
        "",
    );
    assert_ok(&run, "");
}

/// The request fibers waiting in the IPROTO server's pool wait for no one:
/// the report of a main fiber blocked forever leaves them out.
#[test]
fn waiting_request_fibers_are_not_reported_blocked() {
    let path = script(
        "blocked_pool.lua",
        "box.cfg{listen = '127.0.0.1:0', log_level = 1}
         box.schema.user.grant('guest', 'execute', 'universe')
         function f(x) return x end
         local c = require('net.box').connect(box.info.listen)
         assert(c:call('f', {1}) == 1)
         c:close()
         box.cfg{listen = box.NULL}
         print('served')
         require('fiber').channel():get()
",
    );
    let run = luafiber(&[&path], "");
    assert_fails(
        &run,
        "served\n",
        &[
            "the main fiber can never be woken",
            "blocked_pool.lua:9: in main chunk",
        ],
    );
    assert!(!run.stderr.contains("(iproto)"), "{}", run.stderr);
}
