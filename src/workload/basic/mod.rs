//! The original tool's six operations on `test_table(id int primary key,
//! f1..f4 text)`: the loads `insert`, `copy-mem`, `copy-file` and
//! `procedure`, the queries `select` and `update`, and `table-cleanup`.
//!
//! [`table`] holds what they share (the table, its checks, the one
//! [`crate::workload::Workload`] they are built as); each other file is one
//! operation's unit. [`csv_gen`] makes copy-file's files, for
//! `csv_generator` too.

pub mod args;
pub mod copy_file;
pub mod copy_mem;
pub mod csv_gen;
pub mod insert;
pub mod procedure;
pub mod select;
pub mod table;
pub mod update;
