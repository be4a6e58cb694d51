//! The statements of sysbench's events: their kinds (each with its SQL and
//! its query class), and which of them, how many, each script's event
//! runs.

use super::{OltpSettings, Script};

/// Statement kinds, in the order reports list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    PointSelect,
    SimpleRange,
    SumRange,
    OrderRange,
    DistinctRange,
    IndexUpdate,
    NonIndexUpdate,
    Delete,
    Insert,
    Begin,
    Commit,
}

pub(super) const KINDS: [Kind; 11] = [
    Kind::PointSelect,
    Kind::SimpleRange,
    Kind::SumRange,
    Kind::OrderRange,
    Kind::DistinctRange,
    Kind::IndexUpdate,
    Kind::NonIndexUpdate,
    Kind::Delete,
    Kind::Insert,
    Kind::Begin,
    Kind::Commit,
];

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::PointSelect => "point_select",
            Kind::SimpleRange => "simple_range",
            Kind::SumRange => "sum_range",
            Kind::OrderRange => "order_range",
            Kind::DistinctRange => "distinct_range",
            Kind::IndexUpdate => "index_update",
            Kind::NonIndexUpdate => "non_index_update",
            Kind::Delete => "delete",
            Kind::Insert => "insert",
            Kind::Begin => "begin",
            Kind::Commit => "commit",
        }
    }

    /// sysbench's statement text for table `t`, with `$n` parameters.
    pub(super) fn sql(self, t: &str, serial_insert: bool) -> String {
        match self {
            Kind::PointSelect => format!("SELECT c FROM {t} WHERE id=$1"),
            Kind::SimpleRange => format!("SELECT c FROM {t} WHERE id BETWEEN $1 AND $2"),
            Kind::SumRange => format!("SELECT SUM(k) FROM {t} WHERE id BETWEEN $1 AND $2"),
            Kind::OrderRange => format!("SELECT c FROM {t} WHERE id BETWEEN $1 AND $2 ORDER BY c"),
            Kind::DistinctRange => {
                format!("SELECT DISTINCT c FROM {t} WHERE id BETWEEN $1 AND $2 ORDER BY c")
            }
            Kind::IndexUpdate => format!("UPDATE {t} SET k=k+1 WHERE id=$1"),
            Kind::NonIndexUpdate => format!("UPDATE {t} SET c=$2 WHERE id=$1"),
            Kind::Delete => format!("DELETE FROM {t} WHERE id=$1"),
            Kind::Insert if serial_insert => {
                format!("INSERT INTO {t} (k, c, pad) VALUES ($1, $2, $3)")
            }
            Kind::Insert => format!("INSERT INTO {t} (id, k, c, pad) VALUES ($1, $2, $3, $4)"),
            Kind::Begin => "BEGIN".to_string(),
            Kind::Commit => "COMMIT".to_string(),
        }
    }

    pub(super) fn is_read(self) -> bool {
        matches!(
            self,
            Kind::PointSelect
                | Kind::SimpleRange
                | Kind::SumRange
                | Kind::OrderRange
                | Kind::DistinctRange
        )
    }
}

/// Which statements a script's event runs, and how many of each group.
pub(super) fn groups(script: Script, o: &OltpSettings) -> Vec<(Kind, u32)> {
    let ranges = |g: &mut Vec<(Kind, u32)>| {
        if o.range_selects {
            g.push((Kind::SimpleRange, o.simple_ranges));
            g.push((Kind::SumRange, o.sum_ranges));
            g.push((Kind::OrderRange, o.order_ranges));
            g.push((Kind::DistinctRange, o.distinct_ranges));
        }
    };
    let writes = |g: &mut Vec<(Kind, u32)>| {
        g.push((Kind::IndexUpdate, o.index_updates));
        g.push((Kind::NonIndexUpdate, o.non_index_updates));
        g.push((Kind::Delete, o.delete_inserts));
    };
    let mut g = Vec::new();
    match script {
        Script::ReadWrite => {
            g.push((Kind::PointSelect, o.point_selects.unwrap_or(10)));
            ranges(&mut g);
            writes(&mut g);
        }
        Script::ReadOnly => {
            g.push((Kind::PointSelect, o.point_selects.unwrap_or(10)));
            ranges(&mut g);
        }
        Script::WriteOnly => writes(&mut g),
        // sysbench's oltp_point_select sets point_selects to 1 itself.
        Script::PointSelect => g.push((Kind::PointSelect, o.point_selects.unwrap_or(1))),
        Script::UpdateIndex => g.push((Kind::IndexUpdate, o.index_updates)),
        Script::UpdateNonIndex => g.push((Kind::NonIndexUpdate, o.non_index_updates)),
        Script::Insert => g.push((Kind::Insert, 1)),
        Script::DeleteInsert => g.push((Kind::Delete, o.delete_inserts)),
    }
    g.retain(|(_, n)| *n > 0);
    g
}

/// Whether a script's event is one transaction (BEGIN … COMMIT): the
/// multi-group scripts, as sysbench's, unless `--skip-trx`.
pub(super) fn transactional(script: Script, o: &OltpSettings) -> bool {
    !o.skip_trx
        && matches!(
            script,
            Script::ReadWrite | Script::ReadOnly | Script::WriteOnly | Script::DeleteInsert
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write_has_sysbench_statements_per_transaction() {
        let g = groups(Script::ReadWrite, &OltpSettings::default());
        let n: u32 = g.iter().map(|(_, n)| n).sum();
        // 10 point selects, 4 ranges, 2 updates, 1 delete (+ its insert).
        assert_eq!(n, 17);
        assert!(transactional(Script::ReadWrite, &OltpSettings::default()));
        assert!(!transactional(
            Script::PointSelect,
            &OltpSettings::default()
        ));
        assert_eq!(
            groups(Script::PointSelect, &OltpSettings::default()),
            vec![(Kind::PointSelect, 1)]
        );
        let no_ranges = OltpSettings {
            range_selects: false,
            ..OltpSettings::default()
        };
        assert_eq!(groups(Script::ReadOnly, &no_ranges).len(), 1);
    }

    #[test]
    fn statements_are_classed_as_sysbench_counts_queries() {
        use crate::workload::query_class;
        for k in KINDS {
            let expect = if k.is_read() {
                "read"
            } else if matches!(k, Kind::Begin | Kind::Commit) {
                "other"
            } else {
                "write"
            };
            assert_eq!(query_class(k.name()), expect, "{k:?}");
        }
        assert_eq!(query_class("point_select"), "read");
        assert_eq!(query_class("distinct_range"), "read");
        assert_eq!(query_class("delete"), "write");
        assert_eq!(query_class("commit"), "other");
    }
}
