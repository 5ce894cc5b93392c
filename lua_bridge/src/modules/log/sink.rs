//! Where log lines go: the process's log destination and format, as
//! `log.cfg{log = ..., format = ...}` sets them (Tarantool's `say.c`
//! loggers: stderr by default, or a file). One for the whole process, as in
//! Tarantool: every cord writes its lines there.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// A line's format (`log.cfg{format = ...}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `2024-12-23 20:04:26.491 [PID] main/103/app.lua app.lua:7 I> text`.
    Plain,
    /// One JSON object a line (`{"time": ..., "level": "INFO", ...}`).
    Json,
}

/// A log destination, as `say_parse_logger_type` reads `log`.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Stderr,
    File(PathBuf),
    Pipe,
    Syslog,
}

/// Tarantool's reminder for a `log` it cannot read.
const SYNTAX: &str = "expecting a file name or a prefix, such as '|', 'pipe:', 'syslog:'";

fn target(log: Option<&str>) -> Result<Target, String> {
    let Some(log) = log.filter(|l| !l.is_empty()) else {
        return Ok(Target::Stderr);
    };
    if log.starts_with('|') || log.starts_with("pipe:") {
        return Ok(Target::Pipe);
    }
    if let Some(path) = log.strip_prefix("file:") {
        return Ok(Target::File(path.into()));
    }
    if let Some(opts) = log.strip_prefix("syslog:") {
        for opt in opts.split(',').filter(|o| !o.is_empty()) {
            let key = opt.split('=').next().unwrap_or_default();
            if !opt.contains('=') || !matches!(key, "identity" | "facility" | "server") {
                return Err(format!(
                    "Incorrect value for option 'log': bad option '{opt}'"
                ));
            }
        }
        return Ok(Target::Syslog);
    }
    if log.contains(':') {
        return Err(format!("Incorrect value for option 'log': {SYNTAX}"));
    }
    Ok(Target::File(log.into()))
}

/// Tarantool's `say_check_cfg`: the message of what is wrong with these
/// options, if anything.
pub fn check(log: Option<&str>, format: &str, nonblock: Option<bool>) -> Option<String> {
    let target = match target(log) {
        Ok(t) => t,
        Err(e) => return Some(e),
    };
    if format_by_name(format).is_none() {
        return Some("Incorrect value for option 'log_format': expected 'plain' or 'json'".into());
    }
    if nonblock == Some(true) && matches!(target, Target::Stderr | Target::File(_)) {
        return Some(
            "Incorrect value for option 'log_nonblock': the option is incompatible with \
             file/stderr logger"
                .into(),
        );
    }
    None
}

fn format_by_name(name: &str) -> Option<Format> {
    match name {
        "plain" => Some(Format::Plain),
        "json" => Some(Format::Json),
        _ => None,
    }
}

enum Dest {
    Stderr,
    File { path: PathBuf, file: File },
}

struct Sink {
    dest: Dest,
    format: Format,
}

static SINK: Mutex<Sink> = Mutex::new(Sink {
    dest: Dest::Stderr,
    format: Format::Plain,
});

fn sink() -> std::sync::MutexGuard<'static, Sink> {
    SINK.lock().unwrap_or_else(|e| e.into_inner())
}

fn open(path: &PathBuf) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// Makes `log` (stderr when `None` or empty, a file path, `file:PATH`) the
/// destination and `format` the format of every line from now on.
///
/// # Errors
///
/// What [`check`] says, "pipe and syslog loggers are not supported", or why
/// the file cannot be opened.
pub fn apply(log: Option<&str>, format: &str) -> Result<(), String> {
    if let Some(e) = check(log, format, None) {
        return Err(e);
    }
    let format = format_by_name(format).unwrap_or(Format::Plain);
    let dest = match target(log)? {
        Target::Stderr => Dest::Stderr,
        Target::File(path) => {
            let mut s = sink();
            // The same file again (a format change): keep it open.
            if let Dest::File { path: p, .. } = &s.dest {
                if *p == path {
                    s.format = format;
                    return Ok(());
                }
            }
            drop(s);
            let file = open(&path).map_err(|e| {
                let e = crate::modules::errno::io_text(&e);
                format!("can't open log file '{}': {e}", path.display())
            })?;
            Dest::File { path, file }
        }
        Target::Pipe | Target::Syslog => {
            return Err(
                "Incorrect value for option 'log': pipe and syslog loggers are not \
                        supported by luafiber"
                    .into(),
            )
        }
    };
    let mut s = sink();
    s.dest = dest;
    s.format = format;
    Ok(())
}

/// The level `log.cfg` set last (Tarantool's numbers, 7 until it sets
/// one): the lines of luafiber's own Rust code above it are not written,
/// as Tarantool's own messages follow its `log_level`.
static LEVEL: AtomicU8 = AtomicU8::new(7);

/// Makes `level` (0-7, Tarantool's) the level the Rust code's lines are
/// written up to; Lua's lines are gated by the `log` module itself.
pub fn set_level(level: u8) {
    LEVEL.store(level.min(7), Ordering::Relaxed);
}

/// The level the Rust code's lines are written up to ([`set_level`]).
pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// The current line format.
pub fn format() -> Format {
    sink().format
}

/// Reopens a log file (after it was moved: `log.rotate()`); writes "log
/// file has been reopened" into the new one, as Tarantool does.
pub fn rotate() -> std::io::Result<bool> {
    let mut s = sink();
    if let Dest::File { path, file } = &mut s.dest {
        *file = open(path)?;
        return Ok(true);
    }
    Ok(false)
}

/// Writes one line (with its newline) to the destination. Errors are
/// dropped: a log line that cannot be written has nowhere to go.
pub fn write(line: &[u8]) {
    let mut s = sink();
    let _ = match &mut s.dest {
        Dest::Stderr => std::io::stderr().lock().write_all(line),
        Dest::File { file, .. } => file.write_all(line),
    };
}
