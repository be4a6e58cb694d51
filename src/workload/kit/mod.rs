//! What several workload families share, so that no family imports
//! another: keys and their distributions, row text, the split of ids over
//! workers and clients, COPY and the loader built on it, the table's
//! limits, seeds.

pub mod args;
pub mod check_only;
pub mod copy_in;
pub mod copy_load;
pub mod ids;
pub mod keys;
pub mod limits;
pub mod partition;
pub mod rowgen;
pub mod simple_query;
