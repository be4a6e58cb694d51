//! What the clients of a run of several (`--clients`) must give alike,
//! and what is each one's own.
//!
//! Each client brings its own threads (`-t`, `--pipeline`), its own
//! `--client-rate` and `--client-index`, the directory of its copy-file
//! CSVs, its connection and node flags, its reports and its barrier
//! timeout. Every other flag must agree, or the clients would not run one
//! benchmark: the terms compared at the barrier are read from the parsed
//! command line itself (its `Debug` form, field by field, the flattened
//! flag groups of the workload families included) and named as the
//! command line spells the flag, so that a flag added later is compared
//! without being listed here. A flag that is a client's own goes under one
//! of [`OWN_HEADINGS`] or into [`OWN`]; otherwise clients that differ in
//! it are refused, which is the safe side.

use clap::CommandFactory;

use crate::cli::Cli;

/// Help headings whose flags are each client's own.
const OWN_HEADINGS: &[&str] = &["Connection", "Several nodes", "Reports", "Several clients"];

/// Flags (clap ids: the field names) that are each client's own, or that
/// are compared in the plan's own words ([`terms`] adds them).
const OWN: &[&str] = &[
    "threads",
    "pipeline",
    "csv_dir",
    "operations",
    "rows",
    "command",
];

/// The flags every client of the run must give alike, each as the user
/// writes it: (`-r`, `6000`), (`--drop`, `true`), (`--seed`, `none`).
/// `rows` is the number the run loads or reads (a default and the same
/// number given count as one).
pub fn terms(cli: &Cli, rows: u64) -> Vec<(String, String)> {
    let ops: Vec<&str> = cli.operations.iter().map(|o| o.name).collect();
    let mut out = vec![
        ("-o".to_string(), ops.join(",")),
        ("-r".to_string(), rows.to_string()),
        ("--clients".to_string(), cli.clients.to_string()),
    ];
    let command = Cli::command();
    for (field, value) in leaves(&format!("{cli:#?}")) {
        if OWN.contains(&field.as_str()) {
            continue;
        }
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_id().as_str() == field)
        else {
            continue;
        };
        if arg
            .get_help_heading()
            .is_some_and(|h| OWN_HEADINGS.contains(&h))
        {
            continue;
        }
        let flag = match (arg.get_short(), arg.get_long()) {
            (Some(c), _) => format!("-{c}"),
            (None, Some(l)) => format!("--{l}"),
            (None, None) => continue,
        };
        out.push((flag, plain(&value)));
    }
    out
}

/// The leaf fields of a pretty `Debug` form (`{:#?}`): (field, value on
/// one line). A field whose value is a struct named `…Args` (a flattened
/// flag group) is entered; any other value is a leaf, however many lines
/// it spans.
fn leaves(debug: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = debug.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        i += 1;
        let Some((name, rest)) = line.trim_start().split_once(": ") else {
            continue;
        };
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            continue;
        }
        let opener = rest.trim_end().trim_end_matches(',');
        if opener.ends_with("Args {") {
            continue;
        }
        let mut value = opener.to_string();
        if opener.ends_with(['[', '(', '{']) {
            // A value over several lines ends at the closing line of the
            // same indentation.
            while i < lines.len() {
                let l = lines[i];
                i += 1;
                let l_indent = l.len() - l.trim_start().len();
                value.push_str(l.trim());
                if l_indent == indent {
                    break;
                }
            }
            value = value
                .trim_end_matches(',')
                .replace(",]", "]")
                .replace(",)", ")");
        }
        out.push((name.to_string(), value));
    }
    out
}

/// A `Debug` value as a user would write it: `Some(6000)` → `6000`,
/// `None` → `none`, `"x"` → `x`, `RoundRobin` → `round-robin`.
fn plain(value: &str) -> String {
    let mut v = value.trim();
    while let Some(inner) = v.strip_prefix("Some(").and_then(|r| r.strip_suffix(')')) {
        v = inner.trim();
    }
    if v == "None" {
        return "none".to_string();
    }
    if let Some(inner) = v.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return inner.to_string();
    }
    if v.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && v.chars().all(|c| c.is_ascii_alphanumeric())
    {
        let mut kebab = String::new();
        for (k, c) in v.chars().enumerate() {
            if c.is_ascii_uppercase() && k > 0 {
                kebab.push('-');
            }
            kebab.push(c.to_ascii_lowercase());
        }
        return kebab;
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn of(args: &[&str]) -> Vec<(String, String)> {
        let cli = Cli::parse_from(
            ["ysql-bench", "--clients", "2", "--client-index", "0"]
                .iter()
                .chain(args),
        );
        terms(&cli, cli.rows.unwrap_or(100_000))
    }

    fn differing(a: &[&str], b: &[&str]) -> Vec<String> {
        let (x, y) = (of(a), of(b));
        let mut flags: Vec<String> = x
            .iter()
            .filter(|t| !y.contains(t))
            .map(|t| t.0.clone())
            .collect();
        flags.extend(y.iter().filter(|t| !x.contains(t)).map(|t| t.0.clone()));
        flags.sort();
        flags.dedup();
        flags
    }

    #[test]
    fn what_is_a_clients_own_may_differ() {
        let base = ["-o", "select", "-r", "5000", "--time", "3s"];
        let mut own = base.to_vec();
        own.extend([
            "-t",
            "6",
            "--json",
            "/tmp/x.json",
            "-u",
            "host=elsewhere",
            "--pipeline",
            "4",
            "--barrier-timeout",
            "2m",
            "-q",
            "--csv-dir",
            "/var/tmp",
            // A client per region, each with its own zones.
            "--topology-keys",
            "aws.eu-west-1.eu-west-1a",
        ]);
        assert_eq!(differing(&base, &own), Vec::<String>::new());
    }

    #[test]
    fn what_must_agree_is_named_as_written() {
        let base = ["-o", "select", "-r", "5000", "--time", "3s"];
        assert_eq!(
            differing(&base, &["-o", "select", "-r", "6000", "--time", "3s"]),
            ["-r"]
        );
        assert_eq!(
            differing(&base, &["-o", "select", "-r", "5000", "--time", "4s"]),
            ["--time"]
        );
        assert_eq!(
            differing(
                &base,
                &["-o", "select", "-r", "5000", "--time", "3s", "--seed", "7"]
            ),
            ["--seed"]
        );
        // A family's flag, from its flattened group.
        assert_eq!(
            differing(
                &base,
                &[
                    "-o",
                    "select",
                    "-r",
                    "5000",
                    "--time",
                    "3s",
                    "--ycsb-field-count",
                    "3"
                ]
            ),
            ["--ycsb-field-count"]
        );
        let t = of(&[
            "-o",
            "select",
            "--key-distribution",
            "zipfian",
            "--rate",
            "100",
        ]);
        assert!(
            t.contains(&("--key-distribution".into(), "zipfian".into())),
            "{t:?}"
        );
        assert!(t.contains(&("--rate".into(), "100.0".into())), "{t:?}");
        assert!(t.contains(&("--seed".into(), "none".into())), "{t:?}");
        assert!(t.contains(&("-o".into(), "select".into())), "{t:?}");
        // -r given or defaulted to the same number is one term.
        assert_eq!(
            differing(&["-o", "select"], &["-o", "select", "-r", "100000"]),
            Vec::<String>::new()
        );
    }
}
