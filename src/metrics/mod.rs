//! Live metrics (`--metrics-addr HOST:PORT`): the run's figures as
//! OpenMetrics text at `/metrics`, for Prometheus to scrape while the run
//! goes and for a short, bounded while after it (see [`Exporter::linger`]).
//!
//! Why it is shaped so:
//!
//! - **Nothing on the workers' path.** The runner's interval collector adds
//!   the pieces the worker threads hand over anyway to a board
//!   ([`crate::stats::live`]); a scrape copies the board and renders it
//!   ([`render`]). Workers never wait for a scrape, and the counters are
//!   the very units the reports count.
//! - **Histograms, not percentiles.** Percentiles of several clients
//!   cannot be added; histogram buckets can. Each transaction type's
//!   latency and service time are histograms on one fixed grid of bounds
//!   (see [`render`] for its resolution), made from the HDR histograms at
//!   scrape time, so `histogram_quantile` over `sum by (le)` of every
//!   client of a run is the run's percentile within a bucket.
//! - **The Prometheus project's `prometheus-client` crate** writes the
//!   exposition (it is the Prometheus project's own Rust client, kept up,
//!   pure Rust, and lets a collector write whole histograms whose buckets
//!   are computed elsewhere).
//! - **A tiny HTTP/1.1 responder on the run's tokio runtime** (`serve`)
//!   rather than hyper: a scrape is one GET and one answer, closed after;
//!   hyper and its stack would be a dozen crates for that. It reads at
//!   most a few kilobytes of request head, with a timeout, and answers
//!   `/metrics` (and `/`) or 404.
//! - **Bound before connecting.** [`Exporter::bind`] is called before the
//!   run connects to the database, so that a port in use or an address
//!   that is not this machine's is a usage error (exit 2) at once.

pub mod render;
mod serve;

pub use serve::Exporter;
