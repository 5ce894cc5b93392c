//! Tarantool's log line formats (`say_format_plain`, `say_format_json` in
//! `src/lib/core/say.c`), at most 16 KiB a line as there.

use std::io::Write as _;

use super::sink::Format;

/// The longest line, its newline included (Tarantool's `SAY_BUF_LEN_MAX`
/// less the NUL).
pub const LINE_MAX: usize = 16 * 1024 - 1;

/// One log line's parts.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Tarantool's level: 0 fatal, 1 syserror, 2 error, 3 crit, 4 warn,
    /// 5 info, 6 verbose, 7 debug.
    pub level: u8,
    /// The cord (thread) name: `main` for the main thread.
    pub cord: &'a str,
    /// The fiber's id and name (bytes, written as they are, as Tarantool
    /// writes them), when the line comes from a fiber.
    pub fiber: Option<(u64, &'a [u8])>,
    /// The module (`log.new(name)`), if any.
    pub module: Option<&'a str>,
    /// The source file and line of the call.
    pub file: Option<(&'a str, u32)>,
    /// The text, or (with `json_message`) a JSON object whose members go
    /// into the JSON line in place of `"message"`.
    pub message: &'a [u8],
    /// `message` is a JSON object (a table logged in the JSON format).
    pub json_message: bool,
}

const CHARS: &[u8; 8] = b"F!ECWIVD";
const NAMES: [&str; 8] = [
    "FATAL", "SYSERROR", "ERROR", "CRIT", "WARN", "INFO", "VERBOSE", "DEBUG",
];

/// The local time as `strftime` writes it with `fmt` (`%F %H:%M`), then
/// the seconds with milliseconds (`:%06.3f`), then `tail_fmt` (`%z`).
fn time(fmt: &std::ffi::CStr, tail_fmt: &std::ffi::CStr) -> String {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; `localtime_r` and `strftime`
    // write only into `tm` and the buffers, within their sizes.
    unsafe {
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&ts.tv_sec, &mut tm);
        let mut head = [0u8; 64];
        let n = libc::strftime(head.as_mut_ptr().cast(), head.len(), fmt.as_ptr(), &tm);
        let mut tail = [0u8; 16];
        let m = libc::strftime(tail.as_mut_ptr().cast(), tail.len(), tail_fmt.as_ptr(), &tm);
        let sec = tm.tm_sec as f64 + ts.tv_nsec as f64 / 1e9;
        format!(
            "{}:{sec:06.3}{}",
            String::from_utf8_lossy(&head[..n]),
            String::from_utf8_lossy(&tail[..m])
        )
    }
}

/// The last path component, as Tarantool's "primitive basename".
fn basename(path: &str) -> &str {
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    match trimmed.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// `rec` as a line of `format`, newline included.
pub fn format_line(rec: &Record<'_>, format: Format) -> Vec<u8> {
    match format {
        Format::Plain => plain(rec),
        Format::Json => json(rec),
    }
}

fn plain(rec: &Record<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + rec.message.len());
    let _ = write!(
        out,
        "{} [{}] {}",
        time(c"%F %H:%M", c""),
        std::process::id(),
        rec.cord
    );
    if let Some((id, name)) = rec.fiber {
        let _ = write!(out, "/{id}/");
        out.extend_from_slice(name);
    }
    if let Some(m) = rec.module {
        let _ = write!(out, "/{m}");
    }
    if let Some((file, line)) = rec.file {
        let _ = write!(out, " {}:{line}", basename(file));
    }
    let c = CHARS[usize::from(rec.level.min(7))] as char;
    let _ = write!(out, " {c}> ");
    let room = LINE_MAX.saturating_sub(out.len() + 1);
    out.extend_from_slice(&rec.message[..rec.message.len().min(room)]);
    out.push(b'\n');
    out
}

/// `s` JSON-escaped as Tarantool's `json_escape` (control characters, DEL,
/// `"` and `\`), at most `max` bytes, never cutting an escape.
fn escape_into(out: &mut Vec<u8>, s: &[u8], max: usize) {
    let start = out.len();
    for &c in s {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            8 => b"\\b",
            12 => b"\\f",
            0..=0x1f | 0x7f => {
                let u = format!("\\u{c:04x}");
                if out.len() - start + u.len() > max {
                    return;
                }
                out.extend_from_slice(u.as_bytes());
                continue;
            }
            _ => std::slice::from_ref(&c),
        };
        if out.len() - start + esc.len() > max {
            return;
        }
        out.extend_from_slice(esc);
    }
}

fn json(rec: &Record<'_>) -> Vec<u8> {
    let level = NAMES[usize::from(rec.level.min(7))];
    let head = format!(
        "{{\"time\": \"{}\", \"level\": \"{level}\", ",
        time(c"%FT%H:%M", c"%z")
    );
    let mut tail = Vec::with_capacity(160);
    let _ = write!(tail, "\"pid\": {} , \"cord_name\": \"", std::process::id());
    escape_into(&mut tail, rec.cord.as_bytes(), usize::MAX);
    tail.push(b'"');
    if let Some((id, name)) = rec.fiber {
        let _ = write!(tail, ", \"fiber_id\": {id}, \"fiber_name\": \"");
        escape_into(&mut tail, name, usize::MAX);
        tail.push(b'"');
    }
    if let Some((file, line)) = rec.file {
        tail.extend_from_slice(b", \"file\": \"");
        escape_into(&mut tail, file.as_bytes(), usize::MAX);
        let _ = write!(tail, "\", \"line\": {line}");
    }
    if let Some(m) = rec.module {
        tail.extend_from_slice(b", \"module\": \"");
        escape_into(&mut tail, m.as_bytes(), usize::MAX);
        tail.push(b'"');
    }
    tail.extend_from_slice(b"}\n");
    let room = LINE_MAX.saturating_sub(head.len() + tail.len());
    let mut out = Vec::with_capacity(head.len() + tail.len() + rec.message.len() + 16);
    out.extend_from_slice(head.as_bytes());
    let msg = rec.message;
    if rec.json_message && msg.len() >= 2 && msg[0] == b'{' && msg[msg.len() - 1] == b'}' {
        let inner = &msg[1..msg.len() - 1];
        let n = inner.len().min(room.saturating_sub(2));
        out.extend_from_slice(&inner[..n]);
        out.extend_from_slice(b", ");
    } else {
        const OPEN: &[u8] = b"\"message\": \"";
        out.extend_from_slice(OPEN);
        escape_into(&mut out, msg, room.saturating_sub(OPEN.len() + 3));
        out.extend_from_slice(b"\", ");
    }
    out.extend_from_slice(&tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(message: &[u8]) -> Record<'_> {
        Record {
            level: 5,
            cord: "main",
            fiber: Some((103, b"app.lua")),
            module: None,
            file: Some(("/srv/app.lua", 7)),
            message,
            json_message: false,
        }
    }

    #[test]
    fn plain_line_has_fiber_file_and_level_char() {
        let line = String::from_utf8(format_line(&rec(b"hello"), Format::Plain)).unwrap();
        let tail = format!(
            " [{}] main/103/app.lua app.lua:7 I> hello\n",
            std::process::id()
        );
        assert!(line.ends_with(&tail), "{line}");
    }

    #[test]
    fn json_line_escapes_and_truncates_on_escape_boundaries() {
        let line = String::from_utf8(format_line(&rec(b"a \"q\"\n"), Format::Json)).unwrap();
        assert!(
            line.contains(r#""level": "INFO", "message": "a \"q\"\n", "pid": "#),
            "{line}"
        );
        assert!(
            line.ends_with("\"file\": \"/srv/app.lua\", \"line\": 7}\n"),
            "{line}"
        );
        let big = vec![b'"'; 40_000];
        let line = format_line(&rec(&big), Format::Json);
        assert!(line.len() <= LINE_MAX && line.len() > LINE_MAX - 8);
        assert!(!String::from_utf8(line).unwrap().contains("\\\", \"pid\"\\"));
    }
}
