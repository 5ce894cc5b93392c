//! [`TarantoolLayer`]: a `tracing-subscriber` layer that writes events as
//! Tarantool's log lines, to where `log.cfg` says.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use super::line::{format_line, Record};
use super::sink;

/// Writes every event it sees as a Tarantool log line (the format and
/// destination of `log.cfg`, stderr in plain format by default): Lua's
/// `log` lines (target `lua::log`) with their own fields, other events with
/// their target as the module and their fields after the message. The
/// `luafiber` binary installs it; an embedder may add it to its own
/// subscriber (`tracing_subscriber::registry().with(TarantoolLayer)`).
#[derive(Debug, Default, Clone, Copy)]
pub struct TarantoolLayer;

/// The fields of an event, as the `log` module emits them.
#[derive(Default)]
struct Fields {
    message: String,
    /// Fields other than those below (events from Rust code).
    extra: String,
    level: Option<u64>,
    fiber_id: Option<u64>,
    fiber_name: Option<String>,
    module: Option<String>,
    file: Option<String>,
    line: Option<u64>,
    json: bool,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message.push_str(value),
            "fiber_name" => self.fiber_name = Some(value.into()),
            "module" if !value.is_empty() => self.module = Some(value.into()),
            "module" => {}
            "file" => self.file = Some(value.into()),
            name => {
                let _ = write!(self.extra, " {name}={value}");
            }
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "tarantool_level" => self.level = Some(value),
            "fiber_id" => self.fiber_id = Some(value),
            "line" => self.line = Some(value),
            name => {
                let _ = write!(self.extra, " {name}={value}");
            }
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        match field.name() {
            "json" => self.json = value,
            name => {
                let _ = write!(self.extra, " {name}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.extra, " {}={value:?}", field.name());
        }
    }
}

/// Tarantool's level of a `tracing` level (error, warn, info; debug is
/// verbose, trace is debug).
fn tarantool_level(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 2,
        Level::WARN => 4,
        Level::INFO => 5,
        Level::DEBUG => 6,
        Level::TRACE => 7,
    }
}

impl<S: Subscriber> Layer<S> for TarantoolLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut f = Fields::default();
        event.record(&mut f);
        let lua = meta.target() == super::TARGET;
        let level = match f.level {
            Some(l) if lua => l.min(7) as u8,
            _ => tarantool_level(meta.level()),
        };
        if !lua && level > sink::level() {
            return;
        }
        let current = luafiber_fiber::with_running(|id, name| (id, name.to_vec()));
        let fiber = match (&current, f.fiber_id, &f.fiber_name) {
            // The running fiber's name as the bytes it is (the field has it
            // as text).
            (Some((cur, n)), Some(id), _) if *cur == id => Some((id, &n[..])),
            (_, Some(id), Some(name)) if id != 0 => Some((id, name.as_bytes())),
            (cur, _, _) => cur.as_ref().map(|(id, n)| (*id, &n[..])),
        };
        let module = if lua {
            f.module.as_deref()
        } else {
            Some(meta.target())
        };
        let file = match (&f.file, f.line) {
            (Some(file), line) => Some((file.as_str(), line.unwrap_or(0) as u32)),
            (None, _) if !lua => meta.file().map(|file| (file, meta.line().unwrap_or(0))),
            _ => None,
        };
        let mut message = f.message;
        message.push_str(&f.extra);
        let thread = std::thread::current();
        let rec = Record {
            level,
            cord: thread.name().unwrap_or("main"),
            fiber,
            module,
            file,
            message: message.as_bytes(),
            json_message: f.json,
        };
        sink::write(&format_line(&rec, sink::format()));
    }
}
