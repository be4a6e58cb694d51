//! The `ysql-bench` binary: parse, validate, run, map the outcome to an
//! exit code. Everything else lives in the library.
//!
//! The first Ctrl-C or SIGTERM asks the run to stop: workers finish their
//! unit in flight (for at most a few seconds), the partial summary and the
//! reports are written, and the exit code is 130. A second one exits at
//! once, after stopping any sandbox server.

use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};
use ysql_bench::cli::{Cli, Command};
use ysql_bench::config::RunPlan;
use ysql_bench::db::sandbox;
use ysql_bench::error::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use ysql_bench::{Control, run_with};

fn main() -> ExitCode {
    let cli = match ysql_bench::cli::parse_command_line::<Cli>() {
        Ok(c) => c,
        Err(code) => return ExitCode::from(code as u8),
    };
    if let Some(
        command @ (Command::Merge { .. } | Command::Show { .. } | Command::Compare { .. }),
    ) = &cli.command
    {
        let code = ysql_bench::report::saved::run_command(command, &mut std::io::stdout().lock());
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
            Ok(report) if report.succeeded() => EXIT_OK,
            Ok(_) => EXIT_FAILED,
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

/// Turns the first SIGINT/SIGTERM into a stop, the second into an exit.
fn watch_signals(control: Control) -> std::io::Result<()> {
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            count += 1;
            if count == 1 {
                ysql_bench::say!(
                    "interrupted: finishing the units in flight and writing the summary (press Ctrl-C again to quit at once)"
                );
                control.interrupt();
            } else {
                ysql_bench::say!("interrupted again: quitting");
                sandbox::stop_all_now();
                std::process::exit(EXIT_INTERRUPTED);
            }
        }
    });
    Ok(())
}
