//! The scheduler's `tracing` output: a `fiber` span per fiber, entered on
//! resume and exited on yield, and events for spawn, wakeup, cancel, finish.

use std::sync::{Arc, Mutex};

use luafiber_runtime::{spawn, task, yield_now, Runtime};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records span entries and exits and event messages as text lines.
#[derive(Clone, Default)]
struct Log {
    lines: Arc<Mutex<Vec<String>>>,
    spans: Arc<Mutex<Vec<String>>>,
}

#[derive(Default)]
struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={:?}", field.name(), value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={}", field.name(), value));
    }
}

impl Subscriber for Log {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut f = Fields::default();
        attrs.record(&mut f);
        let mut spans = self.spans.lock().unwrap();
        spans.push(format!("{} {}", attrs.metadata().name(), f.0.join(" ")));
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut f = Fields::default();
        event.record(&mut f);
        self.lines.lock().unwrap().push(f.0.join(" "));
    }
    fn enter(&self, id: &Id) {
        let s = self.spans.lock().unwrap()[id.into_u64() as usize - 1].clone();
        self.lines.lock().unwrap().push(format!("enter {s}"));
    }
    fn exit(&self, id: &Id) {
        let s = self.spans.lock().unwrap()[id.into_u64() as usize - 1].clone();
        self.lines.lock().unwrap().push(format!("exit {s}"));
    }
}

#[test]
fn spans_and_events() {
    let log = Log::default();
    let lines = log.lines.clone();
    tracing::subscriber::with_default(log, || {
        let _rt = Runtime::new();
        let h = task::Builder::new()
            .name("worker")
            .spawn(|| {
                yield_now().unwrap();
                tracing::trace!("inside");
            })
            .unwrap();
        let id = h.id();
        h.join().unwrap();
        let c = spawn(|| ());
        c.cancel();
        assert!(c.join().unwrap_err().is_cancelled());
        let lines = lines.lock().unwrap();
        let text = lines.join("\n");
        let span = format!("fiber id={id} name=worker");
        for want in [
            format!("message=spawn id={id} name=worker"),
            format!("enter {span}"),
            format!("exit {span}"),
            "message=inside".to_string(),
            format!("message=finish id={id}"),
            format!("message=cancel id={}", id.0 + 1),
        ] {
            assert!(lines.contains(&want), "{want} not in\n{text}");
        }
        // Entered twice (start, after the yield), exited twice.
        let enters = lines
            .iter()
            .filter(|l| **l == format!("enter {span}"))
            .count();
        let exits = lines
            .iter()
            .filter(|l| **l == format!("exit {span}"))
            .count();
        assert_eq!((enters, exits), (2, 2), "{text}");
        // The event inside the fiber is inside its span.
        let inside = lines.iter().position(|l| l == "message=inside").unwrap();
        assert_eq!(lines[inside - 1], format!("enter {span}"), "{text}");
    });
}

/// Issue 13, item 4: a fiber name is bytes; its `tracing` fields show each
/// byte that is not UTF-8 as `\xNN` (nothing lost), the rest as it is.
#[test]
fn fiber_names_are_bytes_in_tracing_fields() {
    let log = Log::default();
    let lines = log.lines.clone();
    tracing::subscriber::with_default(log, || {
        let _rt = Runtime::new();
        let id = luafiber_runtime::fiber::Builder::new()
            .name_bytes(&b"\xff\xfen\xc3\xa9"[..])
            .spawn_now(|| {})
            .unwrap();
        let lines = lines.lock().unwrap();
        let want = format!("message=spawn id={id} name=\\xff\\xfené");
        assert!(lines.contains(&want), "{want} not in\n{}", lines.join("\n"));
    });
}
