//! The `ysql-bench` binary: parse, validate, run, map the outcome to an
//! exit code. Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use ysql_bench::cli::Cli;
use ysql_bench::config::RunPlan;
use ysql_bench::error::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let plan = match RunPlan::from_cli(cli) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILED as u8);
        }
    };
    let code = runtime.block_on(async {
        let mut stdout = std::io::stdout();
        tokio::select! {
            r = ysql_bench::run(plan, &mut stdout) => match r {
                Ok(report) if report.succeeded() => EXIT_OK,
                Ok(_) => EXIT_FAILED,
                Err(e) => {
                    eprintln!("error: {e}");
                    e.exit_code()
                }
            },
            _ = tokio::signal::ctrl_c() => {
                eprintln!("interrupted");
                EXIT_INTERRUPTED
            }
        }
    });
    // Workers still in flight after an interrupt are not waited for.
    runtime.shutdown_background();
    ExitCode::from(code as u8)
}

fn fail(e: &ysql_bench::Error) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(e.exit_code() as u8)
}
