//! What the server itself saw during an operation: its own counters of
//! the database, the workload's tables and statements, and what the run's
//! backends were waiting on, interval by interval.
//!
//! Plain data, as the rest of [`crate::stats`]: [`crate::db::server_watch`]
//! takes the snapshots and the samples, [`crate::report::server`] shows
//! them. The counters are differences over the operation (from just before
//! the workers connect to just after their connections closed), summed
//! over the nodes the run used; nothing here is a rate or a ratio, so that
//! reports can derive those and JSON keeps what was counted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Defines a struct of `i64` counters read in one row, with the column
/// list, the difference of two readings and the sum of two nodes.
macro_rules! counters {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $field:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: i64,)+
        }

        impl $name {
            /// The columns, in the order [`Self::from_values`] takes them.
            pub const COLUMNS: &'static [&'static str] = &[$(stringify!($field)),+];

            /// The counters from one row's values, in [`Self::COLUMNS`]'
            /// order; None when the row is short.
            pub fn from_values(v: &[i64]) -> Option<Self> {
                let mut it = v.iter().copied();
                Some($name { $($field: it.next()?,)+ })
            }

            /// What was counted between `before` and `self`; a counter
            /// that went down (the statistics were reset in between)
            /// counts from zero, and the result says so.
            pub fn since(&self, before: &Self) -> (Self, bool) {
                let mut reset = false;
                let mut d = |a: i64, b: i64| {
                    if a < b {
                        reset = true;
                        a
                    } else {
                        a - b
                    }
                };
                let out = $name { $($field: d(self.$field, before.$field),)+ };
                (out, reset)
            }

            /// Adds another node's counters.
            pub fn add(&mut self, other: &Self) {
                $(self.$field = self.$field.saturating_add(other.$field);)+
            }
        }
    };
}

counters!(
    /// `pg_stat_database` of the run's database.
    DbCounters {
        xact_commit,
        xact_rollback,
        blks_read,
        blks_hit,
        tup_returned,
        tup_fetched,
        tup_inserted,
        tup_updated,
        tup_deleted,
        conflicts,
        temp_files,
        temp_bytes,
        deadlocks,
    }
);

counters!(
    /// `pg_stat_user_tables` of one table.
    TableCounters {
        seq_scan,
        seq_tup_read,
        idx_scan,
        idx_tup_fetch,
        n_tup_ins,
        n_tup_upd,
        n_tup_del,
        n_tup_hot_upd,
    }
);

/// One table's counters over the operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableFigures {
    pub table: String,
    #[serde(flatten)]
    pub counts: TableCounters,
}

/// One statement of `pg_stat_statements` over the operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatementFigures {
    /// The normalised text, as pg_stat_statements keeps it.
    pub query: String,
    pub calls: i64,
    pub rows: i64,
    /// Execution time over the operation, all calls.
    pub total_exec_ms: f64,
    /// The longest execution since pg_stat_statements was last reset:
    /// the view keeps no maximum per interval of time.
    pub max_exec_ms_since_reset: f64,
}

impl StatementFigures {
    /// Mean execution time per call, in microseconds.
    pub fn mean_exec_us(&self) -> f64 {
        if self.calls > 0 {
            self.total_exec_ms * 1e3 / self.calls as f64
        } else {
            0.0
        }
    }
}

/// What the run's backends were doing, counted over samples of
/// `pg_stat_activity`: each backend seen in a sample counts once, under
/// `wait_event_type:wait_event`, `CPU` (active with no wait event) or its
/// state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitCounts {
    /// Samples taken (one per node and tick).
    pub samples: u64,
    /// Backends of the run seen, over all samples.
    pub seen: u64,
    /// Backends seen per event.
    pub events: BTreeMap<String, u64>,
}

impl WaitCounts {
    /// Counts one sample: each event with how many backends showed it.
    pub fn add_sample<'a>(&mut self, events: impl IntoIterator<Item = (&'a str, u64)>) {
        self.samples += 1;
        for (ev, n) in events {
            self.seen += n;
            *self.events.entry(ev.to_string()).or_insert(0) += n;
        }
    }

    pub fn add(&mut self, other: &WaitCounts) {
        self.samples += other.samples;
        self.seen += other.seen;
        for (k, v) in &other.events {
            *self.events.entry(k.clone()).or_insert(0) += v;
        }
    }

    /// Each event's share of the backends seen, largest first (ties by
    /// name, so that the order is stable).
    pub fn shares(&self) -> Vec<(&str, f64)> {
        let mut v: Vec<(&str, u64)> = self.events.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let all = self.seen.max(1) as f64;
        v.into_iter().map(|(k, n)| (k, n as f64 / all)).collect()
    }

    /// Backends of the run seen per sample, on average.
    pub fn per_sample(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.seen as f64 / self.samples as f64
        }
    }
}

/// The server's side of one interval of the operation (the same index
/// and length as [`super::IntervalFigures`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInterval {
    pub index: u64,
    pub waits: WaitCounts,
    /// Commits and rollbacks the server published in the interval. A
    /// backend publishes its counts when it goes idle and at most once a
    /// second (PostgreSQL 15), so these are smeared over about a second;
    /// the operation's totals are exact.
    pub commits: Option<i64>,
    pub rollbacks: Option<i64>,
}

/// What the sampler cost: one query per node per tick, on its own
/// connection, never on a worker's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplerCost {
    pub samples: u64,
    /// Time between ticks.
    pub period_ms: f64,
    /// Round trip of one sample query as the client saw it (an upper
    /// bound of the server's time for it).
    pub mean_us: f64,
    pub max_us: f64,
}

/// The server's side of one operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerFigures {
    /// The application_name of the run's worker connections, which is how
    /// the sampler finds them.
    pub application_name: String,
    /// The nodes whose counters are added up here.
    pub nodes: Vec<String>,
    /// `pg_stat_database` over the operation, all sessions of the database
    /// (the tool's own statistics queries included: see `own_commits`);
    /// None when it could not be read.
    pub database: Option<DbCounters>,
    /// Transactions of the tool's own statistics connections inside the
    /// window (snapshots, samples, waits for the workers' backends to
    /// end), which reports take out of `database`.
    pub own_commits: i64,
    pub own_rollbacks: i64,
    /// The workload's tables, over the operation.
    pub tables: Vec<TableFigures>,
    /// pg_stat_statements entries that name the workload's table, most
    /// calls first; None when the extension is not there to read.
    pub statements: Option<Vec<StatementFigures>>,
    /// What the run's backends waited on, over the measured time.
    pub waits: Option<WaitCounts>,
    /// The same per interval, aligned with the operation's intervals.
    pub intervals: Vec<ServerInterval>,
    pub sampler: Option<SamplerCost>,
    /// Backends of the run still there after the workers' connections
    /// closed (a pooler's server connections, or a server that does not
    /// answer): their last counts may be missing, and their state is not
    /// the workers'.
    #[serde(default)]
    pub left_open: i64,
    /// What limits these figures (a node not reached, backends left
    /// open, statistics reset, ...), one sentence each.
    pub notes: Vec<String>,
}

impl ServerFigures {
    /// Server commits and rollbacks without the tool's own statistics
    /// queries.
    pub fn commits_without_own(&self) -> Option<(i64, i64)> {
        self.database.map(|d| {
            (
                d.xact_commit - self.own_commits,
                d.xact_rollback - self.own_rollbacks,
            )
        })
    }

    /// Execution time of the matched statements over the operation, in
    /// milliseconds.
    pub fn statements_exec_ms(&self) -> Option<f64> {
        self.statements
            .as_ref()
            .map(|s| s.iter().map(|s| s.total_exec_ms).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_read_in_column_order_and_subtract() {
        let v: Vec<i64> = (1..=DbCounters::COLUMNS.len() as i64).collect();
        let a = DbCounters::from_values(&v).unwrap();
        assert_eq!(a.xact_commit, 1);
        assert_eq!(a.deadlocks, 13);
        assert!(DbCounters::from_values(&v[..3]).is_none());
        let mut b = a;
        b.xact_commit += 100;
        let (d, reset) = b.since(&a);
        assert_eq!(d.xact_commit, 100);
        assert_eq!(d.blks_hit, 0);
        assert!(!reset);
        // Reset in between: counts from zero, and says so.
        let (d, reset) = a.since(&b);
        assert_eq!(d.xact_commit, 1);
        assert!(reset);
        let mut s = a;
        s.add(&a);
        assert_eq!(s.tup_fetched, 2 * a.tup_fetched);
    }

    #[test]
    fn shares_are_of_the_backends_seen_largest_first() {
        let mut w = WaitCounts::default();
        w.add_sample([("CPU", 2), ("Client:ClientRead", 1)]);
        w.add_sample([("CPU", 1), ("Lock:relation", 1), ("Client:ClientRead", 1)]);
        assert_eq!(w.samples, 2);
        assert_eq!(w.seen, 6);
        let s = w.shares();
        assert_eq!(s[0], ("CPU", 0.5));
        assert_eq!(s[1].0, "Client:ClientRead");
        assert_eq!(s[2].0, "Lock:relation");
        assert!((s.iter().map(|x| x.1).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(w.per_sample(), 3.0);
        assert_eq!(WaitCounts::default().per_sample(), 0.0);
        assert!(WaitCounts::default().shares().is_empty());
    }

    #[test]
    fn own_queries_come_out_of_the_servers_count() {
        let f = ServerFigures {
            database: Some(DbCounters {
                xact_commit: 1050,
                xact_rollback: 3,
                ..Default::default()
            }),
            own_commits: 50,
            own_rollbacks: 1,
            ..Default::default()
        };
        assert_eq!(f.commits_without_own(), Some((1000, 2)));
    }
}
