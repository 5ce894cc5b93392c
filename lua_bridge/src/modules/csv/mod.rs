//! The Lua `csv` module: Tarantool master's `src/lua/csv.lua` over its
//! parser `src/lib/csv/csv.c` ([`parser`](mod@parser), ported state by state).
//!
//! - `csv.load(readable [, opts])`: a table of rows (tables of strings);
//!   `readable` a string or an object with `read(n)` (a `fio` handle, a
//!   socket, any table), read `opts.chunk_size` bytes (4096) at a time.
//! - `csv.iterate(readable [, opts])`: `for i, row in csv.iterate(...)`.
//! - `csv.dump(t [, opts [, writable]])`: the CSV text of a row or a table
//!   of rows (fields quoted when they hold the delimiter or a line break,
//!   quotes doubled); written to `writable:write()` when given, else
//!   returned.
//! - `opts`: `delimiter` (`,`), `quote_char` (`"`), `skip_head_lines`
//!   (0), `chunk_size`.
//!
//! Errors are master's strings (`Usage: load(string or object with method
//! read(num)returns string)`, `Usage: dump(table[, opts, writable])`); a
//! quote left open at the end logs "CSV file has errors" and ends the
//! rows there.
//!
//! Differences from Tarantool: the parser is a userdata (master: FFI
//! `struct csv` and `struct csv_iterator`), and it copies each chunk it is
//! fed (master keeps a pointer into the Lua string).

mod parser;

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::rc::Rc;

use crate::raw::context::Part;
use crate::raw::{lua_fn, Kind, LResult, Raise, Reg, Stack};
use parser::{Parser, Step};

const CHUNK: &str = include_str!("csv.lua");

/// A parser object's payload.
type Shared = Rc<RefCell<Parser>>;

/// Per-cord state of `csv` (a part of the cord context): the parsers'
/// kind.
#[derive(Default)]
pub(crate) struct CsvKind(Cell<Kind<Shared>>);

/// The functions `csv.lua` builds on.
const INTERNAL: &[Reg] = &[
    (c"new", csv_new),
    (c"feed", csv_feed),
    (c"next", csv_next),
    (c"escape", csv_escape),
];

lua_fn! {
    /// The `csv` module's loader (`package.preload.csv`); the chunk
    /// requires `log`.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        if CsvKind::with(|k| k.0.get()).metatable_ptr().is_null() {
            let k = Kind::<Shared>::new(s, c"csv.parser", &[], &[(c"__gc", csv_gc)]);
            CsvKind::with(|c| c.0.set(k));
        }
        s.load(CHUNK, c"@builtin/csv.lua").map_err(|()| Raise::Top)?;
        let internal = s.new_table(0, INTERNAL.len() as i32);
        s.set_funcs(internal, INTERNAL);
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}

/// The parser at argument 1.
fn parser(s: &mut Stack) -> LResult<Shared> {
    let k = CsvKind::with(|k| k.0.get());
    k.get(s, 1)
        .ok_or_else(|| Raise::Message("csv: a parser expected".into()))
}

/// The first byte of the string at `idx` (`string.byte(opt)`), or `dflt`.
fn byte_arg(s: &Stack, idx: c_int, dflt: u8) -> u8 {
    s.to_str(idx)
        .and_then(|b| b.first().copied())
        .unwrap_or(dflt)
}

lua_fn! {
    /// `new(delimiter, quote_char)`: a parser (`csv_create` and
    /// `csv_iterator_create`).
    fn csv_new(s: &mut Stack) {
        let p = Parser::new(byte_arg(s, 1, b','), byte_arg(s, 2, b'"'));
        s.ensure(4)?;
        let k = CsvKind::with(|k| k.0.get());
        k.push(s, Rc::new(RefCell::new(p)));
        Ok(1)
    }
}

lua_fn! {
    /// `feed(parser, chunk)`: `csv_feed`.
    fn csv_feed(s: &mut Stack) {
        let p = parser(s)?;
        let chunk = s
            .to_str(2)
            .ok_or_else(|| Raise::Message("csv: the chunk read is not a string".into()))?;
        p.borrow_mut().feed(chunk);
        Ok(0)
    }
}

lua_fn! {
    /// `next(parser)`: `csv_next`'s status (`CSV_IT_*`), and the field
    /// for `CSV_IT_OK`.
    fn csv_next(s: &mut Stack) {
        let p = parser(s)?;
        let mut p = p.borrow_mut();
        let step = p.next();
        s.push_int(step as i64);
        if step == Step::Ok {
            s.push_bytes(p.field());
            return Ok(2);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `escape(field, delimiter, quote_char)`: `csv_escape_field`.
    fn csv_escape(s: &mut Stack) {
        let (d, q) = (byte_arg(s, 2, b','), byte_arg(s, 3, b'"'));
        let field = s.to_str(1).unwrap_or_default();
        let out = parser::escape(field, d, q);
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `__gc`: drops the parser.
    fn csv_gc(s: &mut Stack) {
        let k = CsvKind::with(|k| k.0.get());
        drop(k.take(s, 1));
        Ok(0)
    }
}
