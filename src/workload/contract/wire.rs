//! The lean driver's side of the contract: an operation whose unit is one
//! prepared statement (or a few, one after another) may offer itself to
//! [`crate::db::wire`], which then runs it without tokio-postgres and
//! without a boxed future.

use std::time::Duration;

use super::Outcome;

/// A statement of a [`WireUnit`]: its SQL, and what its failures are
/// called (the same words as on tokio-postgres).
pub struct WireStatement {
    pub sql: String,
    /// Context of a failed prepare, e.g. "cannot prepare the SELECT".
    pub prepare_failed: String,
    /// Context of a failed unit, e.g. "SELECT failed".
    pub failed: &'static str,
}

/// An operation whose every unit is one prepared statement with int and
/// text parameters, as the lean driver ([`crate::db::wire`]) runs it: the
/// session prepares [`WireUnit::statements`] on each new connection, and
/// for each unit binds [`WireUnit::param`]s to the statement
/// [`WireUnit::statement`] names and hands the answer to
/// [`WireUnit::outcome`]. Nothing here is async, so nothing is boxed.
pub trait WireUnit: Send {
    /// The statements to prepare on a new connection, in the order
    /// [`WireUnit::statement`] indexes them.
    fn statements(&self) -> Vec<WireStatement>;

    /// Which statement the staged unit runs.
    fn statement(&self) -> usize {
        0
    }

    /// Parameter `i` (0-based) of the staged unit.
    fn param(&self, i: usize) -> crate::db::wire::Param<'_>;

    /// What the unit did, from the server's answer (to its last
    /// statement, for a unit of several).
    fn outcome(&mut self, answer: crate::db::wire::Answer) -> Outcome;

    /// None (the default): the unit is one statement,
    /// [`WireUnit::statement`] with [`WireUnit::param`]s. Some(n): it is n
    /// statements one after another, each its own round trip (a
    /// transaction: BEGIN, its statements, COMMIT), which the `step_`
    /// methods below describe, each answer going to
    /// [`WireUnit::step_done`] and the last also to [`WireUnit::outcome`].
    fn steps(&self) -> Option<usize> {
        None
    }

    /// Which statement step `step` runs.
    fn step_statement(&self, step: usize) -> usize {
        let _ = step;
        self.statement()
    }

    /// Parameter `i` of step `step`.
    fn step_param(&self, step: usize, i: usize) -> crate::db::wire::Param<'_> {
        let _ = step;
        self.param(i)
    }

    /// Step `step` of a unit of several answered, `took` after it was sent
    /// (per-statement figures).
    fn step_done(&mut self, step: usize, answer: crate::db::wire::Answer, took: Duration) {
        let _ = (step, answer, took);
    }

    /// Step `step` failed, and with it the unit (for the unit's label).
    fn step_failed(&mut self, step: usize) {
        let _ = step;
    }

    /// Whether a failed unit leaves a transaction to roll back.
    fn rolls_back(&self) -> bool {
        false
    }
}
