//! Where the clients of a run of several meet (`--clients`), as the
//! runner sees it: a few named steps, not a wrapper around each workload.
//!
//! One client leads: it alone creates, empties, drops and marks tables;
//! the others wait for it at each step and leave those writes to it. The
//! runner calls the barrier at the points of an operation's life where
//! that matters: before the tables are created or checked (`tables`),
//! around an operation's set-up (`prep:N`, N its place in `-o`), and just
//! before its first unit ([`StartBarrier::start`], where every client
//! begins at one instant), and after a load (`done:N`, where each client
//! says how its share went: [`StartBarrier::gather`], so that the leader
//! marks the table loaded only once every share is in; a release may
//! carry the leader's answer back, as each step of `--find-max` does:
//! every client's figures in, the next step's target out). How the
//! clients meet is the implementation's:
//! [`crate::cluster`] keeps the barrier in a table of the database under
//! test. A run of one client has no barrier at all.

use futures_util::future::BoxFuture;

use crate::error::Result;

/// What the other clients said at a step: (client index, note).
pub type Notes = Vec<(usize, Option<String>)>;

/// This client's side of the barrier of a run of several clients.
pub trait StartBarrier: Send + Sync {
    /// Whether this client leads: it writes the tables (creates, empties,
    /// drops and marks them) while the others wait at the step.
    fn leads(&self) -> bool;

    /// Meets the others at `step`: the leader waits until every other
    /// client has arrived, another client until the leader lets it past.
    fn meet<'a>(&'a self, step: &'a str) -> BoxFuture<'a, Result<()>>;

    /// Meets the others at `step`, each bringing `note`. The leader gets
    /// every other client's note once all are here, does its part and
    /// then calls [`StartBarrier::release`]; another client passes when
    /// the leader releases the step, and gets the note of that release
    /// as `[(0, note)]`: what the leader decided from all the notes.
    fn gather<'a>(&'a self, step: &'a str, note: &'a str) -> BoxFuture<'a, Result<Notes>>;

    /// The leader, its part of `step` done: lets the others past at once,
    /// handing each `note` if given (their [`StartBarrier::gather`]
    /// returns it). Nothing for another client.
    fn release<'a>(&'a self, step: &'a str, note: Option<&'a str>) -> BoxFuture<'a, Result<()>>;

    /// The leader, its part of a step failed: calls the run off for every
    /// client, with `why`. Nothing for another client.
    fn fail<'a>(&'a self, why: &'a str) -> BoxFuture<'a, ()>;

    /// Meets the others before the first unit of `operation` and waits
    /// until the instant they all start at.
    fn start<'a>(&'a self, operation: &'static str) -> BoxFuture<'a, Result<()>>;
}
