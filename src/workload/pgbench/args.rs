//! pgbench's flags: the scripts to run (`--script`, `--builtin`, which
//! imply `-o script`), their variables (`-D`) and the scale (`-s`), which
//! also sizes `pgbench-init`.

use clap::{ArgAction, Args};

use super::init::{self, ACCOUNTS_PER_BRANCH};
use super::script::{self, ScriptSettings};
use crate::error::{Error, Result};
use crate::workload::kit::args::{WORKLOAD, parse_positive};
use crate::workload::{FamilyArgs, FamilySettings, RunContext, Spec, Unread};

/// The flags that make a run without `-o` (it is then `-o script`), as
/// clap knows them: the command line's `-o` is required unless one is
/// given.
pub const IMPLY_OPERATIONS: [&str; 2] = ["script", "builtin"];

/// The pgbench flags of the command line.
#[derive(Args, Debug, Clone)]
pub struct PgbenchArgs {
    /// A pgbench script to run, FILE[@WEIGHT] (pgbench -f); repeatable; implies -o script.
    ///
    /// Each unit (transaction) runs one script, drawn by weight (default 1); each script is
    /// reported as a transaction type of its own. pgbench's script language: SQL commands,
    /// :variables, \set with pgbench's expressions, \sleep, \if/\elif/\else/\endif,
    /// \gset and \aset. See the README's section on pgbench scripts.
    #[arg(long = "script", value_name = "FILE[@WEIGHT]", action = ArgAction::Append, help_heading = WORKLOAD)]
    pub script: Vec<String>,

    /// One of pgbench's built-in scripts, NAME[@WEIGHT] (pgbench -b): tpcb-like, simple-update, select-only; implies -o script.
    ///
    /// They need pgbench's tables (-o pgbench-init -s SCALE, or pgbench -i); :scale is read from
    /// pgbench_branches, as pgbench does. `--builtin list` lists them.
    #[arg(long = "builtin", value_name = "NAME[@WEIGHT]", action = ArgAction::Append, help_heading = WORKLOAD)]
    pub builtin: Vec<String>,

    /// A variable of the scripts, NAME=VALUE (pgbench -D); repeatable.
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE", action = ArgAction::Append, value_parser = parse_define, help_heading = WORKLOAD)]
    pub define: Vec<(String, String)>,

    /// pgbench's scale factor: -o pgbench-init loads SCALE × 100000 accounts; :scale of custom scripts (default 1).
    #[arg(short = 's', long = "scale", value_name = "SCALE", value_parser = parse_positive::<u64>, help_heading = WORKLOAD)]
    pub scale: Option<u64>,
}

/// Whether `name` begins the name of a built-in script (or is a start of
/// `list`), as pgbench's `-b NAME` takes it: the command line then hints
/// that `-b` is `--batch-size` here, and the script `--builtin`
/// ([`super::hints`]).
pub fn names_a_builtin(name: &str) -> bool {
    !name.is_empty()
        && script::BUILTINS
            .iter()
            .map(|b| b.0)
            .chain(["list"])
            .any(|b| b.starts_with(name))
}

/// `-D NAME=VALUE`: the name as given, the value as text.
fn parse_define(s: &str) -> std::result::Result<(String, String), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=VALUE: write e.g. -D scale=10"))?;
    if !script::valid_name(name) {
        return Err(format!(
            "'{name}' is not a variable name: use letters, digits and _, not starting with a digit (e.g. -D delta=5)"
        ));
    }
    if value.is_empty() {
        // As pgbench: an empty text is no number, boolean or NULL, and a
        // script reading it could only fail.
        return Err(format!(
            "'{s}' gives {name} no value: write one after the = (e.g. -D {name}=5)"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

impl FamilyArgs for PgbenchArgs {
    /// `-o script` implied by `--script` or `--builtin` when `-o` is not
    /// given; scripts given without `-o script` in the list are refused,
    /// as a script that would not run.
    fn operations(&self, given: Vec<&'static Spec>) -> Result<Vec<&'static Spec>> {
        let spec = &script::SPEC;
        let scripts = !self.script.is_empty() || !self.builtin.is_empty();
        if given.is_empty() && scripts {
            return Ok(vec![spec]);
        }
        if scripts && !given.contains(&spec) {
            let list: Vec<&str> = given.iter().map(|o| o.name).collect();
            return Err(Error::usage(format!(
                "--script and --builtin run with -o script, which -o {} leaves out: add it, e.g. -o {},script",
                list.join(","),
                list.join(",")
            )));
        }
        Ok(given)
    }

    /// The rows of a run with `-o pgbench-init`: its accounts, scale ×
    /// 100000, unless `-r` says the same.
    fn rows(&self, operations: &[&'static Spec], rows: Option<u64>) -> Result<Option<u64>> {
        if !operations.contains(&&init::SPEC) {
            return Ok(rows);
        }
        let scale = self.scale.unwrap_or(1);
        let accounts = scale.saturating_mul(ACCOUNTS_PER_BRANCH);
        match rows {
            Some(r) if r != accounts => Err(Error::usage(format!(
                "-r {r} and pgbench-init's -s {scale} ({accounts} accounts) disagree: leave -r out, pgbench-init loads -s × 100000 accounts"
            ))),
            _ => Ok(Some(accounts)),
        }
    }

    fn settings(&self, _run: &RunContext<'_>, families: &mut FamilySettings) -> Result<()> {
        families.insert(ScriptSettings {
            scripts: self.script.clone(),
            builtins: self.builtin.clone(),
            defines: self.define.clone(),
            scale: self.scale,
        });
        Ok(())
    }

    fn unread(&self, operations: &[&'static Spec]) -> Vec<Unread> {
        let mut unread = Vec::new();
        let scripts = operations.contains(&&script::SPEC);
        if !self.define.is_empty() && !scripts {
            unread.push(Unread {
                flag: "-D",
                applies: "the scripts of -o script (--script, --builtin)",
            });
        }
        if self.scale.is_some() && !scripts && !operations.contains(&&init::SPEC) {
            unread.push(Unread {
                flag: "-s",
                applies: "pgbench-init and the scripts of -o script",
            });
        }
        unread
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_define_needs_a_name_and_a_value_as_pgbench_does() {
        assert_eq!(
            parse_define("x= 1"),
            Ok(("x".to_string(), " 1".to_string()))
        );
        assert_eq!(parse_define("x=a=b").unwrap().1, "a=b");
        // pgbench: invalid variable definition.
        assert!(parse_define("x=").unwrap_err().contains("no value"));
        assert!(
            parse_define("=1")
                .unwrap_err()
                .contains("not a variable name")
        );
        assert!(parse_define("x").unwrap_err().contains("NAME=VALUE"));
        assert!(
            parse_define("1a=1")
                .unwrap_err()
                .contains("not starting with a digit")
        );
        assert!(parse_define("é1=1").is_ok());
    }
}
