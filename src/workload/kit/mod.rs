//! What several workload families share, so that no family imports
//! another: keys and their distributions, row text, the split of ids over
//! workers and clients, COPY and the loader built on it, the table's
//! limits, seeds, the query class of a statement kind, the clean-up's
//! machinery.

pub mod args;
pub mod check_only;
pub mod cleanup;
pub mod copy_in;
pub mod copy_load;
pub mod ids;
pub mod keys;
pub mod limits;
pub mod partition;
pub mod rowgen;
pub mod simple_query;

/// sysbench's query class of a statement kind by its name: `read`
/// (selects and ranges), `other` (BEGIN, COMMIT, ROLLBACK) or `write`. A
/// family whose statements are named otherwise (pgbench's scripts) sets
/// the class itself.
pub fn query_class(name: &str) -> &'static str {
    if name.contains("select") || name.ends_with("_range") || name == "read" || name == "scan" {
        "read"
    } else if matches!(name, "begin" | "commit" | "rollback") {
        "other"
    } else {
        "write"
    }
}
