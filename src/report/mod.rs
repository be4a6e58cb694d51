//! Presentation: turns measurements into what people and tools read.
//!
//! Nothing here measures or talks to the server. Text writers take any
//! `Write`, so each format is tested on a buffer; the pictures are tested by
//! decoding the PNGs they write. `saved` and `compare` read `--json`
//! reports back (`ysql-bench merge`, `show`, `compare`).

pub mod compare;
pub mod conns;
pub mod csv;
pub mod exact_u64;
pub mod histogram;
pub mod json;
pub mod plot;
pub mod saved;
pub mod server;
pub mod summary;
