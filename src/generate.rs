//! `ysql-bench completions SHELL` and `ysql-bench man`: files made from the
//! clap definitions in [`crate::cli`], so that they can never disagree
//! with the flags the binary accepts.
//!
//! Both are written to stdout for the user to put where their shell or
//! `man` looks (the README gives the commands).
//!
//! `-o` completes the workloads' names in every shell (its parser lists
//! them as possible values); in bash, each item of the comma list
//! completes, which clap alone does not do.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::{Cli, Command};

/// The program's name as the shell and `man` know it.
const BIN: &str = "ysql-bench";

/// Writes what `command` asks for to `out`.
pub fn write(command: &Command, out: &mut dyn Write) -> std::io::Result<()> {
    let mut cli = Cli::command();
    match command {
        Command::Completions { shell } => {
            // clap_complete panics when its writer fails (a closed pipe):
            // it writes into memory, and the error of the real write is
            // returned.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cli, BIN, &mut script);
            if *shell == clap_complete::Shell::Bash {
                let text = bash_subcommand_states(&String::from_utf8_lossy(&script));
                script = bash_operation_lists(&text).into_bytes();
            }
            out.write_all(&script)
        }
        Command::Man => clap_mangen::Man::new(cli).render(out),
        // Not generated files: main hands these to `app::saved`.
        Command::Merge { .. }
        | Command::Show { .. }
        | Command::Report { .. }
        | Command::Compare { .. } => Err(std::io::Error::other(
            "merge, show and compare read reports; they generate nothing",
        )),
    }
}

/// bash: clap's script names the state of a subcommand in two ways for a
/// program whose name has a hyphen (clap issue 6421): its loop sets
/// `ysql__bench__subcmd__show`, its case arms test
/// `ysql__subcmd__bench__subcmd__show`, so no flag of `show`, `compare` or
/// `merge` ever completed. The arms are spelt as the loop spells them.
fn bash_subcommand_states(script: &str) -> String {
    script.replace("ysql__subcmd__bench__subcmd__", "ysql__bench__subcmd__")
}

/// bash: `-o` takes a comma separated list, and clap completes the whole
/// word against the names, so nothing completes after `copy-mem,`. Each
/// completion of the names becomes one of the word's last item, with the
/// items before it kept in front (bash does not split words at commas).
/// The rest of the script is clap's, unchanged.
fn bash_operation_lists(script: &str) -> String {
    let names = crate::workload::names().join(" ");
    let whole = format!(r#"$(compgen -W "{names}" -- "${{cur}}")"#);
    let last_item =
        format!(r#"$(compgen -P "${{cur%"${{cur##*,}}"}}" -W "{names}" -- "${{cur##*,}}")"#);
    script.replace(&whole, &last_item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn made(args: &[&str]) -> String {
        let cli = Cli::try_parse_from(args).expect("parses");
        let mut out = Vec::new();
        write(&cli.command.expect("a subcommand"), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn completions_know_every_flag_for_each_shell() {
        for shell in ["bash", "zsh", "fish"] {
            let text = made(&["ysql-bench", "completions", shell]);
            // fish writes `-l operations`, the others `--operations`.
            for flag in ["operations", "latency-limit", "quiet", "sandbox", "man"] {
                assert!(text.contains(flag), "{shell}: {flag} missing");
            }
        }
        // A shell clap does not know is one line of usage error.
        assert!(Cli::try_parse_from(["ysql-bench", "completions", "tcsh"]).is_err());
    }

    #[test]
    fn the_man_page_is_roff_with_the_flags_and_the_version() {
        let text = made(&["ysql-bench", "man"]);
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{text}");
        assert!(text.contains(".TH ysql-bench 1"), "{text}");
        assert!(text.contains("latency\\-limit"), "{text}");
        assert!(text.contains(crate::cli::VERSION), "{text}");
    }
}
