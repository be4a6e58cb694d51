//! Presentation: turns measurements into what people and tools read.
//!
//! Nothing here measures or talks to the server. Every writer takes any
//! `Write`, so each format is tested on a buffer.

pub mod summary;
