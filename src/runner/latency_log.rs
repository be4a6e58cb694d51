//! `--latency-log FILE`: every timed unit, for users who want everything.
//!
//! Workers collect records in a buffer of their own and hand full buffers
//! to a writer thread over a bounded channel, so the file is written off
//! the hot path and nothing is lost (a slow disk slows the workers between
//! units, never inside a timed one).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::error::{Error, Result};

/// The first line of the log; also how the tool recognises its own file.
pub const HEADER: &str = "operation,thread,start_us,latency_us,service_us,rows,ok,type";
/// The header of files written before transaction types existed, which
/// are still recognised as the tool's own.
pub const OLD_HEADER: &str = "operation,thread,start_us,latency_us,service_us,rows,ok";
const BUFFER: usize = 4096;

/// One timed unit.
#[derive(Clone, Copy, Debug)]
pub struct LogRecord {
    pub op: &'static str,
    /// The unit's transaction type.
    pub ty: &'static str,
    pub thread: u32,
    /// When the unit was due, in microseconds since the operation started.
    pub start_us: u64,
    pub latency_us: u64,
    pub service_us: u64,
    pub rows: u64,
    pub ok: bool,
}

/// The way to the writer thread: cloned into every worker.
#[derive(Clone)]
pub struct LogSink {
    tx: mpsc::Sender<Vec<LogRecord>>,
}

impl LogSink {
    /// A buffer for one worker.
    pub fn writer(&self) -> LogWriter {
        LogWriter {
            tx: self.tx.clone(),
            buf: Vec::with_capacity(BUFFER),
        }
    }
}

/// The writer thread; [`LogThread::close`] waits for it once every
/// [`LogSink`] is dropped.
pub struct LogThread(JoinHandle<std::io::Result<()>>);

impl LogThread {
    pub fn close(self) -> Result<()> {
        match self.0.join() {
            Ok(r) => r.map_err(|e| Error::io("cannot write the latency log", e)),
            Err(_) => Err(Error::run("the latency log writer panicked")),
        }
    }
}

/// Creates the file and starts its writer.
pub fn create(path: &Path) -> Result<(LogSink, LogThread)> {
    let file = File::create(path)
        .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
    let (tx, mut rx) = mpsc::channel::<Vec<LogRecord>>(64);
    let thread = std::thread::Builder::new()
        .name("ysql-bench-latency-log".into())
        .spawn(move || {
            let mut w = BufWriter::with_capacity(1 << 20, file);
            writeln!(w, "{HEADER}")?;
            while let Some(batch) = rx.blocking_recv() {
                for r in batch {
                    writeln!(
                        w,
                        "{},{},{},{},{},{},{},{}",
                        r.op,
                        r.thread,
                        r.start_us,
                        r.latency_us,
                        r.service_us,
                        r.rows,
                        u8::from(r.ok),
                        r.ty
                    )?;
                }
            }
            w.flush()
        })
        .map_err(|e| Error::io("cannot start the latency log writer", e))?;
    Ok((LogSink { tx }, LogThread(thread)))
}

/// A worker's buffer.
pub struct LogWriter {
    tx: mpsc::Sender<Vec<LogRecord>>,
    buf: Vec<LogRecord>,
}

impl LogWriter {
    pub async fn push(&mut self, r: LogRecord) {
        self.buf.push(r);
        if self.buf.len() >= BUFFER {
            self.flush().await;
        }
    }

    pub async fn flush(&mut self) {
        if !self.buf.is_empty() {
            let batch = std::mem::replace(&mut self.buf, Vec::with_capacity(BUFFER));
            let _ = self.tx.send(batch).await;
        }
    }
}
