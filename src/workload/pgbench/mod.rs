//! pgbench's family: `pgbench-init` (its four tables, as `pgbench -i`
//! makes them), `pgbench-cleanup`, and `-o script`, the interpreter of
//! pgbench's script language that runs custom scripts and the built-in
//! ones on those tables.

pub mod args;
pub mod hints;
pub mod init;
pub mod script;
