//! What goes to stderr, and when: `--quiet`, and whether a progress bar
//! may be drawn.
//!
//! stderr carries two kinds of lines. Lines that start with `>>` say what
//! the run is doing (connecting, creating the table, writing a file): a
//! script that wants only the summary on stdout turns them off with
//! `--quiet`. Every other line is a warning, an error or a progress line
//! asked for with `-P`, and is always shown. The distinction is made here,
//! once, from the line itself, so that every `say!` in the program follows
//! it without knowing about `--quiet`.
//!
//! The setting is process-wide because stderr is: `main` sets it once,
//! before the run starts.

/// `eprintln!` that cannot panic: progress, warnings and errors go to
/// stderr, and when stderr is a closed pipe (`2>&1 | head`) they are
/// dropped rather than ending the run with a panic, so that the run still
/// finishes, cleans up its sandbox and writes its reports. Lines starting
/// `>>` say what the run is doing and are left out under `--quiet`
/// (this module).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        $crate::output::say(::std::format_args!($($arg)*));
    }};
}

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// The prefix of the lines `--quiet` leaves out.
pub const CHATTER_PREFIX: &str = ">>";

static QUIET: AtomicBool = AtomicBool::new(false);

/// Turns the `>>` lines and the progress bar off (`--quiet`) or on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Whether `line` is one that `--quiet` leaves out.
pub fn is_chatter(line: &str) -> bool {
    line.starts_with(CHATTER_PREFIX)
}

/// Writes one line to stderr unless `--quiet` leaves it out. A closed
/// stderr (`2>&1 | head`) drops the line rather than ending the run.
pub fn say(args: std::fmt::Arguments<'_>) {
    let line = args.to_string();
    if quiet() && is_chatter(&line) {
        return;
    }
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Whether a load may draw its progress bar on stderr now.
pub fn progress_bar_allowed() -> bool {
    bar_wanted(
        std::io::stderr().is_terminal(),
        quiet(),
        std::env::var_os("TERM").as_deref(),
    )
}

/// The bar redraws itself with cursor controls, so it is drawn only on a
/// terminal that understands them (not a file or pipe, not `TERM=dumb`)
/// and not under `--quiet`. It has no colour, so `NO_COLOR` leaves it as
/// it is; the help's colours follow `NO_COLOR` through clap.
pub fn bar_wanted(stderr_is_terminal: bool, quiet: bool, term: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && !quiet && term.is_none_or(|t| t != "dumb")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn only_the_doing_lines_are_chatter() {
        assert!(is_chatter(">> connect host=h port=5432 user=u dbname=u"));
        assert!(!is_chatter("warning: --tablets applies to YugabyteDB only"));
        assert!(!is_chatter("error: copy-mem: cannot truncate"));
        assert!(!is_chatter("progress: select 5.0 s, 1234.0 queries/s"));
    }

    #[test]
    fn the_bar_needs_a_terminal_that_can_redraw_and_no_quiet() {
        let xterm = Some(OsStr::new("xterm-256color"));
        assert!(bar_wanted(true, false, xterm));
        assert!(bar_wanted(true, false, None));
        assert!(!bar_wanted(false, false, xterm), "a file or a pipe");
        assert!(!bar_wanted(true, true, xterm), "--quiet");
        assert!(!bar_wanted(true, false, Some(OsStr::new("dumb"))));
    }
}
