//! Tarantool's CSV parser (`src/lib/csv/csv.c`) in its iterator form
//! (`csv_next`, `csv_feed`) and `csv_escape_field`, state by state, so
//! that fields, line ends and errors come out exactly as master's: leading
//! spaces of a field are dropped, trailing spaces of an unquoted part too,
//! `""` inside quotes is a quote, `\r\n` and `\n\r` are one line break.

/// What [`Parser::next`] found (master's `enum csv_iteraion_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// A field ([`Parser::field`]).
    Ok = 0,
    /// The end of a line.
    Eol = 1,
    /// The chunk fed is used up: feed another (an empty one at the end).
    NeedMore = 2,
    /// The end of the input.
    Eof = 3,
    /// An open quote at the end of the input.
    Error = 4,
}

/// `enum csv_parser_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    LeadingSpaces,
    OutOfQuotes,
    InQuotes,
    QuoteOpening,
    QuoteClosing,
    NewField,
    EndOfLastLine,
}

/// `struct csv` with its iterator.
pub(super) struct Parser {
    delimiter: u8,
    quote: u8,
    prev_symbol: u8,
    invalid: bool,
    ending_spaces: usize,
    state: State,
    /// Whether master's `buf` is allocated.
    has_buf: bool,
    /// The field so far: `buf[..bufp]`.
    buf: Vec<u8>,
    /// Master's `bufp` (`None`: NULL, no field at the moment).
    bufp: Option<usize>,
    /// The chunk fed last, and where the iterator is in it (`None`:
    /// master's `buf_begin == NULL`, nothing to parse).
    input: Vec<u8>,
    begin: Option<usize>,
    /// The field [`Parser::next`] found.
    field: (usize, usize),
}

impl Parser {
    /// `csv_create` and `csv_iterator_create`.
    pub(super) fn new(delimiter: u8, quote: u8) -> Parser {
        Parser {
            delimiter,
            quote,
            prev_symbol: 0,
            invalid: false,
            ending_spaces: 0,
            state: State::LeadingSpaces,
            has_buf: false,
            buf: Vec::new(),
            bufp: None,
            input: Vec::new(),
            begin: None,
            field: (0, 0),
        }
    }

    /// `csv_feed`: the next chunk (empty at the end of the input).
    pub(super) fn feed(&mut self, chunk: &[u8]) {
        self.input.clear();
        self.input.extend_from_slice(chunk);
        self.begin = Some(0);
    }

    /// The field of the last [`Step::Ok`].
    pub(super) fn field(&self) -> &[u8] {
        &self.buf[self.field.0..self.field.1]
    }

    /// `*bufp++ = c`.
    fn put(&mut self, c: u8) {
        let n = self.bufp.unwrap_or(0);
        self.buf.truncate(n);
        self.buf.push(c);
        self.bufp = Some(n + 1);
    }

    /// `bufp -= ending_spaces`.
    fn drop_ending_spaces(&mut self) {
        if let Some(p) = self.bufp {
            self.bufp = Some(p.saturating_sub(self.ending_spaces));
        }
    }

    /// Frees the buffer (`realloc(buf, 0)`, `buf = bufp = NULL`).
    fn free(&mut self) {
        self.has_buf = false;
        self.buf.clear();
        self.bufp = None;
    }

    /// `csv_isvalid`.
    fn is_valid(&mut self) -> bool {
        if !self.invalid && self.state == State::InQuotes {
            self.invalid = true;
        }
        !self.invalid
    }

    /// `csv_parse_impl` with `firstonly`: parses from `begin` to the end
    /// of the field; returns the new `begin` (`None`: NULL).
    fn parse(&mut self, from: usize) -> Option<usize> {
        let end = self.input.len();
        let mut p = from;
        while p != end {
            let c = self.input[p];
            let is_line_end = c == b'\n' || c == b'\r';
            if !self.has_buf {
                self.has_buf = true;
                self.bufp = Some(self.bufp.unwrap_or(0));
            }
            // \r\n (or \n\r) line break, not in quotes.
            if is_line_end
                && self.state != State::InQuotes
                && c != self.prev_symbol
                && (self.prev_symbol == b'\n' || self.prev_symbol == b'\r')
            {
                self.prev_symbol = 0;
                p += 1;
                continue;
            }
            self.prev_symbol = c;
            match self.state {
                State::LeadingSpaces => {
                    self.buf.clear();
                    self.bufp = Some(0);
                    if c == b' ' {
                        p += 1;
                        continue;
                    }
                    self.state = State::OutOfQuotes;
                }
                State::QuoteOpening => {
                    if c == self.quote && self.bufp.is_some() {
                        self.put(self.quote);
                        self.state = State::OutOfQuotes;
                        p += 1;
                        continue;
                    }
                    self.state = State::InQuotes;
                }
                State::QuoteClosing => {
                    if c == self.quote {
                        self.put(self.quote);
                        self.state = State::InQuotes;
                        p += 1;
                        continue;
                    }
                    self.state = State::OutOfQuotes;
                }
                _ => {}
            }
            match self.state {
                State::OutOfQuotes => {
                    if is_line_end || c == self.delimiter {
                        // The end of a field.
                        self.drop_ending_spaces();
                        self.ending_spaces = 0;
                        self.state = State::NewField;
                        return Some(p);
                    } else if c == self.quote {
                        self.state = State::QuoteOpening;
                    } else {
                        self.put(c);
                    }
                    if c == b' ' {
                        self.ending_spaces += 1;
                    } else {
                        self.ending_spaces = 0;
                    }
                }
                State::InQuotes => {
                    if c == self.quote {
                        self.state = State::QuoteClosing;
                    } else {
                        self.put(c);
                    }
                }
                State::NewField => {
                    self.buf.clear();
                    self.bufp = Some(0);
                    self.state = State::LeadingSpaces;
                    if is_line_end {
                        self.bufp = None;
                        return if p + 1 == end { None } else { Some(p + 1) };
                    }
                }
                _ => {}
            }
            p += 1;
        }
        Some(end)
    }

    /// `csv_next`: the next field, line end, or what the parser needs.
    pub(super) fn next(&mut self) -> Step {
        self.field = (0, 0);
        let Some(begin) = self.begin else {
            return Step::NeedMore;
        };
        if begin == self.input.len() {
            // The end of the input: the last field and line, if any.
            if self.bufp.is_none() {
                return Step::Eof;
            }
            if !self.is_valid() {
                self.free();
                return Step::Error;
            }
            if self.state != State::EndOfLastLine {
                self.state = State::EndOfLastLine;
                self.drop_ending_spaces();
                let n = self.bufp.unwrap_or(0);
                self.field = (0, n.min(self.buf.len()));
                self.bufp = Some(0);
                return Step::Ok;
            }
            self.free();
            return Step::Eol;
        }
        let tail = self.parse(begin);
        self.begin = tail;
        if tail == Some(self.input.len()) {
            return Step::NeedMore;
        }
        match self.bufp {
            None => Step::Eol,
            Some(n) => {
                self.field = (0, n.min(self.buf.len()));
                Step::Ok
            }
        }
    }
}

/// `csv_escape_field`: `field` quoted when it holds the delimiter or a
/// line break, its quotes doubled; it ends at a NUL byte, as master's C
/// string loop does.
pub(super) fn escape(field: &[u8], delimiter: u8, quote: u8) -> Vec<u8> {
    let field = &field[..memchr::memchr(0, field).unwrap_or(field.len())];
    let quoted = field
        .iter()
        .any(|&c| c == delimiter || c == b'\n' || c == b'\r');
    let mut out = Vec::with_capacity(field.len() + 2);
    if quoted {
        out.push(quote);
    }
    for &c in field {
        if c == quote {
            out.push(quote);
        }
        out.push(c);
    }
    if quoted {
        out.push(quote);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `text` fed in chunks of `chunk` bytes: rows of fields.
    fn load(text: &[u8], chunk: usize) -> Vec<Vec<String>> {
        let mut p = Parser::new(b',', b'"');
        let mut chunks = text.chunks(chunk);
        let (mut rows, mut row) = (Vec::new(), Vec::new());
        loop {
            match p.next() {
                Step::NeedMore => p.feed(chunks.next().unwrap_or_default()),
                Step::Ok => row.push(String::from_utf8(p.field().to_vec()).unwrap()),
                Step::Eol => rows.push(std::mem::take(&mut row)),
                Step::Eof | Step::Error => return rows,
            }
        }
    }

    #[test]
    fn parses_as_tarantool() {
        let rows = load(b"a,b\n1,\"ha\n\"\"ha\"\"\nha\"\n3,4\n", 1);
        assert_eq!(
            rows,
            [vec!["a", "b"], vec!["1", "ha\n\"ha\"\nha"], vec!["3", "4"]]
        );
        let rows = load(b"929,N1XDN ,,\"Enfield, CT\",", 4096);
        assert_eq!(rows, [vec!["929", "N1XDN", "", "Enfield, CT", ""]]);
        assert_eq!(load(b", \r\nkp\"\"v", 3), [vec!["", ""], vec!["kp\"v"]]);
    }

    #[test]
    fn escapes_as_tarantool() {
        assert_eq!(escape(b"a,b", b',', b'"'), b"\"a,b\"");
        assert_eq!(escape(b"q\"", b',', b'"'), b"q\"\"");
        assert_eq!(escape(b"x\0y", b',', b'"'), b"x");
    }
}
