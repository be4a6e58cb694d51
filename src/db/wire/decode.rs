//! Reading what the server sends: the read buffer that frames messages
//! in place, and the parsers of the messages' bodies.
//!
//! What arrives is not trusted: a server, a pooler or whatever listens on
//! the port may send anything. Each header is checked as soon as its five
//! bytes are in (a type the protocol has, a length that type can have), so
//! that garbage fails at once as [`WireError::Protocol`] rather than as a
//! wait for bytes that never come or an allocation of what a length
//! claims; the parsers take any body and fail cleanly. Property tests
//! (`decode/tests.rs`, on the stable toolchain) and the fuzz targets
//! under `fuzz/` feed them arbitrary streams split at arbitrary points.

use super::{DbError, WireError};

/// What the buffers start with: enough for a point select's answer and an
/// update's Bind with four short text fields.
pub(super) const FIRST_READ: usize = 512;
/// The read buffer grows to this while reads keep filling it (answers of
/// many rows: an oltp range select is about 13 KB), so that a large
/// answer takes a few reads, not one per 512 bytes.
pub(super) const MOST_READ: usize = 64 * 1024;

/// The longest message (counting its length word) of a kind that is never
/// long: libpq gives up on the stream past this length too, so no server
/// that libpq can talk to sends more. A longer one says the stream is not
/// the protocol (or no longer in step with it).
pub(super) const SHORT_MESSAGE: usize = 30_000;

/// The longest of the kinds that may be long (rows, errors, COPY data):
/// the length word is a signed 32-bit count. The buffer grows only as the
/// bytes arrive, so a length that lies costs nothing until they do.
pub(super) const LONG_MESSAGE: usize = i32::MAX as usize;

/// A message the server may send: its name (for errors) and the lengths
/// its length word may give (the word counts itself). None for a tag the
/// protocol does not have.
///
/// A lookup in [`KINDS`], not a `match`: compiled, the match was a jump
/// to one block of code per message type, and an answer's three or four
/// types (BindComplete, DataRow, CommandComplete, ReadyForQuery) each
/// touched a line of code of their own on every statement (callgrind:
/// about three first-level instruction-cache misses a statement in
/// pgbench's tpcb-like). The table is data.
fn kind(tag: u8) -> Option<(&'static str, usize, usize)> {
    KINDS.get(usize::from(tag)).copied().flatten()
}

/// [`kind`] for each first byte below 128 (no message type is above).
static KINDS: [Option<(&str, usize, usize)>; 128] = kinds();

const fn kinds() -> [Option<(&'static str, usize, usize)>; 128] {
    let mut t = [None; 128];
    t[b'R' as usize] = Some(("Authentication", 8, SHORT_MESSAGE));
    // 12 in protocol 3.0, which the start-up message asks for; 3.2
    // allows a key of up to 256 bytes.
    t[b'K' as usize] = Some(("BackendKeyData", 12, 8 + 256));
    t[b'S' as usize] = Some(("ParameterStatus", 6, SHORT_MESSAGE));
    t[b'Z' as usize] = Some(("ReadyForQuery", 5, 5));
    t[b'T' as usize] = Some(("RowDescription", 6, LONG_MESSAGE));
    t[b'D' as usize] = Some(("DataRow", 6, LONG_MESSAGE));
    t[b'C' as usize] = Some(("CommandComplete", 5, SHORT_MESSAGE));
    t[b'E' as usize] = Some(("ErrorResponse", 5, LONG_MESSAGE));
    t[b'N' as usize] = Some(("NoticeResponse", 5, LONG_MESSAGE));
    t[b'A' as usize] = Some(("NotificationResponse", 10, LONG_MESSAGE));
    t[b'I' as usize] = Some(("EmptyQueryResponse", 4, 4));
    t[b'1' as usize] = Some(("ParseComplete", 4, 4));
    t[b'2' as usize] = Some(("BindComplete", 4, 4));
    t[b'3' as usize] = Some(("CloseComplete", 4, 4));
    t[b'n' as usize] = Some(("NoData", 4, 4));
    t[b's' as usize] = Some(("PortalSuspended", 4, 4));
    // Up to 65535 parameters of 4 bytes each.
    t[b't' as usize] = Some(("ParameterDescription", 6, 6 + 4 * 65_535));
    t[b'G' as usize] = Some(("CopyInResponse", 7, SHORT_MESSAGE));
    t[b'H' as usize] = Some(("CopyOutResponse", 7, SHORT_MESSAGE));
    t[b'W' as usize] = Some(("CopyBothResponse", 7, SHORT_MESSAGE));
    t[b'd' as usize] = Some(("CopyData", 4, LONG_MESSAGE));
    t[b'c' as usize] = Some(("CopyDone", 4, 4));
    t[b'V' as usize] = Some(("FunctionCallResponse", 8, LONG_MESSAGE));
    t[b'v' as usize] = Some(("NegotiateProtocolVersion", 12, SHORT_MESSAGE));
    t
}

/// A message type as errors name it: "a DataRow ('D')", or the byte of
/// one the protocol does not have.
pub(super) fn describe(tag: u8) -> String {
    let shown = if tag.is_ascii_graphic() {
        format!("'{}'", tag as char)
    } else {
        format!("0x{tag:02x}")
    };
    match kind(tag) {
        Some((name, _, _)) => format!("a {name} ({shown})"),
        None => format!("a message of unknown type {shown}"),
    }
}

/// The error for a message the server may send, but not here (`during`
/// says where: "while logging in").
pub(super) fn out_of_place(tag: u8, during: &str) -> WireError {
    WireError::Protocol(format!("the server sent {} {during}", describe(tag)))
}

/// A first byte that is no message type: the same words whether the
/// rest of the header has come or not.
fn not_a_message(tag: u8) -> WireError {
    WireError::Protocol(format!("{}: the stream is not the protocol", describe(tag)))
}

/// Checks a message's header: a type the protocol has, and a length that
/// type can have. Done as soon as the five bytes are in, so that a length
/// that lies fails at once instead of waiting for bytes that never come.
fn check_header(tag: u8, len: usize) -> Result<(), WireError> {
    let Some((name, least, most)) = kind(tag) else {
        return Err(not_a_message(tag));
    };
    if len < least || len > most {
        let allowed = if least == most {
            format!("{least}")
        } else {
            format!("{least} to {most}")
        };
        return Err(WireError::Protocol(format!(
            "a {name} ('{}') of length {len}, where it must be {allowed}",
            tag as char
        )));
    }
    Ok(())
}

/// Checks the body of a whole message, for the types whose bodies the
/// driver reads apart from DataRow (checked as it is read, to keep the
/// hot path to one pass): the transaction status of a ReadyForQuery, the
/// one tag of a CommandComplete, the fields of an ErrorResponse (with
/// its SQLSTATE) or NoticeResponse, a RowDescription's columns, a
/// ParameterDescription's types. So a body that is not what its type
/// says fails here, where the connection ends, and not half-way through
/// an answer; and the parsers after this cannot fail on what a server
/// sends.
fn check_body(tag: u8, body: &[u8]) -> Result<(), WireError> {
    match tag {
        b'E' | b'N' => error_fields(body, tag == b'E'),
        b'T' => row_description(body),
        b't' => {
            let n = body.first_chunk::<2>().map(|n| u16::from_be_bytes(*n));
            match n {
                Some(n) if body.len() == 2 + 4 * n as usize => Ok(()),
                _ => Err(WireError::Protocol(format!(
                    "a ParameterDescription ('t') of {} bytes that does not hold its count of types",
                    body.len()
                ))),
            }
        }
        b'Z' if !matches!(body, [b'I' | b'T' | b'E']) => Err(WireError::Protocol(format!(
            "a ReadyForQuery ('Z') with transaction status {:?}, not I, T or E",
            body.first().map(|&b| b as char)
        ))),
        b'C' if body.iter().position(|&b| b == 0) != Some(body.len() - 1) => Err(
            WireError::Protocol("a CommandComplete ('C') whose tag is not one string".into()),
        ),
        _ => Ok(()),
    }
}

/// The fields of an ErrorResponse or NoticeResponse: each a type byte and
/// a string, then a zero; an error must have its SQLSTATE.
fn error_fields(body: &[u8], error: bool) -> Result<(), WireError> {
    let mut b = Body(body);
    let mut code = false;
    loop {
        let Some((&kind, rest)) = b.0.split_first() else {
            return Err(WireError::Protocol(
                "an error or notice without its terminator".into(),
            ));
        };
        b.0 = rest;
        if kind == 0 {
            break;
        }
        let value = b.cstr()?;
        // The last SQLSTATE field is the one `parse_error` keeps.
        if kind == b'C' {
            code = !value.is_empty();
        }
    }
    if !b.0.is_empty() {
        return Err(WireError::Protocol(
            "an error or notice with bytes after its end".into(),
        ));
    }
    if error && !code {
        return Err(WireError::Protocol("an error without a SQLSTATE".into()));
    }
    Ok(())
}

/// A RowDescription: a count, then per column its name and 18 bytes
/// (table, column number, type, size, modifier, format), and nothing
/// after.
fn row_description(body: &[u8]) -> Result<(), WireError> {
    let mut b = Body(body);
    let n = b.i16()?;
    for _ in 0..n.max(0) {
        b.cstr()?;
        b.0 =
            b.0.get(18..)
                .ok_or_else(|| WireError::Protocol("a RowDescription ('T') ends early".into()))?;
    }
    if n < 0 || !b.0.is_empty() {
        return Err(WireError::Protocol(format!(
            "a RowDescription ('T') of {n} columns that does not hold them"
        )));
    }
    Ok(())
}

/// The read buffer: bytes `start..end` of `buf` are received and not yet
/// parsed. Messages are parsed where they lie; the buffer is compacted or
/// grown only when a message does not fit behind what is parsed.
pub(super) struct ReadBuf {
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl ReadBuf {
    pub(super) fn new() -> Self {
        ReadBuf {
            buf: vec![0; FIRST_READ],
            start: 0,
            end: 0,
        }
    }

    /// The next whole message in the buffer: its tag and where its body
    /// lies. None when more bytes are needed; an error when the bytes are
    /// not a message the server may send (a type the protocol does not
    /// have, a length its type cannot have): the stream is out of step
    /// and nothing after it can be trusted.
    pub(super) fn next(&mut self) -> Result<Option<(u8, usize, usize)>, WireError> {
        let have = &self.buf[self.start..self.end];
        let Some(&[tag, a, b, c, d]) = have.first_chunk::<5>() else {
            // A first byte that is no message type is refused at once:
            // the rest of its header may never come (a server that sends
            // one stray byte and waits).
            if let Some(&tag) = have.first()
                && kind(tag).is_none()
            {
                return Err(not_a_message(tag));
            }
            return Ok(None);
        };
        let len = u32::from_be_bytes([a, b, c, d]) as usize;
        check_header(tag, len)?;
        let Some(body) = have.get(5..1 + len) else {
            return Ok(None);
        };
        check_body(tag, body)?;
        let body = self.start + 5;
        let end = self.start + 1 + len;
        self.start = end;
        if self.start == self.end {
            // All parsed: the next read starts at the front again. The
            // body is still there until then.
            self.start = 0;
            self.end = 0;
        }
        Ok(Some((tag, body, end)))
    }

    /// `n` bytes were read into the free space: a read that filled it
    /// says more is waiting, and the buffer doubles (up to [`MOST_READ`])
    /// so that the rest takes fewer reads.
    pub(super) fn read(&mut self, n: usize) {
        let filled = self.end + n == self.buf.len();
        self.end += n;
        if filled && self.buf.len() < MOST_READ {
            let size = (self.buf.len() * 2).min(MOST_READ);
            self.buf.resize(size, 0);
        }
    }

    /// Room for more of the message that starts at `start`, and free
    /// space behind `end` in any case: compacts, and grows when the
    /// message is larger than the buffer. It grows at once to what the
    /// message needs up to [`MOST_READ`], beyond that by doubling when the
    /// bytes received fill it: a length the server announces is not
    /// allocated before its bytes arrive.
    pub(super) fn make_room(&mut self) {
        let have = self.end - self.start;
        let need = match self.buf[self.start..self.end].first_chunk::<5>() {
            Some(&[_, a, b, c, d]) => 1 + u32::from_be_bytes([a, b, c, d]) as usize,
            None => 5,
        };
        if self.start > 0 && (self.buf.len() - self.start < need || self.end == self.buf.len()) {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = have;
        }
        let mut want = need.min(MOST_READ);
        if self.end == self.buf.len() {
            want = want.max(self.buf.len() * 2);
        }
        if want > self.buf.len() {
            self.buf.resize(want.next_power_of_two(), 0);
        }
    }
}

/// A ParameterDescription's type OIDs. Its count is an Int16 that
/// PostgreSQL fills with up to 65,535 parameters, so it is read unsigned,
/// as framing (`check_body`) reads it: a signed read would take a
/// statement of 32,768 parameters or more for one of none.
pub(super) fn parameter_types(body: &[u8]) -> Result<Vec<u32>, WireError> {
    let mut b = Body(body);
    let n = b.u16()?;
    (0..n).map(|_| b.i32().map(|t| t as u32)).collect()
}

/// A message body's fields, for the parsers below.
pub(super) struct Body<'a>(pub(super) &'a [u8]);

impl<'a> Body<'a> {
    pub(super) fn i32(&mut self) -> Result<i32, WireError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<4>()
            .ok_or_else(|| WireError::Protocol("a message ends early".into()))?;
        self.0 = rest;
        Ok(i32::from_be_bytes(*head))
    }

    pub(super) fn u16(&mut self) -> Result<u16, WireError> {
        self.i16().map(|n| n as u16)
    }

    pub(super) fn i16(&mut self) -> Result<i16, WireError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<2>()
            .ok_or_else(|| WireError::Protocol("a message ends early".into()))?;
        self.0 = rest;
        Ok(i16::from_be_bytes(*head))
    }

    pub(super) fn cstr(&mut self) -> Result<&'a str, WireError> {
        let nul = self
            .0
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| WireError::Protocol("a string is not terminated".into()))?;
        let s = std::str::from_utf8(&self.0[..nul])
            .map_err(|_| WireError::Protocol("a string is not UTF-8".into()))?;
        self.0 = &self.0[nul + 1..];
        Ok(s)
    }
}

/// The fields of an ErrorResponse (or NoticeResponse) body.
pub fn parse_error(body: &[u8]) -> Result<DbError, WireError> {
    let mut b = Body(body);
    let mut e = DbError {
        severity: String::new(),
        code: String::new(),
        message: String::new(),
        detail: None,
        hint: None,
    };
    let mut severity_v = None;
    while let Some((&kind, rest)) = b.0.split_first() {
        if kind == 0 {
            break;
        }
        b.0 = rest;
        let value = b.cstr()?;
        match kind {
            b'S' => e.severity = value.to_string(),
            b'V' => severity_v = Some(value.to_string()),
            b'C' => e.code = value.to_string(),
            b'M' => e.message = value.to_string(),
            b'D' => e.detail = Some(value.to_string()),
            b'H' => e.hint = Some(value.to_string()),
            _ => {}
        }
    }
    if let Some(v) = severity_v {
        e.severity = v;
    }
    if e.code.is_empty() {
        return Err(WireError::Protocol("an error without a SQLSTATE".into()));
    }
    Ok(e)
}

/// The row count at the end of a CommandComplete tag (`UPDATE 3`,
/// `INSERT 0 1`); 0 for tags without one.
pub fn tag_rows(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    if last.is_empty() || !last.iter().all(u8::is_ascii_digit) || last.len() == tag.len() {
        return 0;
    }
    last.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    })
}

/// The rows of an answer, in text format as the server sent them: one
/// buffer of cell bytes and one index of where each cell lies, reused
/// from unit to unit so that reading rows allocates nothing once the
/// buffers have grown to the workload's answers.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    data: Vec<u8>,
    /// Per cell: its offset in `data`, and its length (-1 for NULL).
    cells: Vec<(u32, i32)>,
    /// Cells per row (of the last row read).
    width: usize,
    rows: usize,
    /// The columns' names, when the answer described them.
    names: Vec<String>,
}

impl Rows {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets the rows and the names, keeping the buffers.
    pub fn clear(&mut self) {
        self.clear_rows();
        self.names.clear();
    }

    /// Forgets the rows, keeping the names and the buffers.
    pub(super) fn clear_rows(&mut self) {
        self.data.clear();
        self.cells.clear();
        self.width = 0;
        self.rows = 0;
    }

    /// Takes `names` as the columns' names, reusing the buffers of the
    /// last ones (a prepared statement's answers have the same names).
    pub(super) fn names_from(&mut self, names: &[String]) {
        if self.names != names {
            self.names.clear();
            self.names.extend(names.iter().cloned());
        }
    }

    /// Rows read.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Columns per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The columns' names (empty when the answer did not describe them).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub(super) fn set_names(&mut self, names: Vec<String>) {
        self.names = names;
    }

    /// Adds a DataRow's body.
    pub(super) fn push(&mut self, body: &[u8]) -> Result<(), WireError> {
        let mut b = Body(body);
        let n = usize::try_from(b.i16()?)
            .map_err(|_| WireError::Protocol("a row with a negative column count".into()))?;
        if self.rows > 0 && n != self.width {
            return Err(WireError::Protocol(format!(
                "a row of {n} columns after rows of {}",
                self.width
            )));
        }
        self.width = n;
        for _ in 0..n {
            let len = b.i32()?;
            if len < 0 {
                self.cells.push((0, -1));
                continue;
            }
            let len_u = len as usize;
            let cell =
                b.0.get(..len_u)
                    .ok_or_else(|| WireError::Protocol("a row's value ends early".into()))?;
            let at = u32::try_from(self.data.len())
                .map_err(|_| WireError::Protocol("an answer of over 4 GB".into()))?;
            self.data.extend_from_slice(cell);
            self.cells.push((at, len));
            b.0 = &b.0[len_u..];
        }
        self.rows += 1;
        Ok(())
    }

    /// Cell `col` of row `row` as the server sent it; `None` for NULL or
    /// a cell the answer does not have.
    pub fn raw(&self, row: usize, col: usize) -> Option<&[u8]> {
        if col >= self.width || row >= self.rows {
            return None;
        }
        let (at, len) = *self.cells.get(row * self.width + col)?;
        if len < 0 {
            return None;
        }
        self.data.get(at as usize..at as usize + len as usize)
    }

    /// Whether cell `col` of row `row` is there and NULL.
    pub fn is_null(&self, row: usize, col: usize) -> bool {
        col < self.width
            && row < self.rows
            && self
                .cells
                .get(row * self.width + col)
                .is_some_and(|c| c.1 < 0)
    }

    /// Cell `col` of row `row` as text; `None` for NULL or missing.
    pub fn text(&self, row: usize, col: usize) -> Option<&str> {
        self.raw(row, col).and_then(|b| std::str::from_utf8(b).ok())
    }

    /// Cell `col` of row `row` parsed as a `T` (an error when it is NULL,
    /// missing, or not a `T`): how a workload reads the ids and amounts
    /// its next statement needs.
    pub fn get<T: std::str::FromStr>(&self, row: usize, col: usize) -> Result<T, WireError> {
        let text = self.text(row, col).ok_or_else(|| {
            WireError::Protocol(format!(
                "the answer has no value in row {} column {} ({} rows of {})",
                row + 1,
                col + 1,
                self.rows,
                self.width
            ))
        })?;
        text.trim().parse().map_err(|_| {
            WireError::Protocol(format!(
                "'{text}' in row {} column {} is not a {}",
                row + 1,
                col + 1,
                std::any::type_name::<T>()
            ))
        })
    }
}

/// The columns' names of a RowDescription body.
pub(super) fn row_names(body: &[u8]) -> Result<Vec<String>, WireError> {
    let mut b = Body(body);
    let n = b.i16()?.max(0);
    let mut names = Vec::with_capacity(n as usize);
    for _ in 0..n {
        names.push(b.cstr()?.to_string());
        // Table OID, column number, type OID, size, modifier, format.
        for _ in 0..18 {
            if b.0.is_empty() {
                return Err(WireError::Protocol("a row description ends early".into()));
            }
            b.0 = &b.0[1..];
        }
    }
    Ok(names)
}

/// Frames `stream` as a connection does, reading it in pieces of the
/// sizes `cuts` gives in turn (as the socket's reads may cut it), and
/// runs the parsers on each message whose body the driver reads: the
/// messages framed, and the error framing stopped on. For the property
/// tests (`decode/tests.rs`) and the fuzz targets (`fuzz/`): it panics
/// only on a bug of the decoder (a body past what was read, no room for
/// the next read, a buffer grown past twice what was read, a body that
/// framing took and a parser then refused).
#[doc(hidden)]
#[allow(clippy::type_complexity)]
pub fn frame_stream(stream: &[u8], cuts: &[usize]) -> (Vec<(u8, Vec<u8>)>, Option<String>) {
    let mut r = ReadBuf::new();
    let mut out = Vec::new();
    let mut fed = 0;
    let mut cut = cuts.iter().cycle();
    loop {
        let before = r.end;
        match r.next() {
            Ok(Some((tag, b0, b1))) => {
                assert!(b0 <= b1 && b1 <= before, "a body past what was read");
                let body = &r.buf[b0..b1];
                parse_as(tag, body);
                out.push((tag, body.to_vec()));
            }
            Ok(None) if fed == stream.len() => return (out, None),
            Ok(None) => {
                r.make_room();
                let free = r.buf.len() - r.end;
                assert!(free > 0, "no room to read into");
                assert!(
                    r.buf.len() <= MOST_READ.max(2 * fed),
                    "{} bytes of buffer for {fed} read",
                    r.buf.len()
                );
                let n = cut.next().copied().unwrap_or(1).clamp(1, free);
                let n = n.min(stream.len() - fed);
                r.buf[r.end..r.end + n].copy_from_slice(&stream[fed..fed + n]);
                r.read(n);
                fed += n;
            }
            Err(e) => return (out, Some(e.to_string())),
        }
    }
}

/// Parses a framed body as the driver would; panics where framing took
/// a body that the parser then refuses.
fn parse_as(tag: u8, body: &[u8]) {
    match tag {
        b'E' => {
            if let Err(e) = parse_error(body) {
                panic!("framing took an ErrorResponse that does not parse: {e}");
            }
        }
        b'T' => {
            if let Err(e) = row_names(body) {
                panic!("framing took a RowDescription that does not parse: {e}");
            }
        }
        b't' => {
            if let Err(e) = parameter_types(body) {
                panic!("framing took a ParameterDescription that does not parse: {e}");
            }
        }
        b'C' => {
            tag_rows(body);
        }
        // A row may fail (a value past its message): an error, not a
        // panic.
        b'D' => {
            let _ = Rows::new().push(body);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
