//! `-o cleanup`: every family's clean-up at once. The machinery (what is
//! the tool's, what is dropped, what is left and why) is the kit's
//! ([`super::kit::cleanup`]), which each family's own clean-up uses with
//! its [`Family`]; this module only lists the families, so that the kit
//! imports none of them and no family imports another.

use super::kit::cleanup::{Family, build, spec};
use super::{Spec, basic, booking, oltp, pgbench, tpcc, ycsb};

/// Every family, for `cleanup`; the first one's tables stand for all in
/// the summary.
pub static FAMILIES: [&Family; 6] = [
    &basic::table::FAMILY,
    &ycsb::FAMILY,
    &oltp::FAMILY,
    &booking::FAMILY,
    &tpcc::FAMILY,
    &pgbench::init::FAMILY,
];

/// `-o cleanup`.
pub static SPEC: Spec = spec(
    "cleanup",
    "drop every table (and function) ysql-bench created on the search_path, and nothing else",
    |spec, s| build(spec, s, None, &FAMILIES),
);
