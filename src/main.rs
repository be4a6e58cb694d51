//! The `ysql-bench` binary: parse, validate, run, map the outcome to an
//! exit code. Everything else lives in the library.
//!
//! The first Ctrl-C or SIGTERM asks the run to stop: workers finish their
//! unit in flight (for at most a few seconds), the partial summary and the
//! reports are written, and the exit code is 130. A second Ctrl-C, a
//! second or more after the first signal, exits at once, after stopping
//! any sandbox server; a repeat sooner than that, or another SIGTERM, does
//! not (see [`signals`] for why).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use tokio::signal::unix::{SignalKind, signal};
use ysql_bench::cli::{Cli, Command};
use ysql_bench::config::RunPlan;
use ysql_bench::db::sandbox;
use ysql_bench::error::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_SLO};
use ysql_bench::signals::{self, Answer, Signal, Signals};
use ysql_bench::{Control, run_with};

/// The longest a quit at once waits for a report file being written.
const QUIT_WAIT: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    let mut cli = match ysql_bench::cli::parse_command_line::<Cli>(ysql_bench::cli::usage_hint) {
        Ok(c) => c,
        Err(code) => return ExitCode::from(code as u8),
    };
    if let Some(
        command @ (Command::Merge { .. }
        | Command::Show { .. }
        | Command::Report { .. }
        | Command::Compare { .. }),
    ) = &cli.command
    {
        let code = ysql_bench::app::saved::run_command(command, &mut std::io::stdout().lock());
        return ExitCode::from(code as u8);
    }
    if let Some(command) = &cli.command {
        return match ysql_bench::generate::write(command, &mut std::io::stdout().lock()) {
            Ok(()) => ExitCode::from(EXIT_OK as u8),
            // A closed pipe (`| head`) is the reader's choice, not a failure.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(EXIT_OK as u8),
            Err(e) => {
                ysql_bench::say!("error: cannot write to stdout: {e}");
                ExitCode::from(EXIT_FAILED as u8)
            }
        };
    }
    ysql_bench::output::set_quiet(cli.quiet);
    cli.command_line = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let plan = match RunPlan::from_cli(cli) {
        Ok(p) => p,
        Err(e) => {
            ysql_bench::say!("error: {e}");
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            ysql_bench::say!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILED as u8);
        }
    };
    let code = runtime.block_on(async {
        let control = Control::default();
        if let Err(e) = watch_signals(control.clone()) {
            ysql_bench::say!("warning: cannot watch for Ctrl-C: {e}");
        }
        let mut stdout = std::io::stdout();
        match run_with(plan, &mut stdout, control).await {
            Ok(report) if report.interrupted => EXIT_INTERRUPTED,
            Ok(report) if !report.succeeded() => EXIT_FAILED,
            Ok(report) if report.slo_missed() => EXIT_SLO,
            Ok(_) => EXIT_OK,
            Err(e) => {
                ysql_bench::say!("error: {e}");
                e.exit_code()
            }
        }
    });
    // Workers abandoned after the stop grace are not waited for.
    runtime.shutdown_background();
    ExitCode::from(code as u8)
}

/// Answers SIGINT and SIGTERM as [`signals`] says: the first stops the
/// run with every report written, a repeat of it or a later SIGTERM
/// changes nothing, a later Ctrl-C quits at once.
fn watch_signals(control: Control) -> std::io::Result<()> {
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        let mut seen = Signals::default();
        loop {
            let got = tokio::select! {
                _ = int.recv() => Signal::Interrupt,
                _ = term.recv() => Signal::Terminate,
            };
            match seen.answer(got, Instant::now()) {
                Answer::Stop => {
                    ysql_bench::say!("{}", signals::stopping_line(got, control.has_started()));
                    control.interrupt();
                }
                Answer::Repeat => {}
                Answer::StillStopping => ysql_bench::say!(
                    "{}",
                    signals::still_stopping_line(got, control.has_started())
                ),
                Answer::Quit => {
                    ysql_bench::say!(
                        "interrupted again: quitting without the summary and the reports not yet written"
                    );
                    // A report file being written is finished first, so
                    // that none is left half written.
                    ysql_bench::report::hold_writes(QUIT_WAIT);
                    sandbox::stop_all_now();
                    std::process::exit(EXIT_INTERRUPTED);
                }
            }
        }
    });
    Ok(())
}
