//! The interactive console, driven through a pseudo-terminal as a person
//! would: typed lines, a multi-line function, Ctrl-C during a loop that
//! never yields and during a sleep, fibers running between lines, Ctrl-D.
//! Each answer is Tarantool's console output for the same input (YAML
//! documents), with luafiber's prompt.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_luafiber");

/// Longest wait for an expected answer before the test fails (a guard
/// against hanging, not a speed check).
const PATIENCE: Duration = Duration::from_secs(30);

struct Console {
    child: Child,
    master: std::fs::File,
    /// Everything the console wrote, as it came.
    out: Arc<Mutex<Vec<u8>>>,
    /// How much of the cleaned output the expectations consumed.
    seen: usize,
}

/// The terminal output as text: escape sequences and carriage returns out.
fn clean(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if n.is_ascii_alphabetic() || n == '~' {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

impl Console {
    fn start(home: &std::path::Path) -> Console {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: out-pointers for the two fds and a window size; no name
        // or termios.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: openpty gave two fresh fds that nothing else owns.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut cmd = Command::new(EXE);
        cmd.env("HOME", home)
            .env_remove("LUAFIBER_LOG")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a new
        // session whose controlling terminal is the pty, so Ctrl-C typed
        // into it is a SIGINT for the console.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let master = std::fs::File::from(master);
        let mut reader = master.try_clone().unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Console {
            child,
            master,
            out,
            seen: 0,
        }
    }

    fn text(&self) -> String {
        clean(&self.out.lock().unwrap())
    }

    /// Waits until `want` appears after what earlier expectations
    /// consumed; consumes up to its end.
    fn expect(&mut self, want: &str) {
        let start = Instant::now();
        loop {
            let text = self.text();
            if let Some(at) = text[self.seen..].find(want) {
                self.seen += at + want.len();
                return;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "no {want:?} in the console's output:\n{}",
                &text[self.seen..]
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn send(&mut self, bytes: &str) {
        self.master.write_all(bytes.as_bytes()).unwrap();
    }

    /// Types `line` and Enter, then waits for the `answer` and the next
    /// prompt.
    fn line(&mut self, line: &str, answer: &str) {
        self.send(&format!("{line}\r"));
        self.expect(answer);
        self.expect(PROMPT);
    }
}

const PROMPT: &str = "luafiber> ";

#[test]
fn console_runs_lines_in_fibers_and_survives_ctrl_c() {
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Console::start(&home);
    c.expect(PROMPT);
    c.line("fiber = require('fiber')", "---\n...\n");
    c.line("fiber.sleep(0.1)", "fiber.sleep(0.1)\n---\n...\n");
    c.line("1 + 1", "1 + 1\n---\n- 2\n...\n");
    // A multi-line function: continued while incomplete.
    c.send("function f(x)\r");
    c.expect("        > ");
    c.send("return x * 2\r");
    c.expect("        > ");
    c.line("end", "end\n---\n...\n");
    c.line("f(21)", "---\n- 42\n...\n");
    // A loop that never yields: Ctrl-C interrupts it, the prompt is back.
    // The chunk says when it runs, so the Ctrl-C cannot come before it.
    c.send("print('looping') while true do end\r");
    c.expect("looping\n");
    c.send("\x03");
    c.expect("---\n- error: interrupted!\n...\n");
    c.expect(PROMPT);
    // A chunk parked in a sleep: Ctrl-C cancels its fiber.
    c.send("print('sleeping') fiber.sleep(100)\r");
    c.expect("sleeping\n");
    c.send("\x03");
    c.expect("---\n- error: fiber is cancelled\n...\n");
    c.expect(PROMPT);
    // Values as Tarantool prints them.
    c.line(
        "'x: y', nil, {a = {1, 2}}, 'yes'",
        "---\n- 'x: y'\n- null\n- a:\n  - 1\n  - 2\n- 'yes'\n...\n",
    );
    c.line("error('boom', 0)", "---\n- error: boom\n...\n");
    // A fiber made at the prompt runs while the console waits for input.
    c.line(
        "fiber.create(function() for i = 1, 1e6 do fiber.sleep(0.01) n = i \
         if i == 5 then print('ticked 5') end end end) ~= nil",
        "---\n- true\n...\n",
    );
    c.expect("ticked 5\n");
    c.line("n >= 5", "---\n- true\n...\n");
    // Ctrl-C at the prompt drops the line; Ctrl-D ends the process.
    c.send("unfinished(\x03");
    c.expect(PROMPT);
    c.send("\x04");
    let status = c.child.wait().unwrap();
    eprintln!("--- console transcript ---\n{}", c.text());
    assert!(status.success(), "{status}");
}

/// A home directory of its own for one test (its history file).
fn home(name: &str) -> std::path::PathBuf {
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&home).unwrap();
    home
}

impl Console {
    /// Ctrl-D, and the console's end with status 0.
    fn end(mut self) {
        self.send("\x04");
        let status = self.child.wait().unwrap();
        eprintln!("--- console transcript ---\n{}", self.text());
        assert!(status.success(), "{status}");
    }
}

/// Issue 29, item 3: lines pasted at once, or typed while a chunk runs,
/// were lost but the first (the line editor's read-ahead was dropped
/// between two reads). Every line runs, in order, as in Tarantool's
/// console: plain lines, a function definition, lines typed ahead during a
/// sleep, and a bracketed paste of several lines.
#[test]
fn console_runs_every_pasted_and_typed_ahead_line() {
    let mut c = Console::start(&home("console-paste"));
    c.expect(PROMPT);
    c.send("1 + 1\r2 + 2\r3 + 3\r");
    c.expect("---\n- 2\n...\n");
    c.expect("---\n- 4\n...\n");
    c.expect("---\n- 6\n...\n");
    c.send("function g(x)\rreturn x + 1\rend\rg(41)\r");
    c.expect("---\n- 42\n...\n");
    c.send("require('fiber').sleep(0.3)\r");
    c.send("'typed ahead'\r'and more'\r");
    c.expect("---\n- typed ahead\n...\n");
    c.expect("---\n- and more\n...\n");
    // A terminal's bracketed paste: the pasted lines arrive as one.
    c.send("\x1b[200~10 + 1\r20 + 2\r\x1b[201~\r");
    c.expect("---\n- 11\n...\n");
    c.expect("---\n- 22\n...\n");
    c.line("'last'", "---\n- last\n...\n");
    c.end();
}

/// Issue 29, item 4: a value whose `__serialize` (or an error whose
/// `__tostring`) raises ended the console with status 1; it is printed as
/// master's "exception while formatting the output" error and the console
/// goes on. Ctrl-C while a fiber started at the prompt spins (started by
/// `fiber.new`, so the prompt is back, or by `fiber.create`, so the chunk
/// waits for it) did nothing, and a second one ended the session: it
/// interrupts that fiber and the console goes on.
#[test]
fn console_survives_unprintable_values_and_stops_spinning_fibers() {
    let mut c = Console::start(&home("console-format"));
    c.expect(PROMPT);
    c.line(
        "setmetatable({}, {__serialize = function() error('no way', 0) end})",
        "---\n- error: 'console: exception while formatting the output: \"no way\"'\n...\n",
    );
    // Tarantool 2.6 serialises an error value (a plain table's __tostring
    // is not used).
    c.line(
        "error(setmetatable({}, {__tostring = function() error('bad text', 0) end}))",
        "---\n- error: []\n...\n",
    );
    c.line(
        "error(setmetatable({}, {__serialize = function() error('bad', 0) end}))",
        "exception while formatting the output: \"bad\"",
    );
    c.line("1", "---\n- 1\n...\n");
    c.line("fiber = require('fiber')", "---\n...\n");
    // Spinning before the console could print the chunk's result.
    c.send("f = fiber.new(function() print('spinning') while true do end end)\r");
    c.expect("spinning\n");
    c.send("\x03");
    c.expect("interrupted!");
    c.expect(PROMPT);
    c.line("f:status()", "---\n- dead\n...\n");
    // Spinning while the line editor waits at the prompt (it reads the
    // Ctrl-C as a key).
    c.line(
        "f = fiber.new(function() fiber.sleep(0.2) print('spinning later') while true do end end)",
        "---\n...\n",
    );
    c.expect("spinning later\n");
    c.send("\x03");
    c.expect("interrupted!");
    c.line("f:status()", "---\n- dead\n...\n");
    c.send("g = fiber.create(function() print('spinning too') while true do end end)\r");
    c.expect("spinning too\n");
    c.send("\x03");
    c.expect("interrupted!");
    c.expect(PROMPT);
    c.line("g:status()", "---\n- dead\n...\n");
    c.line("2 + 2", "---\n- 4\n...\n");
    c.end();
}

/// Issue 29: a decimal is printed as Tarantool prints it (`- 1.10`, a
/// plain scalar, also inside tables), not "incorrect value to convert to
/// decimal" (the formatter compared it with `''` and `nil`); uuids and
/// 64-bit integers too.
#[test]
fn console_prints_decimals_uuids_and_int64() {
    let mut c = Console::start(&home("console-decimal"));
    c.expect(PROMPT);
    c.line("require('decimal').new('1.10')", "---\n- 1.10\n...\n");
    c.line(
        "{require('decimal').new('-0.5'), {d = require('decimal').new(7)}}",
        "---\n- - -0.5\n  - d: 7\n...\n",
    );
    c.line(
        "require('uuid').fromstr('4a5b0fd8-0d42-4dd1-b6f4-3e0a83d5d1e4')",
        "---\n- 4a5b0fd8-0d42-4dd1-b6f4-3e0a83d5d1e4\n...\n",
    );
    c.line("{box.NULL}", "---\n- - null\n...\n");
    if cfg!(feature = "lua54") {
        println!("skipped: int64 cdata (1LL) needs LuaJIT's ffi");
    } else {
        c.line("{1LL, 2ULL, -3LL}", "---\n- - 1\n  - 2\n  - -3\n...\n");
    }
    c.end();
}

/// Issue 29: an error value that is a table is printed as its fields, as
/// Tarantool 2.6 prints it (`- error:` then the table), not `table: 0x...`;
/// an error object as its message, a string as itself.
#[test]
fn console_prints_a_raised_table_as_its_fields() {
    let mut c = Console::start(&home("console-error-table"));
    c.expect(PROMPT);
    c.line("error({code = 5})", "---\n- error:\n    code: 5\n...\n");
    c.line("error({{1, 2}})", "---\n- error:\n  - - 1\n    - 2\n...\n");
    c.line("error('plain', 0)", "---\n- error: plain\n...\n");
    c.line(
        "box.error({code = 7, reason = 'why'})",
        "---\n- error: why\n...\n",
    );
    c.end();
}
