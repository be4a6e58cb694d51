//! What to write instead of a habit of pgbench's on ysql-bench's command
//! line: its flags this tool lacks or spells otherwise (`-T 10`, `-c 4`,
//! `-S`), and its `-f FILE`, `-b NAME` and `-r`, which here keep the
//! meanings the original ysql-bench gave them. The command line meets
//! these as clap's errors and asks the registry ([`crate::workload::registry::usage_hint`])
//! for a hint; the knowledge is pgbench's, so it lives with its family.

use super::args::names_a_builtin;
use crate::workload::Misuse;

/// pgbench's flags that ysql-bench does not have, and what to write
/// instead. Those with the same meaning here (-C, -D, -P, -s, --rate,
/// --time, --transactions, --latency-limit, --builtin, --define,
/// --max-tries) need no hint; -t, -r, -f, -b, -n, -h and -p mean what the
/// original ysql-bench (or clap) made them mean, so the hints of -f, -b
/// and -r come with their values' errors and that of -p with a port taken
/// for a subcommand.
const FLAGS: &[(&[&str], &str)] = &[
    (
        &["-T"],
        "pgbench's -T SECONDS is --time here (e.g. --time 10s; a plain number is seconds)",
    ),
    (
        &["-c", "--client"],
        "pgbench's -c CLIENTS is -t/--threads here (workers, each on its own connection); pgbench's -t (transactions per client) is --transactions here",
    ),
    (
        &["-j", "--jobs"],
        "pgbench's -j THREADS needs no equivalent: the workers are spread over as many OS threads as there are cores; leave it out",
    ),
    (&["-R"], "pgbench's -R RATE is --rate here"),
    (&["-L"], "pgbench's -L MS is --latency-limit here"),
    (
        &["-S", "--select-only"],
        "pgbench's -S is --builtin select-only here",
    ),
    (
        &["-N", "--skip-some-updates"],
        "pgbench's -N is --builtin simple-update here",
    ),
    (
        &["-i", "--initialize"],
        "pgbench's -i is -o pgbench-init here (with -s SCALE)",
    ),
    (
        &["--file"],
        "pgbench's -f/--file is --script FILE here (-f is --fields-length, as in the original ysql-bench)",
    ),
    (
        &["-l", "--log"],
        "pgbench's -l is --latency-log FILE here (one CSV row per unit)",
    ),
    (
        &["--progress"],
        "pgbench's --progress is -P/--report-interval here",
    ),
    (&["--connect"], "pgbench's --connect is -C/--reconnect here"),
    (
        &["--report-per-command"],
        "pgbench's -r/--report-per-command is --per-statement here (-r is --rows, as in the original ysql-bench)",
    ),
    (
        &["--random-seed"],
        "pgbench's --random-seed N is --seed N here",
    ),
    (
        &["--no-vacuum"],
        "pgbench's -n/--no-vacuum needs no equivalent: a ysql-bench run vacuums nothing (and -n is --nontransactional here)",
    ),
    (
        &["-v", "--vacuum-all"],
        "pgbench's -v/--vacuum-all has no equivalent: a ysql-bench run vacuums nothing",
    ),
    (
        &["-d", "--debug"],
        "pgbench's -d is --debug, which has no equivalent; a database name goes in -u 'dbname=NAME'",
    ),
    (
        &["-U", "--username"],
        "the user goes in -u, e.g. -u 'host=HOST port=PORT user=NAME dbname=DB'",
    ),
    (
        &["--host", "--port", "--dbname"],
        "where to connect goes in -u, e.g. -u 'host=HOST port=PORT user=NAME dbname=DB'",
    ),
];

/// The hint for `misuse`, if it is a habit of pgbench's.
pub fn hint(misuse: Misuse) -> Option<String> {
    let not_a_number = |v: &str| v.trim().replace('_', "").parse::<u64>().is_err();
    match misuse {
        Misuse::Unknown(flag) => FLAGS
            .iter()
            .find(|(names, _)| names.contains(&flag))
            .map(|(_, hint)| hint.to_string()),
        // `-r` alone: pgbench's per-statement report.
        Misuse::Invalid("--rows") => Some(
            "-r is --rows here (as in the original ysql-bench); pgbench's -r (latency per statement) is --per-statement"
                .to_string(),
        ),
        Misuse::Invalid(_) => None,
        Misuse::Rejected {
            flag: "--fields-length",
            value,
        } if not_a_number(value) => {
            let file = value.split('@').next().unwrap_or(value);
            let looks_like_file = file.ends_with(".sql")
                || file.contains('/')
                || std::path::Path::new(file).is_file();
            looks_like_file.then(|| {
                format!(
                    "-f is --fields-length (as in the original ysql-bench); for a pgbench script use --script {value}"
                )
            })
        }
        Misuse::Rejected {
            flag: "--batch-size",
            value,
        } if not_a_number(value) => {
            let name = value.split('@').next().unwrap_or(value);
            names_a_builtin(name).then(|| {
                format!(
                    "-b is --batch-size (as in the original ysql-bench); for pgbench's built-in script use --builtin {value}"
                )
            })
        }
        Misuse::Rejected { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_habit_gets_its_hint_and_a_plain_mistake_none() {
        assert_eq!(
            hint(Misuse::Unknown("-S")).as_deref(),
            Some("pgbench's -S is --builtin select-only here")
        );
        assert_eq!(hint(Misuse::Unknown("--nonsense")), None);
        assert!(hint(Misuse::Invalid("--rows")).is_some());
        assert_eq!(hint(Misuse::Invalid("--time")), None);
        let rejected = |flag, value| hint(Misuse::Rejected { flag, value });
        assert!(rejected("--fields-length", "bench.sql").is_some());
        assert_eq!(rejected("--fields-length", "word"), None);
        assert_eq!(rejected("--fields-length", "12"), None);
        assert!(rejected("--batch-size", "select-only").is_some());
        assert_eq!(rejected("--batch-size", "nonsense"), None);
    }
}
