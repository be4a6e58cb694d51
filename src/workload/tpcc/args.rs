//! TPC-C's flags: the scale (`--warehouses`), the mix (`--tpcc-mix`), the
//! keying and think times (`--tpcc-wait`) and this client's warehouses
//! (`--warehouse-range`), checked against each other, `--rate`, `--seed`
//! and `--clients`.

use clap::Args;

use super::{CHECK, LOAD, RUN, TpccSettings, WarehouseRange, txn};
use crate::error::{Error, Result};
use crate::workload::kit::args::{WORKLOAD, parse_positive};
use crate::workload::kit::partition::thread_range;
use crate::workload::{FamilyArgs, FamilySettings, RunContext, Settings, Spec, Unread};

/// The most TPC-C warehouses `--warehouses` accepts.
const MAX_WAREHOUSES: u32 = 1_000_000;

/// The TPC-C flags of the command line.
#[derive(Args, Debug, Clone)]
pub struct TpccArgs {
    /// tpcc-*: warehouses, the TPC-C scale (about 500k rows, 70 MB each, plus 100k items once).
    #[arg(long, value_name = "W", default_value = "1", value_parser = parse_positive::<u32>, help_heading = WORKLOAD)]
    pub warehouses: u32,

    /// tpcc: the mix in percent, e.g. new-order=50,payment=50 (default: the standard 45/43/4/4/4).
    #[arg(long, value_name = "TYPE=PERCENT,...", value_parser = txn::Mix::parse, help_heading = WORKLOAD)]
    pub tpcc_mix: Option<txn::Mix>,

    /// tpcc: keying and think times as the specification defines them (clause 5.2.5).
    ///
    /// Each terminal waits a keying time before each transaction (18 s for New-Order, 3 s for
    /// Payment, 2 s for the others) and a think time after it (negative exponential, mean 12 s,
    /// 12 s, 10 s, 5 s, 5 s, at most ten times the mean). The waits are in no latency. Ten
    /// terminals per warehouse (the default --terminals with it) then reach about 100% efficiency. Not with --rate.
    #[arg(long, help_heading = WORKLOAD)]
    pub tpcc_wait: bool,

    /// tpcc, tpcc-load: this client's warehouses, START..END (inclusive, 1-based, within --warehouses).
    ///
    /// tpcc: the terminals' home warehouses, spread evenly over the range; remote order lines
    /// and payments still go to any of the --warehouses. tpcc-load: empties and loads these
    /// warehouses alone, and the item table only when the range starts at 1. So clients on
    /// several machines drive (or load) disjoint warehouses of one database. With --clients,
    /// tpcc's default is each client's share of 1..W.
    #[arg(long, value_name = "START..END", value_parser = WarehouseRange::parse, help_heading = WORKLOAD)]
    pub warehouse_range: Option<WarehouseRange>,

    /// tpcc: terminals driven over the -t connections (default: 10 per home warehouse with --tpcc-wait, else one per connection).
    ///
    /// A terminal holds a connection only while its transaction runs; its keying and think
    /// times hold none. A terminal ready while every connection is busy waits for one, and that
    /// wait (queueing) is in its latency, not in its service time. Each terminal has a home
    /// warehouse and district, ten per warehouse spread as the specification assigns them.
    #[arg(long, value_name = "N", value_parser = parse_positive::<u32>, help_heading = WORKLOAD)]
    pub terminals: Option<u32>,

    /// tpcc: each transaction on a warehouse drawn from all the home warehouses, not the terminal's own (HammerDB's "use all warehouses"), for fewer terminals than warehouses.
    #[arg(long, help_heading = WORKLOAD)]
    pub all_warehouses: bool,

    /// tpcc: the keying and think times multiplied by F (default 1, the specification's), for tests and quick looks; with --tpcc-wait.
    #[arg(long, value_name = "F", requires = "tpcc_wait", value_parser = parse_scale, help_heading = WORKLOAD)]
    pub tpcc_wait_scale: Option<f64>,

    /// tpcc, tpcc-check: check the consistency conditions on N warehouses drawn at random (all their districts, orders, customers), not on all of them.
    #[arg(long, value_name = "N", value_parser = parse_positive::<u32>, help_heading = WORKLOAD)]
    pub check_sample: Option<u32>,
}

/// The most terminals `--terminals` accepts: ten per warehouse of the
/// most warehouses, at a few hundred bytes each.
const MAX_TERMINALS: u32 = 10 * MAX_WAREHOUSES;

/// `--tpcc-wait-scale`: a factor above 0 and at most 100.
fn parse_scale(s: &str) -> std::result::Result<f64, String> {
    let f: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number: give a factor, e.g. 0.1"))?;
    if !(f > 0.0 && f <= 100.0) {
        return Err(format!(
            "{s} is not above 0 and at most 100: give a factor, e.g. 0.1"
        ));
    }
    Ok(f)
}

impl TpccArgs {
    /// The terminals' home warehouses: `--warehouse-range`, else this
    /// client's share of 1..W, else all.
    fn homes(&self, run: &RunContext<'_>) -> Result<WarehouseRange> {
        let w = self.warehouses;
        let runs = run.operations.contains(&&RUN);
        let loads = run.operations.contains(&&LOAD);
        Ok(match (self.warehouse_range, run.clients) {
            (Some(r), _) if r.last > w => {
                return Err(Error::usage(format!(
                    "--warehouse-range {r} ends past --warehouses {w}: give --warehouses with all the database's warehouses (at least {}), or a range within 1..{w}",
                    r.last
                )));
            }
            (Some(r), Some(c)) if loads => {
                return Err(Error::usage(format!(
                    "--warehouse-range {r} and --clients {} both split tpcc-load's warehouses: leave out --warehouse-range (the clients share 1..{w} out), or --clients (each machine loads its range on its own)",
                    c.clients
                )));
            }
            (Some(r), _) => r,
            (None, Some(c)) => {
                // Every client checks, so that all of them refuse alike.
                if runs && (w as usize) < c.clients {
                    return Err(Error::usage(format!(
                        "--clients {} drive disjoint warehouses in tpcc and --warehouses {w} has fewer: give at least {} warehouses, or --warehouse-range on each client",
                        c.clients, c.clients
                    )));
                }
                let share = thread_range(u64::from(w), c.clients, c.index);
                if share.is_empty() {
                    // A load of fewer warehouses than clients: its chunks go
                    // round all clients' threads; the homes are not used.
                    WarehouseRange::all(w)
                } else {
                    WarehouseRange {
                        first: share.start as u32 + 1,
                        last: share.end as u32,
                    }
                }
            }
            (None, None) => WarehouseRange::all(w),
        })
    }
}

impl FamilyArgs for TpccArgs {
    /// The TPC-C flags, checked against each other and `--clients`; and
    /// `--tpcc-wait`, which sets the terminals' pace and so cannot go
    /// with `--rate`.
    fn settings(&self, run: &RunContext<'_>, families: &mut FamilySettings) -> Result<()> {
        let w = self.warehouses;
        // Warehouse ids are int columns, and 10^6 warehouses (70 TB) is past
        // any machine this runs against.
        if w > MAX_WAREHOUSES {
            return Err(Error::usage(format!(
                "--warehouses {w} is more than {MAX_WAREHOUSES}: each warehouse is about 70 MB; give fewer"
            )));
        }
        let runs = run.operations.contains(&&RUN);
        let loads = run.operations.contains(&&LOAD);
        if self.tpcc_wait && runs && run.rate_given {
            return Err(Error::usage(
                "--tpcc-wait and --rate both set the terminals' pace (the keying and think times, or a fixed arrival rate): give one",
            ));
        }
        let homes = self.homes(run)?;
        // Without --seed each client draws its own run seed: the clients of
        // one load would write a district's orders and its order lines from
        // different seeds (o_ol_cnt no longer the lines' count: conditions 4
        // and 6 broken), and the clients of one run would draw different
        // NURand constants, where clause 2.1.6 wants one for all terminals.
        if let (Some(c), false, true) = (run.clients, run.seed_given, runs || loads) {
            return Err(Error::usage(format!(
                "--clients {} with {}: give --seed N, the same on every client, so that they load the same data and draw the same NURand constants",
                c.clients,
                if loads { "tpcc-load" } else { "tpcc" }
            )));
        }
        if let Some(n) = self.terminals.filter(|&n| n > MAX_TERMINALS) {
            return Err(Error::usage(format!(
                "--terminals {n} is more than {MAX_TERMINALS}: give fewer"
            )));
        }
        families.insert(TpccSettings {
            warehouses: w,
            mix: self.tpcc_mix.unwrap_or(txn::MIX),
            homes,
            partial: self.warehouse_range.is_some(),
            wait: self.tpcc_wait,
            wait_scale: self.tpcc_wait_scale.unwrap_or(1.0),
            terminals: self.terminals,
            all_warehouses: self.all_warehouses,
            check_sample: self.check_sample,
            seed: run.run_seed,
        });
        Ok(())
    }

    fn unread(&self, operations: &[&'static Spec]) -> Vec<Unread> {
        let mut unread = Vec::new();
        let runs = operations.contains(&&RUN);
        if self.tpcc_wait && !runs {
            unread.push(Unread {
                flag: "--tpcc-wait",
                applies: "tpcc",
            });
        }
        if self.warehouse_range.is_some() && !runs && !operations.contains(&&LOAD) {
            unread.push(Unread {
                flag: "--warehouse-range",
                applies: "tpcc and tpcc-load",
            });
        }
        let given = [
            ("--terminals", self.terminals.is_some()),
            ("--all-warehouses", self.all_warehouses),
            ("--tpcc-wait-scale", self.tpcc_wait_scale.is_some()),
        ];
        for (flag, _) in given.into_iter().filter(|g| g.1 && !runs) {
            unread.push(Unread {
                flag,
                applies: "tpcc",
            });
        }
        if self.check_sample.is_some() && !runs && !operations.contains(&&CHECK) {
            unread.push(Unread {
                flag: "--check-sample",
                applies: "tpcc and tpcc-check",
            });
        }
        unread
    }

    /// Terminals that leave home warehouses without one, or connections
    /// idle, or pass the specification's ten per warehouse.
    fn warnings(&self, operations: &[&'static Spec], settings: &Settings) -> Vec<String> {
        let t = settings.family::<TpccSettings>();
        if !operations.contains(&&RUN) {
            return Vec::new();
        }
        let homes = u64::from(t.homes.len());
        let threads = settings.threads as u64;
        let terminals = u64::from(t.terminal_count(settings.threads));
        let mut out = Vec::new();
        if terminals < homes && !t.all_warehouses {
            out.push(format!(
                "warning: {terminals} terminals for the {homes} home warehouses {}: {} of them get no terminal, yet efficiency counts them all (give --terminals {homes} or more, or --all-warehouses)",
                t.homes,
                homes - terminals,
            ));
        }
        if terminals < threads {
            out.push(format!(
                "warning: {terminals} terminals over {threads} connections (-t): {} connections stay idle (give -t {terminals} or fewer)",
                threads - terminals
            ));
        }
        if t.wait && terminals > 10 * homes {
            out.push(format!(
                "warning: {terminals} terminals for {homes} home warehouses is more than the specification's 10 per warehouse: efficiency may pass 100%, which a compliant run may not"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use crate::config::RunPlan;
    use crate::config::testing::{plan, usage_message};
    use clap::Parser;

    #[test]
    fn tpcc_flags_that_cannot_work_are_refused_with_what_to_do() {
        let e = usage_message(&["-o", "tpcc", "--tpcc-wait", "--rate", "100"]);
        assert!(e.contains("--tpcc-wait and --rate both set"), "{e}");
        let e = usage_message(&[
            "-o",
            "tpcc",
            "--warehouses",
            "4",
            "--warehouse-range",
            "3..5",
        ]);
        assert!(
            e.contains("--warehouse-range 3..5 ends past --warehouses 4")
                && e.contains("at least 5"),
            "{e}"
        );
        // A bad range is clap's usage error (exit 2), saying the form.
        let bad = |r: &str| {
            Cli::try_parse_from(["ysql-bench", "-o", "tpcc", "--warehouse-range", r])
                .unwrap_err()
                .to_string()
        };
        assert!(bad("5..3").contains("START must not be above END"));
        assert!(bad("0..3").contains("count from 1"));
        assert!(bad("3").contains("give START..END"));
        assert!(bad("a..b").contains("not a warehouse number"));
        let clients = |extra: &[&str]| {
            let mut all = vec![
                "ysql-bench",
                "-u",
                "host=localhost",
                "--clients",
                "3",
                "--client-index",
                "1",
            ];
            all.extend_from_slice(extra);
            RunPlan::from_cli(Cli::try_parse_from(all).expect("clap accepts the flags"))
        };
        match clients(&[
            "-o",
            "tpcc-load",
            "--warehouses",
            "6",
            "--warehouse-range",
            "1..2",
        ]) {
            Err(Error::Usage(m)) => assert!(m.contains("both split tpcc-load"), "{m}"),
            other => panic!("{other:?}"),
        }
        match clients(&["-o", "tpcc", "--warehouses", "2"]) {
            Err(Error::Usage(m)) => assert!(m.contains("give at least 3 warehouses"), "{m}"),
            other => panic!("{other:?}"),
        }
        // Without --seed the clients would load different data and draw
        // different NURand constants.
        for op in ["tpcc", "tpcc-load"] {
            match clients(&["-o", op, "--warehouses", "7"]) {
                Err(Error::Usage(m)) => assert!(m.contains("give --seed N"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        // The default under --clients: this client's share of 1..W.
        let p = clients(&["-o", "tpcc", "--warehouses", "7", "--seed", "1"]).unwrap();
        assert_eq!(
            p.workload.family::<TpccSettings>().homes.to_string(),
            "4..5"
        );
        assert!(!p.workload.family::<TpccSettings>().partial);
        // A range given wins, and the load of all clients splits 1..W.
        let p = clients(&[
            "-o",
            "tpcc",
            "--warehouses",
            "7",
            "--warehouse-range",
            "6..7",
            "--seed",
            "1",
        ])
        .unwrap();
        assert_eq!(
            p.workload.family::<TpccSettings>().homes.to_string(),
            "6..7"
        );
        assert!(clients(&["-o", "tpcc-load", "--warehouses", "2", "--seed", "1"]).is_ok());
        // The run's seed, not the client's, makes the data and constants.
        let p = clients(&["-o", "tpcc", "--warehouses", "7", "--seed", "5"]).unwrap();
        assert_eq!(p.workload.family::<TpccSettings>().seed, 5);
        assert_ne!(p.workload.seed, 5);
        // Fewer terminals than home warehouses: some drive none.
        let p = plan(&["-o", "tpcc", "--warehouses", "4", "-t", "3"]).unwrap();
        let w = p.warnings().join("\n");
        assert!(
            w.contains("3 terminals for the 4 home warehouses 1..4: 1 of them get no terminal"),
            "{w}"
        );
        let p = plan(&["-o", "tpcc", "--warehouses", "4", "-t", "4"]).unwrap();
        assert!(!p.warnings().join("\n").contains("terminals"));
        // --all-warehouses: the few terminals reach every warehouse.
        let p = plan(&[
            "-o",
            "tpcc",
            "--warehouses",
            "4",
            "--terminals",
            "2",
            "-t",
            "2",
            "--all-warehouses",
        ])
        .unwrap();
        assert!(!p.warnings().join("\n").contains("terminals"));
        // Fewer terminals than connections, or more than ten a warehouse
        // with the waits.
        let p = plan(&["-o", "tpcc", "--terminals", "2", "-t", "4"]).unwrap();
        let w = p.warnings().join("\n");
        assert!(
            w.contains("2 terminals over 4 connections (-t): 2 connections stay idle"),
            "{w}"
        );
        let p = plan(&["-o", "tpcc", "--tpcc-wait", "--terminals", "11"]).unwrap();
        let w = p.warnings().join("\n");
        assert!(
            w.contains("more than the specification's 10 per warehouse"),
            "{w}"
        );
        // The default: ten per home warehouse with the waits, else one
        // per connection.
        let terminals = |args: &[&str]| {
            let p = plan(args).unwrap();
            p.workload
                .family::<TpccSettings>()
                .terminal_count(p.workload.threads)
        };
        assert_eq!(
            terminals(&["-o", "tpcc", "--warehouses", "7", "--tpcc-wait", "-t", "3"]),
            70
        );
        assert_eq!(
            terminals(&["-o", "tpcc", "--warehouses", "7", "-t", "3"]),
            3
        );
        assert_eq!(
            terminals(&["-o", "tpcc", "--terminals", "500", "-t", "3"]),
            500
        );
        let e = usage_message(&["-o", "tpcc", "--terminals", "20000000"]);
        assert!(
            e.contains("--terminals 20000000 is more than 10000000"),
            "{e}"
        );
        // The scale of the waits needs the waits, and a factor in (0, 100].
        let refused = |args: &[&str]| {
            let mut all = vec!["ysql-bench", "-o", "tpcc"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all).unwrap_err().to_string()
        };
        assert!(refused(&["--tpcc-wait-scale", "0.1"]).contains("--tpcc-wait"));
        assert!(refused(&["--tpcc-wait", "--tpcc-wait-scale", "0"]).contains("above 0"));
        assert!(refused(&["--tpcc-wait", "--tpcc-wait-scale", "x"]).contains("not a number"));
        let p = plan(&["-o", "tpcc", "--tpcc-wait", "--tpcc-wait-scale", "0.01"]).unwrap();
        assert_eq!(p.workload.family::<TpccSettings>().wait_scale, 0.01);
        let p = plan(&["-o", "select", "--terminals", "5", "--check-sample", "3"]).unwrap();
        let w = p.warnings().join("\n");
        assert!(w.contains("--terminals applies to tpcc"), "{w}");
        assert!(
            w.contains("--check-sample applies to tpcc and tpcc-check"),
            "{w}"
        );
        let p = plan(&["-o", "tpcc-check", "--check-sample", "3"]).unwrap();
        assert!(!p.warnings().join("\n").contains("--check-sample"));
        let p = plan(&["-o", "select", "--tpcc-wait", "--warehouse-range", "1..1"]).unwrap();
        let w = p.warnings().join("\n");
        assert!(w.contains("--tpcc-wait applies to tpcc"), "{w}");
        assert!(
            w.contains("--warehouse-range applies to tpcc and tpcc-load"),
            "{w}"
        );
    }

    #[test]
    fn too_many_warehouses_are_refused() {
        let e = usage_message(&["-o", "tpcc-load", "--warehouses", "2000000"]);
        assert!(
            e.contains("--warehouses 2000000 is more than 1000000"),
            "{e}"
        );
    }
}
