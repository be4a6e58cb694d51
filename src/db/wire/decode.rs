//! Reading what the server sends: the read buffer that frames messages
//! in place, and the parsers of the messages' bodies.

use super::{DbError, WireError};

/// What the buffers start with: enough for a point select's answer and an
/// update's Bind with four short text fields.
pub(super) const FIRST_READ: usize = 512;
/// The read buffer grows to this while reads keep filling it (answers of
/// many rows: an oltp range select is about 13 KB), so that a large
/// answer takes a few reads, not one per 512 bytes.
pub(super) const MOST_READ: usize = 64 * 1024;

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
    /// lies. None when more bytes are needed.
    pub(super) fn next(&mut self) -> Option<(u8, usize, usize)> {
        let have = &self.buf[self.start..self.end];
        if have.len() < 5 {
            return None;
        }
        // The length counts itself: below 4 the server (or what answers
        // in its place) is not speaking the protocol. Read as a body that
        // ends where it starts, so that no slice runs backwards; the
        // message is unknown or fails to parse as what its tag says.
        let len = (u32::from_be_bytes([have[1], have[2], have[3], have[4]]) as usize).max(4);
        if have.len() < 1 + len {
            return None;
        }
        let tag = have[0];
        let body = self.start + 5;
        let end = self.start + 1 + len;
        self.start = end;
        if self.start == self.end {
            // All parsed: the next read starts at the front again. The
            // body is still there until then.
            self.start = 0;
            self.end = 0;
        }
        Some((tag, body, end))
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

    /// Room for at least the rest of the message that starts at `start`:
    /// compacts, and grows when the message is larger than the buffer.
    pub(super) fn make_room(&mut self) {
        let have = self.end - self.start;
        let need = if have >= 5 {
            let b = &self.buf[self.start..];
            1 + u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize
        } else {
            5
        };
        let short = |r: &ReadBuf| r.buf.len() - r.start < need || r.end == r.buf.len();
        if self.start > 0 && short(self) {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = have;
        }
        if short(self) {
            let size = need.max(self.buf.len() * 2).next_power_of_two();
            self.buf.resize(size, 0);
        }
    }
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
